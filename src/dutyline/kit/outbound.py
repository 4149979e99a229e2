"""The outbound-URL guard: every HTTP request to a user-configured address goes through here.

A URL is refused when its scheme is not http(s) or when its host is, or resolves to, an
address that is not on the public internet (loopback, link-local with the cloud metadata
endpoints, private, unspecified, multicast, reserved, and the IPv4-mapped IPv6 forms of all of
those), unless the operator allows private networks.

The check that matters happens at connect time: the clients built here carry a network backend
that resolves the host itself, checks *every* address, and then connects to the address it
checked (TLS SNI and the Host header still name the original host, since httpcore takes those
from the request URL). A name that resolves to a public address for a pre-flight check and to
127.0.0.1 a moment later (DNS rebinding) therefore cannot get through. Redirect hops travel
through the same transport, so each hop is checked again.

Two client flavours share the guard: `guarded_client` (httpx, for our own calls) and
`guarded_httpx2_client` (httpx2, the httpx fork the official `mcp` package speaks). Both retry
what is safe to retry (GET/HEAD and requests marked `IDEMPOTENT`, on connect failures and
429/502/503/504) per the policy's `retry`; the rules are in `kit/outbound_retry`.
"""

from __future__ import annotations

import functools
import ipaddress
import select
import socket
import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import anyio
import httpcore
import httpcore2
import httpx
import httpx2
import structlog

from dutyline.kit.ipv4_forms import NotAnAddress, legacy_ipv4
from dutyline.kit.outbound_retry import IDEMPOTENT as IDEMPOTENT
from dutyline.kit.outbound_retry import Flavour, RetryingTransport, RetryPolicy
from dutyline.kit.url_secrets import mask_path, secret_query_name

log = structlog.get_logger("dutyline.outbound")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# The few well-known metadata addresses, named in refusals so an operator sees why.
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("fd00:ec2::254"),
    ipaddress.ip_address("100.100.100.200"),
}
# NAT64 embeds an IPv4 address in the low 32 bits; a gateway would forward to it.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_MAX_REDIRECTS = 5
_SECRET_HEADER_WORDS = ("authorization", "token", "secret", "key", "cookie", "password", "auth")


class OutboundBlocked(Exception):
    """A request the guard refused; `reason` says why in words a user can act on."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class OutboundPolicy:
    """Who may be called, and how failed calls are retried.

    `allow_private` is the operator's switch (DUTYLINE_ALLOW_PRIVATE_NETWORK). `allow_hosts`
    names exact `host:port` pairs that pass whatever they resolve to; tests use it to allow one
    loopback peer while everything else stays guarded. `retry` (None: never) is what the
    guarded clients do with a failed idempotent request; `on_retry` hears each retry's reason
    (the app counts them in its metrics)."""

    allow_private: bool = False
    allow_hosts: frozenset[str] = field(default_factory=frozenset)
    retry: RetryPolicy | None = field(default_factory=RetryPolicy)
    on_retry: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    def host_allowed(self, host: str, port: int) -> bool:
        return self.allow_private or f"{_bare_host(host).lower()}:{port}" in self.allow_hosts

    def retry_within(self, seconds: float) -> OutboundPolicy:
        """The same policy with retries confined to an operation's own time budget."""
        if self.retry is None:
            return self
        return replace(self, retry=self.retry.within(seconds))

    def without_retries(self) -> OutboundPolicy:
        """For a client that runs its own retry loop (a second one would multiply attempts)."""
        return replace(self, retry=None)


