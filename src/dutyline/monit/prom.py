"""The Prometheus HTTP query API (Prometheus, VictoriaMetrics and Thanos speak it): instant
queries through the guarded outbound client. Every failure is a `QueryFailed` with a reason
fit for a rule's status; nothing here invents a value."""

from __future__ import annotations

import base64
import math
import re
import ssl
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import msgspec

from dutyline.kit.outbound import (
    OutboundBlocked,
    OutboundPolicy,
    check_without_dns,
    guarded_client,
)
from dutyline.monit import tls

QUERY_TIMEOUT_S = 10.0
MAX_SERIES = 10_000
MAX_BODY = 32 * 1024 * 1024


class QueryFailed(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Unreachable(QueryFailed):
    """The data source was not reached or did not answer (as opposed to refusing the
    query): callers that forward to it report these apart."""


@dataclass(frozen=True)
class Target:
    """Where and how to query one data source (credentials already unsealed)."""

    address: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    username: str = ""
    password: str = ""
    basic_auth: bool = False
    tls: tls.TlsSettings = field(default_factory=tls.TlsSettings)


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float | None


@dataclass(frozen=True)
class Result:
    result_type: str
    samples: list[Sample]


def _number(raw: Any) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise QueryFailed(f"malformed sample value {str(raw)[:40]!r}") from None
    return None if math.isnan(value) else value


def _point(pair: Any) -> float | None:
    if not isinstance(pair, list) or len(pair) != 2:
        raise QueryFailed("malformed sample in the response")
    return _number(pair[1])


def _labels(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise QueryFailed("malformed series labels in the response")
    return {str(k): str(v) for k, v in raw.items()}


def parse(body: bytes) -> Result:
    """The `data` of a /api/v1/query answer as samples."""
    doc = _success(body)
    data = doc.get("data")
    if not isinstance(data, dict):
        raise QueryFailed("the data source answered without data")
    kind, result = data.get("resultType"), data.get("result")
    if kind == "vector" and isinstance(result, list):
        samples = [Sample(_labels(s.get("metric", {})), _point(s.get("value")))
                   for s in result[:MAX_SERIES] if isinstance(s, dict)]
    elif kind == "matrix" and isinstance(result, list):
        samples = []
        for s in result[:MAX_SERIES]:
            values = s.get("values") if isinstance(s, dict) else None
            if not isinstance(values, list) or not values:
                continue
            samples.append(Sample(_labels(s.get("metric", {})), _point(values[-1])))
    elif kind == "scalar":
        samples = [Sample({}, _point(result))]
    else:
        raise QueryFailed(f"unsupported result type {str(kind)[:40]!r}")
    return Result(str(kind), samples)


async def client_for(policy: OutboundPolicy, settings: tls.TlsSettings | None = None, *,
                     timeout_s: float = QUERY_TIMEOUT_S,
                     transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """A guarded client for many queries to sources with these TLS settings. No retries: a
    failed evaluation is recorded and the next one runs on time. Settings that do not load
    (checked when saved; a key sealed by an older version) fail as a query would."""
    context = None
    if settings is not None and not settings.is_default and transport is None:
        try:
            context = await anyio.to_thread.run_sync(tls.context_for, settings)
        except tls.TlsInvalid as exc:
            raise QueryFailed(f"TLS settings: {exc}") from None
    return guarded_client(policy.without_retries(), timeout=timeout_s, transport=transport,
                          ssl_context=context)


class ClientPool:
    """The clients of one evaluation batch: one per distinct TLS settings, each with its own
    connection pool, closed together at the end of the batch."""

    def __init__(self, policy: OutboundPolicy, *,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._policy = policy
        self._transport = transport
        self._clients: dict[tls.TlsSettings, httpx.AsyncClient] = {}
        self._lock = anyio.Lock()

    async def get(self, settings: tls.TlsSettings) -> httpx.AsyncClient:
        async with self._lock:
            if settings not in self._clients:
                self._clients[settings] = await client_for(self._policy, settings,
                                                           transport=self._transport)
            return self._clients[settings]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


_SSL_REASON = re.compile(r"\[SSL: [A-Z0-9_]+\][^(]*")


def _failure(exc: Exception, address: str) -> str:
    """A reason for the rule's status: TLS failures say what the handshake refused (the
    ssl error may sit down the exception chain: a TLS 1.3 server refuses a missing client
    certificate only on the first read)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            reason = seen.reason or type(seen).__name__
            return f"TLS error: {reason}: {seen.strerror or seen}"[:300]
        found = _SSL_REASON.search(str(seen))
        if found:
            return f"TLS error: {found.group(0).strip()}"[:300]
        seen = seen.__cause__ or seen.__context__
    if address.startswith("https:") and isinstance(exc, (httpx.ReadError,
                                                         httpx.RemoteProtocolError)):
        # TLS 1.3 ends the handshake before the server checks the client's certificate: a
        # refusal then shows only as a closed connection (or an alert, whichever wins).
        return (f"TLS error or closed connection ({type(exc).__name__}): the server hung up "
                "after the handshake, as one that requires a client certificate does")
    return f"the data source could not be reached: {type(exc).__name__}"


async def instant_query(
    policy: OutboundPolicy, target: Target, expr: str, at_s: float, *,
    timeout_s: float = QUERY_TIMEOUT_S, transport: httpx.AsyncBaseTransport | None = None,
    client: httpx.AsyncClient | None = None,
) -> Result:
    body = await send(policy, target, "/api/v1/query", {"query": expr, "time": f"{at_s:.3f}"},
                       timeout_s=timeout_s, transport=transport, client=client)
    return parse(body)


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: list[tuple[float, float]]  # (Unix seconds, value), NaN points left out


def parse_matrix(body: bytes) -> list[Series]:
    """The `data` of a /api/v1/query_range answer: every point of every series."""
    doc = _success(body)
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise QueryFailed("the data source answered without a matrix")
    result = data.get("result")
    found = []
    for s in result[:MAX_SERIES] if isinstance(result, list) else []:
        values = s.get("values") if isinstance(s, dict) else None
        if not isinstance(values, list):
            continue
        points = []
        for pair in values:
            value = _point(pair)
            if value is not None:
                points.append((float(pair[0]), value))
        found.append(Series(_labels(s.get("metric", {})), points))
    return found


async def range_query(
    policy: OutboundPolicy, target: Target, expr: str, start_s: float, end_s: float,
    step_s: float, *, timeout_s: float = QUERY_TIMEOUT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> list[Series]:
    params = {"query": expr, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}",
              "step": f"{step_s:g}"}
    return parse_matrix(await send(policy, target, "/api/v1/query_range", params,
                                    timeout_s=timeout_s, transport=transport))


def _success(body: bytes) -> dict[str, Any]:
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise QueryFailed("the data source answered malformed JSON") from None
    if not isinstance(doc, dict):
        raise QueryFailed("the data source answered an unexpected JSON document")
    if doc.get("status") != "success":
        raise QueryFailed(f"query failed: {str(doc.get('error') or doc.get('status'))[:500]}")
    return doc


async def send(
    policy: OutboundPolicy, target: Target, path: str, params: dict[str, str], *,
    timeout_s: float, transport: httpx.AsyncBaseTransport | None = None,
    client: httpx.AsyncClient | None = None, method: str = "POST",
) -> bytes:
    """One call of an HTTP query API (Prometheus', Loki's): a form-encoded POST, or a GET
    with the parameters in the URL; the body of an answer worth parsing."""
    if client is None:
        async with await client_for(policy, target.tls, timeout_s=timeout_s,
                                    transport=transport) as own:
            return await send(policy, target, path, params, timeout_s=timeout_s, client=own,
                              method=method)
    address = target.address.rstrip("/")
    headers = dict(target.headers)
    if target.basic_auth:
        token = base64.b64encode(f"{target.username}:{target.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    try:
        extensions = {"sni_hostname": target.tls.server_name} if target.tls.server_name else {}
        # The guard's reading of the address first: httpx would refuse an old-style IPv4
        # form (0177.0.0.1) with an error of its own.
        check_without_dns(address, policy)
        fields = {**target.params, **params}
        if method == "GET":
            response = await client.get(f"{address}{path}", params=fields, headers=headers,
                                        extensions=extensions)
        else:
            response = await client.post(f"{address}{path}", data=fields, headers=headers,
                                         extensions=extensions)
    except OutboundBlocked as exc:
        raise QueryFailed(f"address refused: {exc.reason}") from None
    except httpx.InvalidURL as exc:  # not an HTTPError: a URL httpx cannot even build
        raise QueryFailed(f"address refused: {exc}") from None
    except httpx.TimeoutException:
        raise Unreachable(f"the data source did not answer within {timeout_s:g} s") from None
    except (httpx.HTTPError, ssl.SSLError) as exc:
        # An alert read after the handshake (Go's servers refuse a missing client
        # certificate so) escapes httpcore as a bare ssl.SSLError.
        raise Unreachable(_failure(exc, address)) from None
    if len(response.content) > MAX_BODY:
        raise QueryFailed("the data source answered too much data")
    if response.status_code != 200 and response.status_code not in (400, 422):
        raise Unreachable(f"the data source answered HTTP {response.status_code}")
    return response.content
