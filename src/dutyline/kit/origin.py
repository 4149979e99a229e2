"""Whether a stored secret may follow a changed URL.

A credential (headers of an MCP server, the auth of an A2A agent, and later the secrets of
webhooks, chat robots and data sources) was entered for one origin: scheme, host and port.
Someone who may edit a target but never saw its secret could otherwise point the URL at a
host of their own and collect the secret on the next call. So when an update moves the URL
to another origin, the stored secret is dropped unless the same update supplies it anew;
a path change on the same origin keeps it. Every outbound target that stores a secret asks
`same_origin(old_url, new_url)` before reusing it."""

from __future__ import annotations

from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin_of(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in and the host lower
    case; None for something that is not an absolute URL with a host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if not scheme or not host:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS.get(scheme)


def same_origin(old_url: str, new_url: str) -> bool:
    """True when a secret entered for `old_url` may be sent to `new_url`. Anything that is
    not a comparable absolute URL counts as a different origin (fail closed)."""
    old, new = origin_of(old_url), origin_of(new_url)
    return old is not None and old == new
