"""The early check of a URL a user gives us to call later (an enrichment API, an MCP
server, an A2A agent's card): refused with a 400 naming the field and the guard's reason, so
a private or unresolvable address is caught when it is saved, not at the first call. The
guarded clients check again at connect time (kit/outbound.py); that is what keeps requests
off private addresses, this is the clear answer."""

from __future__ import annotations

from dutyline.api import errors
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, check_url, check_without_dns


async def refused(url: str, policy: OutboundPolicy) -> str:
    """'' when the policy lets `url` be called, else the guard's reason."""
    try:
        await check_url(url, policy)
    except OutboundBlocked as exc:
        return exc.reason
    return ""


async def check(url: str, policy: OutboundPolicy, *, field: str) -> None:
    """Raise InvalidParameter naming `field` when the policy refuses `url`."""
    reason = await refused(url, policy)
    if reason:
        raise errors.InvalidParameter(
            "Invalid parameter {field}: the address is refused ({detail})",
            field=field, detail=reason)


def check_static(url: str, policy: OutboundPolicy, *, field: str) -> None:
    """The same refusal from what the URL alone gives away (scheme, a literal or old-style
    IPv4 address, a loopback name), without a DNS lookup: for targets saved in bulk (the
    webhooks of an escalation rule) or whose name may only resolve where they are called."""
    try:
        check_without_dns(url, policy)
    except OutboundBlocked as exc:
        raise errors.InvalidParameter(
            "Invalid parameter {field}: the address is refused ({detail})",
            field=field, detail=exc.reason) from None
