"""The outbound-URL guard for aiohttp: the client deliveries go out through.

Deliveries are the one path where outbound requests come in thousands a minute, and there
aiohttp costs about a tenth of httpx's CPU per request (bench/http_clients.py, figures in
bench/README.md). The guard is the same as kit/outbound's, fitted to aiohttp's two public seams:

- a resolver (the only way aiohttp turns a host name into addresses) that resolves the name
  itself, checks *every* address and hands back only checked addresses, which are what the
  connector then connects to: a name that answers public for one lookup and loopback for the
  next (DNS rebinding) cannot get through, since nothing else resolves it;
- a client middleware, which aiohttp runs before each request and each redirect hop, for
  what needs no DNS: the scheme, literal addresses (aiohttp connects to those without asking
  the resolver) and loopback names.

Sessions keep no cookies, ignore proxy environment variables (a proxy would bypass the
resolver); a request follows at most MAX_REDIRECTS redirects when its caller passes that as
`max_redirects` (aiohttp has no session-wide bound)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from dutyline.kit import outbound
from dutyline.kit.outbound import OutboundPolicy

MAX_REDIRECTS = 5


class _CheckedResolver(AbstractResolver):
    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy
        self._plain = aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        if self._policy.host_allowed(host, port):
            # Let through whatever it resolves to (the operator's allowance).
            return await self._plain.resolve(host, port, family)
        addresses = await outbound.resolve_checked(host, port, self._policy)
        return [
            ResolveResult(hostname=host, host=address, port=port,
                          family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                          proto=0, flags=socket.AI_NUMERICHOST)
            for address in addresses
        ]

    async def close(self) -> None:
        await self._plain.close()


def _guard(policy: OutboundPolicy) -> Any:
    async def guard(request: aiohttp.ClientRequest,
                    handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        url = str(request.url)
        with outbound.refusals_logged(url):
            outbound.check_without_dns(url, policy)
        return await handler(request)

    return guard


def guarded_session(policy: OutboundPolicy, *, timeout_s: float) -> aiohttp.ClientSession:
    """An aiohttp session whose every connection and redirect hop passes the guard. No
    bound on connections: a receiver that hangs holds its own, never the others'. Made
    inside the event loop that uses it. Retries are the caller's (the delivery job's)."""
    connector = aiohttp.TCPConnector(
        resolver=_CheckedResolver(policy), limit=0, limit_per_host=0,
        ssl=outbound.default_ssl_context())
    return aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=timeout_s),
        middlewares=(_guard(policy),), cookie_jar=aiohttp.DummyCookieJar(), trust_env=False)


class KeptSessions:
    """Guarded sessions kept for the life of a process, one per purpose and event loop.

    A session made per call pays its setup and a TCP handshake every time; a kept one
    reuses its connections to the same receivers (the guard still checks every connection
    it opens and every request's URL, and no session keeps cookies). Bound to the loop they
    were made on, since their connections are; a new loop (a test's) gets new ones."""

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession]] = {}

    def get(self, purpose: str,
            make: Callable[[], aiohttp.ClientSession]) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        kept = self._sessions.get(purpose)
        if kept is not None and kept[0] is loop and not kept[1].closed:
            return kept[1]
        session = make()
        self._sessions[purpose] = (loop, session)
        return session

    async def aclose(self) -> None:
        """Close the sessions of the running loop; forget those of loops gone since."""
        loop = asyncio.get_running_loop()
        kept, self._sessions = self._sessions, {}
        for session_loop, session in kept.values():
            if session_loop is loop:
                await session.close()
