"""Loki's HTTP query API (`/loki/api/v1/query_range`, published protocol): log lines of a
LogQL query over a window, read newest first a page at a time, through the same guarded
client as Prometheus queries (prom.send). Loki's `start` is inclusive and `end` exclusive,
in nanoseconds, so each next page ends where the previous one's oldest line was."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from dutyline.kit.outbound import OutboundPolicy
from dutyline.monit import prom

PAGE_LINES = 5000  # Loki's default max_entries_limit_per_query
NS = 1_000_000_000


@dataclass(frozen=True)
class Line:
    at_ns: int
    labels: dict[str, str]
    text: str

    @property
    def at_s(self) -> float:
        return self.at_ns / NS


@dataclass(frozen=True)
class Page:
    lines: list[Line]
    # A metric query (rate(...), count_over_time(...)) answers series instead of lines.
    series: list[prom.Series]


def parse(body: bytes) -> Page:
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError:
        # Loki answers a query it cannot parse with plain text.
        text = body[:300].decode(errors="replace").strip()
        raise prom.QueryFailed(f"query failed: {text or 'no answer'}") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") or doc.get("status") if isinstance(doc, dict) else None
        raise prom.QueryFailed(f"query failed: {str(error)[:500]}")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise prom.QueryFailed("the data source answered without data")
    kind = data.get("resultType")
    if kind == "matrix":
        return Page([], prom.parse_matrix(body))
    if kind != "streams":
        raise prom.QueryFailed(f"unsupported result type {str(kind)[:40]!r}")
    lines = []
    for stream in data.get("result") or []:
        if not isinstance(stream, dict):
            continue
        labels = {str(k): str(v) for k, v in (stream.get("stream") or {}).items()}
        for entry in stream.get("values") or []:
            lines.append(_line(entry, labels))
    lines.sort(key=lambda x: x.at_ns, reverse=True)
    return Page(lines, [])


def _line(entry: Any, labels: dict[str, str]) -> Line:
    if not isinstance(entry, list) or len(entry) < 2:
        raise prom.QueryFailed("malformed log entry in the response")
    try:
        at_ns = int(entry[0])
    except (TypeError, ValueError):
        raise prom.QueryFailed("malformed log timestamp in the response") from None
    return Line(at_ns, labels, str(entry[1]))


async def query_range(policy: OutboundPolicy, target: prom.Target, query: str, *,
                      start_ns: int, end_ns: int, limit: int, timeout_s: float,
                      client: httpx.AsyncClient) -> Page:
    params = {"query": query, "start": str(start_ns), "end": str(end_ns), "limit": str(limit),
              "direction": "backward"}
    return parse(await prom.send(policy, target, "/loki/api/v1/query_range", params,
                                 timeout_s=timeout_s, client=client, method="GET"))


async def scan(policy: OutboundPolicy, target: prom.Target, query: str, *, start_s: int,
               end_s: int, max_lines: int, timeout_s: float,
               transport: httpx.AsyncBaseTransport | None = None) -> tuple[list[Line], bool]:
    """Up to `max_lines` lines of the window, newest first, and whether more were left."""
    lines: list[Line] = []
    end_ns = end_s * NS
    async with await prom.client_for(policy, target.tls, timeout_s=timeout_s,
                                     transport=transport) as client:
        while len(lines) < max_lines:
            want = min(PAGE_LINES, max_lines - len(lines))
            page = await query_range(policy, target, query, start_ns=start_s * NS,
                                     end_ns=end_ns, limit=want, timeout_s=timeout_s,
                                     client=client)
            if page.series:
                raise prom.QueryFailed("a log pattern needs a log query (a stream selector and "
                                       "filters), not a metric query")
            lines.extend(page.lines[:want])
            if len(page.lines) < want:
                return lines, False
            end_ns = page.lines[-1].at_ns
        return lines, True
