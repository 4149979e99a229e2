"""Credentials carried inside a URL: the userinfo (`https://user:pass@host/`), query values
whose names say they are secret (`?access_token=`, `?key=`, `?token=`, `?secret=`, `?sig=`
...), and the path segments chat robots are addressed by (a Telegram bot token
`/bot<id>:<secret>/`, a Feishu or Lark robot's `/open-apis/bot/v2/hook/<token>`, a Slack
incoming webhook's `/services/T…/B…/<token>`, a Discord webhook's `/api/webhooks/<id>/<token>`).
A chat robot's webhook is often authenticated by nothing else, so such a URL is a secret of
its own.

`redact_url` (kit/outbound.py) drops or masks them for logs and delivery records. A stored
target's URL is shown masked instead (`mask_url`), in a form a client can send back
unchanged: `restore_url` puts the stored credentials back in place of each mask."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

MASK = "******"
# Names of query parameters whose values are secrets (a substring, case-insensitive).
SECRET_QUERY_WORDS = ("token", "key", "secret", "password", "sig", "auth", "code")
_SECRET = r"([A-Za-z0-9_:-]+|\*{6})"
# The secret path segments of stored URLs, each the group of its pattern (a mask included,
# so a read-back is recognised).
_PATH_SECRETS = (
    re.compile(r"(?<=/bot)(\d+:[A-Za-z0-9_-]+|\*{6})"),
    re.compile(r"(?<=/open-apis/bot/v2/hook/)" + _SECRET),
    re.compile(r"(?<=/services/)(T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+|\*{6})"),
    re.compile(r"(?<=/api/webhooks/)(\d+/[A-Za-z0-9_-]+|\*{6})"),
)


def mask_path(path: str) -> str:
    """The path with each secret segment masked."""
    for pattern in _PATH_SECRETS:
        path = pattern.sub(MASK, path)
    return path


def _restore_path(given: str, stored: str) -> str | None:
    """`given` with each masked segment taken from the same pattern's in `stored`."""
    for pattern in _PATH_SECRETS:
        masked = [m for m in pattern.finditer(given) if m.group(1) == MASK]
        if not masked:
            continue
        kept = [m.group(1) for m in pattern.finditer(stored) if m.group(1) != MASK]
        if len(kept) < len(masked):
            return None
        for m, value in zip(reversed(masked), reversed(kept[:len(masked)]), strict=True):
            given = given[:m.start(1)] + value + given[m.end(1):]
    return given


def secret_query_name(name: str) -> bool:
    lowered = name.lower()
    return any(w in lowered for w in SECRET_QUERY_WORDS)


def _split(url: str) -> SplitResult | None:
    try:
        return urlsplit(url)
    except ValueError:
        return None


def _pairs(query: str) -> list[tuple[str, str, str]]:
    """(name, "=" or "", value) of each `&`-separated pair, kept as written."""
    return [pair.partition("=") for pair in query.split("&")] if query else []


def _userinfo(parts: SplitResult) -> tuple[str, str]:
    """(userinfo, host[:port]) of the netloc; userinfo "" when there is none."""
    userinfo, at, host = parts.netloc.rpartition("@")
    return (userinfo, host) if at else ("", parts.netloc)


def mask_url(url: str) -> str:
    """`url` with each credential it carries replaced by the mask, the rest as written (a
    URL that does not parse is masked whole)."""
    parts = _split(url)
    if parts is None:
        return MASK if url else url
    userinfo, host = _userinfo(parts)
    netloc = f"{MASK}@{host}" if userinfo else host
    path = mask_path(parts.path)
    query = "&".join(
        f"{name}{eq}{MASK}" if eq and value and secret_query_name(name) else name + eq + value
        for name, eq, value in _pairs(parts.query))
    if (netloc, path, query) == (parts.netloc, parts.path, parts.query):
        return url  # nothing to mask: as written, not as urlunsplit would rebuild it
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def has_mask(url: str) -> bool:
    """Whether `url` carries a masked credential (is, at least in part, a read-back)."""
    parts = _split(url)
    if parts is None:
        return url == MASK
    return (_userinfo(parts)[0] == MASK
            or any(m.group(1) == MASK for p in _PATH_SECRETS for m in p.finditer(parts.path))
            or any(value == MASK for _, _, value in _pairs(parts.query)))


def restore_url(given: str, stored: str) -> str | None:
    """`given` with each masked credential replaced by the one in the same place of
    `stored` (the userinfo, the bot token, the value of the same query parameter: the n-th
    masked `key` takes the n-th stored `key`); None when `stored` has none to give. Whether
    the stored credentials may follow `given` at all (its origin) is the caller's rule."""
    new, old = _split(given), _split(stored)
    if new is None or old is None:
        return None
    userinfo, host = _userinfo(new)
    if userinfo == MASK:
        userinfo = _userinfo(old)[0]
        if not userinfo:
            return None
    path = _restore_path(new.path, old.path)
    if path is None:
        return None
    kept: dict[str, list[str]] = {}
    for name, eq, value in _pairs(old.query):
        if eq and value:
            kept.setdefault(name, []).append(value)
    pairs: list[str] = []
    for name, eq, value in _pairs(new.query):
        if value == MASK:
            values = kept.get(name)
            if not values:
                return None
            value = values.pop(0)
        pairs.append(name + eq + value)
    netloc = f"{userinfo}@{host}" if userinfo else host
    return urlunsplit((new.scheme, netloc, path, "&".join(pairs), new.fragment))