def _bare_host(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def blocked_reason(ip: IPAddress) -> str | None:
    """Why this address may not be called, or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is None and ip in _NAT64:
            mapped = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if mapped is not None:
            inner = blocked_reason(mapped)
            return f"{inner} (IPv4-mapped as {ip})" if inner else None
    if ip in _METADATA:
        return f"{ip} is a cloud metadata address"
    checks = (
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link-local"),
        (ip.is_multicast, "multicast"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "not a public"),
    )
    for hit, kind in checks:
        if hit:
            return f"{ip} is a {kind} address"
    return None


def _split(url: str) -> tuple[SplitResult, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundBlocked(f"the URL is malformed ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        shown = scheme or "(none)"
        raise OutboundBlocked(f"the scheme {shown!r} is not allowed; use http or https")
    host = parts.hostname or ""
    if not host:
        raise OutboundBlocked("the URL has no host")
    _refuse_legacy_ipv4(host)
    return parts, host, port or (443 if scheme == "https" else 80)


def _refuse_legacy_ipv4(host: str) -> None:
    """An IPv4 address written other than as four plain decimals is refused whatever the
    policy says: the clients below disagree on it (httpx rejects `0177.0.0.1` outright, the
    resolver reads it as 127.0.0.1), and a check that reads it differently from the connect
    could be walked around. The refusal says what the address reads as."""
    if _literal_ip(host) is not None:
        return
    try:
        ip = legacy_ipv4(host)
    except NotAnAddress:
        raise OutboundBlocked(f"{host} is not a valid IPv4 address") from None
    if ip is None:
        return
    reason = blocked_reason(ip)
    raise OutboundBlocked(
        f"{host} reads as the IPv4 address {ip}" + (f" ({reason})" if reason else "")
        + f"; write it as {ip}")


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(_bare_host(host).split("%", 1)[0])
    except ValueError:
        return None


def _check_static(host: str, port: int, policy: OutboundPolicy) -> bool:
    """Checks what needs no DNS; True when the host is settled (allowed or a literal IP)."""
    if policy.host_allowed(host, port):
        return True
    ip = _literal_ip(host)
    if ip is None:
        if _bare_host(host).lower().rstrip(".") in ("localhost", "localhost.localdomain"):
            raise OutboundBlocked(f"{host} is a loopback name")
        return False
    reason = blocked_reason(ip)
    if reason:
        raise OutboundBlocked(reason)
    return True


def check_without_dns(url: str, policy: OutboundPolicy) -> None:
    """Refuse (raise OutboundBlocked) what the URL alone gives away: its scheme, a literal
    address, a loopback name. A host name is left to the connect-time check."""
    _, host, port = _split(url)
    _check_static(host, port, policy)


@contextmanager
def refusals_logged(url: str) -> Iterator[None]:
    """Log a refusal of the guard (the URL redacted, and why) on its way out."""
    try:
        yield
    except OutboundBlocked as exc:
        log.warning("outbound_blocked", url=redact_url(url), reason=exc.reason)
        raise


async def _getaddrinfo(host: str, port: int) -> list[Any]:
    # One seam for the resolver, so a test can play a rebinding DNS server.
    return list(await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))


async def resolve_checked(host: str, port: int, policy: OutboundPolicy) -> list[str]:
    """Resolve `host` and check every address; the addresses to connect to, in order."""
    if _check_static(host, port, policy):
        return [_bare_host(host)]
    try:
        infos = await _getaddrinfo(host, port)
    except OSError as exc:
        raise OutboundBlocked(f"{host} does not resolve ({exc})") from None
    addresses: list[str] = []
    for *_, sockaddr in infos:
        text = str(sockaddr[0])
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        # One bad address refuses the name: otherwise a rebinding name could offer a public
        # and a private address and let the connector pick.
        reason = blocked_reason(ip)
        if reason:
            raise OutboundBlocked(f"{host} resolves to {ip}, which is refused: {reason}")
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise OutboundBlocked(f"{host} does not resolve")
    return addresses


async def check_url(url: str, policy: OutboundPolicy) -> None:
    """Refuse (raise OutboundBlocked) a URL the policy does not allow; resolves the host.

    Good for validating user input early with a clear reason; the connect-time check in the
    guarded clients is what actually keeps requests off private addresses."""
    _, host, port = _split(url)
    await resolve_checked(host, port, policy)


# --- connect-time guard ------------------------------------------------------------------


class _GuardedBackend:
    """A network backend (httpcore or httpcore2 shape) that connects only to checked addresses."""

    def __init__(self, inner: Any, policy: OutboundPolicy, timeout_error: type[Exception]) -> None:
        self._inner = inner
        self._policy = policy
        self._timeout_error = timeout_error

    async def connect_tcp(
        self,
        host: str,
        port: int,
        # The signature is httpcore's network-backend interface, timeout included.
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        try:
            with anyio.fail_after(timeout):
                addresses = await resolve_checked(host, port, self._policy)
        except TimeoutError:
            raise self._timeout_error(f"resolving {host} timed out") from None
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )
            except Exception as exc:  # try the next checked address, as a resolver would
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Iterable[Any] | None = None,
    ) -> Any:
        raise OutboundBlocked("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _SocketKeepingStream(httpcore.AsyncNetworkStream):
    """An httpcore stream that looks its socket up once.

    httpcore asks every idle pooled connection whether its socket is readable each time a
    request joins or leaves the pool, and the anyio stream answers by building all of its
    extra attributes anew (a getpeername() system call among them). A batch of calls to one
    server (an alert-rule job's queries to one Prometheus) keeps dozens of connections: a
    quarter of a POST's CPU went to that lookup (bench/http_clients.py)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: Any = _UNSET

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:  # noqa: ASYNC109
        return _SocketKeepingStream(
            await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info not in ("socket", "is_readable"):
            return self._inner.get_extra_info(info)
        if self._socket is _UNSET:
            self._socket = self._inner.get_extra_info("socket")
        if info == "socket":
            return self._socket
        return _readable(self._socket)


_UNSET = object()


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read would return at once: for an idle keep-alive connection, that the
    server closed it (or sent what it should not have). A socket gone counts as readable,
    as httpcore counts it, so the pool drops the connection."""
    if sock is None or sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _HttpcoreBackend(_GuardedBackend, httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> Any:
        return _SocketKeepingStream(await super().connect_tcp(
            host, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options))


class _Httpcore2Backend(_GuardedBackend, httpcore2.AsyncNetworkBackend):
    pass


class _CheckingTransport:
    """Checks each request's URL (every redirect hop is a request) before handing it on.

    With the real network below, the DNS part is left to the connect-time backend; with an
    injected transport (a mock) there is no connect, so the whole check happens here."""

    def __init__(self, inner: Any, policy: OutboundPolicy, resolve_here: bool) -> None:
        self._inner = inner
        self._policy = policy
        self._resolve_here = resolve_here

    async def handle_async_request(self, request: Any) -> Any:
        url = str(request.url)
        with refusals_logged(url):
            if self._resolve_here:
                await check_url(url, self._policy)
            else:
                check_without_dns(url, self._policy)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _HttpxChecking(_CheckingTransport, httpx.AsyncBaseTransport):
    pass


class _Httpx2Checking(_CheckingTransport, httpx2.AsyncBaseTransport):
    pass


class _HttpxRetrying(RetryingTransport, httpx.AsyncBaseTransport):
    pass


class _Httpx2Retrying(RetryingTransport, httpx2.AsyncBaseTransport):
    pass


_HTTPX = Flavour(
    connect_errors=(httpx.ConnectError, httpx.ConnectTimeout),
    connect_timeout=httpx.ConnectTimeout,
    byte_stream=httpx.ByteStream,
)
_HTTPX2 = Flavour(
    connect_errors=(httpx2.ConnectError, httpx2.ConnectTimeout),
    connect_timeout=httpx2.ConnectTimeout,
    byte_stream=httpx2.ByteStream,
)


def _httpx_stack(
    inner: httpx.AsyncBaseTransport, policy: OutboundPolicy, resolve_here: bool
) -> httpx.AsyncBaseTransport:
    checked = _HttpxChecking(inner, policy, resolve_here)
    if policy.retry is None:
        return checked
    return _HttpxRetrying(checked, policy.retry, _HTTPX, policy.on_retry)


def _httpx2_stack(
    inner: httpx2.AsyncBaseTransport, policy: OutboundPolicy, resolve_here: bool
) -> httpx2.AsyncBaseTransport:
    checked = _Httpx2Checking(inner, policy, resolve_here)
    if policy.retry is None:
        return checked
    return _Httpx2Retrying(checked, policy.retry, _HTTPX2, policy.on_retry)


# Loading the CA bundle takes ~90 ms of CPU: done once per process, not per client (it would
# also block the event loop each time).
@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=False)


def default_ssl_context() -> ssl.SSLContext:
    """The system CA bundle's context every guarded client verifies with (built once)."""
    return _ssl_context()


@functools.cache
def _ssl_context2() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


# httpx's own defaults, which its pool would have had.
DEFAULT_MAX_CONNECTIONS = 100
DEFAULT_MAX_KEEPALIVE = 20


def _httpx_network(policy: OutboundPolicy, ssl_context: ssl.SSLContext | None = None, *,
                   max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
                   max_keepalive: int | None = DEFAULT_MAX_KEEPALIVE,
                   ) -> httpx.AsyncHTTPTransport:
    context = ssl_context if ssl_context is not None else _ssl_context()
    transport = httpx.AsyncHTTPTransport(verify=context, trust_env=False)
    # httpx does not expose the network backend; the pool it builds is replaced by the same
    # pool with our backend (the attribute has been `_pool` since httpx 0.18). The limits are
    # given again: httpcore's own default is 10 connections, not httpx's 100.
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=context,
        max_connections=max_connections,
        max_keepalive_connections=max_keepalive,
        network_backend=_HttpcoreBackend(httpcore.AnyIOBackend(), policy, httpcore.ConnectTimeout),
    )
    return transport


def _httpx2_network(policy: OutboundPolicy) -> httpx2.AsyncHTTPTransport:
    transport = httpx2.AsyncHTTPTransport(verify=_ssl_context2(), trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(  # same reason as in _httpx_network
        ssl_context=_ssl_context2(),
        network_backend=_Httpcore2Backend(
            httpcore2.AnyIOBackend(), policy, httpcore2.ConnectTimeout
        ),
    )
    return transport


def guarded_client(
    policy: OutboundPolicy,
    *,
    timeout: httpx.Timeout | float,
    headers: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    follow_redirects: bool = False,
    ssl_context: ssl.SSLContext | None = None,
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
    max_keepalive: int | None = DEFAULT_MAX_KEEPALIVE,
) -> httpx.AsyncClient:
    """An httpx client whose every request (and redirect hop) passes the guard, retried per
    `policy.retry`.

    `transport` replaces the network (tests, third-party mocks); URLs are still checked.
    `ssl_context` replaces the system CA bundle (a peer's own CA, a client certificate).
    `max_connections` bounds the open connections (None: no bound); a request beyond it
    waits for one to free up. `max_keepalive` bounds the idle ones kept for reuse (None: no
    bound; an idle connection still closes after httpcore's keep-alive expiry)."""
    inner = (transport if transport is not None
             else _httpx_network(policy, ssl_context, max_connections=max_connections,
                                 max_keepalive=max_keepalive))
    return httpx.AsyncClient(
        transport=_httpx_stack(inner, policy, resolve_here=transport is not None),
        timeout=timeout,
        headers=dict(headers or {}),
        follow_redirects=follow_redirects,
        max_redirects=_MAX_REDIRECTS,
        # Environment proxies would bypass the transport, and with it the guard.
        trust_env=False,
    )


def guarded_httpx2_client(
    policy: OutboundPolicy,
    *,
    timeout: httpx2.Timeout | float,
    headers: Mapping[str, str] | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The same guard for httpx2 clients, which the `mcp` transports take."""
    inner = transport if transport is not None else _httpx2_network(policy)
    kwargs: dict[str, Any] = {}
    if auth is not None:
        kwargs["auth"] = auth
    return httpx2.AsyncClient(
        transport=_httpx2_stack(inner, policy, resolve_here=transport is not None),
        timeout=timeout,
        headers=dict(headers or {}),
        max_redirects=_MAX_REDIRECTS,
        trust_env=False,
        **kwargs,
    )


# --- redaction ---------------------------------------------------------------------------


# Every delivery attempt records its endpoint redacted, and a receiver's URL repeats.
@functools.lru_cache(maxsize=1024)
def redact_url(url: str) -> str:
    """The URL without userinfo, with secret-looking query values and chat robots' secret
    path segments masked (kit/url_secrets.py), for logs and delivery records."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<malformed url>"
    netloc = parts.netloc.rsplit("@", 1)[-1]
    path = mask_path(parts.path)
    query = "&".join(
        f"{k}=******" if secret_query_name(k) else f"{k}={v}"
        for k, _, v in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    return urlunsplit((parts.scheme, netloc, path, query, ""))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers for a log line: values of secret-looking names masked."""
    return {
        k: "******" if any(w in k.lower() for w in _SECRET_HEADER_WORDS) else v
        for k, v in headers.items()
    }
