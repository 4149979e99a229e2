"""Secrets of stored outbound targets: the two rules every target applies on update.

A stored outbound target is an address dutyline calls later with credentials the tenant
entered for it: the webhooks and chat robots of escalation rules and of schedules, monit data
sources, mapping APIs, MCP servers, A2A agents. For all of them:

- a secret was entered for one origin (kit/origin.py): an update that moves the URL to
  another origin drops the stored secrets unless the same update supplies them anew, so
  someone who may edit a target but never saw its secret cannot send it to a host of theirs;
- reads show secrets masked, and the mask sent back means "keep the stored one", never
  "store these asterisks". A mask with nothing to keep (none stored, or dropped by a move)
  is refused, naming the field.

The address itself may carry credentials (`https://user:pass@host/`, `?access_token=`,
`?key=`: a chat robot's webhook is often authenticated by nothing else). Those are secrets
too, under the same two rules: reads and the audit log show the URL with them masked
(kit/url_secrets.py), and an update that sends the masked URL back keeps them only on the
same origin (`url_to_store`).

The schemas mark the fields these rules cover: `OUTBOUND_URL` on the address a target is
called at, `OUTBOUND_SECRET` on a secret (a string, or a mapping whose values are secrets),
and `outbound_settings(...)` on a free-form settings object naming its URL and secret keys.
The marks are msgspec `Meta.extra` under the key `OUTBOUND_MARK`; a test walks every request
schema and fails on a URL or secret field that is neither marked nor known to be something
else, so a new target cannot miss these rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from dutyline.api import errors
from dutyline.kit.origin import same_origin
from dutyline.kit.url_secrets import has_mask, mask_url, restore_url

__all__ = ["mask_url"]  # what reads show of a stored target's URL

# What a read shows in place of a secret ("***" is the mapping APIs' form of it).
MASKS = frozenset({"******", "***"})
OUTBOUND_MARK = "outbound"
OUTBOUND_URL = msgspec.Meta(extra={OUTBOUND_MARK: "url"})
OUTBOUND_SECRET = msgspec.Meta(extra={OUTBOUND_MARK: "secret"})


def outbound_settings(*, url: str, secrets: tuple[str, ...]) -> msgspec.Meta:
    """The mark of a free-form settings object whose `url` key is an address and whose
    `secrets` keys are secrets (an escalation webhook's settings)."""
    return msgspec.Meta(extra={OUTBOUND_MARK: "settings", "url": url, "secrets": secrets})


def is_mask(value: object) -> bool:
    return isinstance(value, str) and value in MASKS


def _same(value: str) -> str:
    return value


def secret_to_store(given: str | None, stored: str, *, keep: bool, field: str,
                    seal: Callable[[str], str] = _same, blank_keeps: bool = False) -> str:
    """The value to store for one secret field ("" for none).

    `stored` is the value as stored (sealed or not, it is returned untouched); `keep` is
    whether the stored secrets may still be used (same target, same origin); `seal` turns a
    new value into its stored form. A mask keeps `stored` when it may, else is refused. A
    blank value keeps it too where the target's contract says so (`blank_keeps`: targets
    whose reads show a secret as blank), and clears it otherwise."""
    if is_mask(given):
        if keep and stored:
            return stored
        why = ("the address moved to another origin: send the secret in full" if stored
               and not keep else "there is no stored secret to keep")
        raise errors.invalid(field, f"is masked, but {why}")
    if not given:
        return stored if blank_keeps and keep else ""
    return seal(given)


def url_to_store(given: str, stored: str, *, keep: bool, field: str) -> str:
    """The URL to store for a target's address. Credentials masked in `given` (a URL sent
    back as it was read) are those of `stored`, when they may still be used: `keep` (the
    same target) and the same origin. Otherwise the mask is refused, naming the field."""
    if not has_mask(given):
        return given
    moved = bool(stored) and not same_origin(stored, given)
    restored = restore_url(given, stored) if keep and stored and not moved else None
    if restored is None:
        why = ("the address moved to another origin: send the secret in full" if moved
               else "there is no stored secret to keep")
        raise errors.invalid(field, f"is masked, but {why}")
    return restored


def headers_to_store(given: Mapping[str, str], stored: Mapping[str, str], *, keep: bool,
                     field: str) -> dict[str, str]:
    """Header values to store: each masked value keeps the stored header of that name
    (names compare case-insensitively, as HTTP's do)."""
    old = {k.strip().lower(): v for k, v in stored.items()}
    return {name: secret_to_store(value, old.get(name.strip().lower(), ""), keep=keep,
                                  field=f"{field}.{name}")
            for name, value in given.items()}
