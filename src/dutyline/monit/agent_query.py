"""/monit/query/rows and /monit/query/diagnose: a data source named by type and name,
queried for an agent. Rows are what one query answers; a diagnosis condenses a window into
evidence: the log patterns of a LogQL query (Loki), or the trend of each series of a PromQL
query (Prometheus)."""

from __future__ import annotations

import math
from typing import Any

import anyio
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.monit import engine, logpatterns, loki, prom
from dutyline.monit import repository as repo
from dutyline.monit.agent_schemas import (
    DEFAULT_MAX_LOGS,
    DEFAULT_MAX_PATTERNS,
    DEFAULT_TIMEOUT_S,
    DiagnoseResponse,
    Row,
    Window,
)
from dutyline.monit.schemas import DS_TYPES, SUPPORTED_DS_TYPES, UNSUPPORTED_DS_TYPE
from dutyline.monit.tools import check_account

DEFAULT_WINDOW_S = 15 * 60
MAX_WINDOW_S = 6 * 3600
MAX_TREND_POINTS = 120  # per series: the step is the window over this, at least 15 s
MIN_STEP_S = 15
ROWS_TIMEOUT_S = 25.0
MAX_ROWS = 1000
LOKI_ROWS_DEFAULT_SINCE_S = DEFAULT_WINDOW_S
OPERATION_OF_TYPE = {"prometheus": "metric_trends", "loki": "log_patterns",
                     "victorialogs": "log_patterns"}
TYPES_OF_OPERATION = {"metric_trends": ("prometheus",), "log_patterns": ("loki",)}


async def _datasource(conn: AsyncConnection, actor: Actor, ds_type: str, ds_name: str) -> Any:
    if not ds_type:
        raise errors.invalid("ds_type", "is required")
    if ds_type not in DS_TYPES:
        raise errors.invalid("ds_type", f"must be one of {', '.join(DS_TYPES)}")
    if ds_type not in SUPPORTED_DS_TYPES:
        raise errors.invalid("ds_type", UNSUPPORTED_DS_TYPE)
    if not ds_name:
        raise errors.invalid("ds_name", "is required")
    row = next((r for r in await repo.list_datasources(conn, actor.account_id, ds_type)
                if r.name == ds_name), None)
    if row is None:
        raise errors.not_found("datasource", ds_name)
    if not row.enabled:
        raise errors.invalid("ds_name", "the data source is disabled")
    return row


def _window(start: int, end: int, now_s: int) -> tuple[int, int]:
    """Both 0: the last 15 minutes; one of them 0: 15 minutes from or up to the other."""
    if not end:
        end = now_s if not start else start + DEFAULT_WINDOW_S
    if not start:
        start = end - DEFAULT_WINDOW_S
    if end <= start:
        raise errors.invalid("time_range", "end must be after start")
    if end - start > MAX_WINDOW_S:
        raise errors.invalid("time_range", "spans over 6 h are refused")
    return start, end


def _failed(exc: prom.QueryFailed) -> errors.ApiError:
    return errors.BadRequest("The query failed: {reason}", reason=exc.reason)


# --- rows ------------------------------------------------------------------------------


@reads(ALERT_RULE_MANAGE)
async def rows(conn: AsyncConnection, actor: Actor, *, ds_type: str, ds_name: str, expr: str,
               args: dict[str, str], account_id: int, deps: Deps) -> list[Row]:
    check_account(actor, account_id)
    row = await _datasource(conn, actor, ds_type, ds_name)
    if not expr.strip():
        raise errors.invalid("expr", "is required")
    target = engine.target_of(deps.box, row)
    try:
        if ds_type == "loki":
            return await _loki_rows(actor, target, expr, args, deps)
        at = _int_arg(args, "time", ("time",), default=actor.now_s) or actor.now_s
        result = await prom.instant_query(deps.policy, target, expr, float(at),
                                          timeout_s=ROWS_TIMEOUT_S,
                                          transport=engine.transport_override)
    except prom.QueryFailed as exc:
        raise _failed(exc) from None
    return [Row(fields=s.labels, values={"value": s.value}) for s in result.samples[:MAX_ROWS]]


def _int_arg(args: dict[str, str], name: str, known: tuple[str, ...], *, default: int,
             low: int = 0, high: int = 2**62) -> int:
    for key in args:
        if key not in known:
            raise errors.invalid(f"args.{key}", f"is not understood (known: {', '.join(known)})")
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.invalid(f"args.{name}", "must be an integer") from None
    if not low <= value <= high:
        raise errors.invalid(f"args.{name}", f"must be {low} to {high}")
    return value


async def _loki_rows(actor: Actor, target: prom.Target, expr: str, args: dict[str, str],
                     deps: Deps) -> list[Row]:
    """Lines (newest first) or, for a metric query, series of the last `since` seconds."""
    known = ("since", "limit")
    since = _int_arg(args, "since", known, default=LOKI_ROWS_DEFAULT_SINCE_S, low=1,
                     high=MAX_WINDOW_S)
    limit = _int_arg(args, "limit", known, default=100, low=1, high=MAX_ROWS)
    end_ns = actor.now_s * loki.NS
    async with await prom.client_for(deps.policy, target.tls, timeout_s=ROWS_TIMEOUT_S,
                                     transport=engine.transport_override) as client:
        page = await loki.query_range(deps.policy, target, expr,
                                      start_ns=end_ns - since * loki.NS, end_ns=end_ns,
                                      limit=limit, timeout_s=ROWS_TIMEOUT_S, client=client)
    if page.series:
        return [Row(fields=s.labels, values={"value": s.points[-1][1] if s.points else None})
                for s in page.series[:MAX_ROWS]]
    return [Row(fields=line.labels, values={"timestamp": line.at_s, "line": line.text})
            for line in page.lines[:limit]]


# --- diagnose --------------------------------------------------------------------------


@reads(ALERT_RULE_MANAGE)
async def diagnose(conn: AsyncConnection, actor: Actor, *, ds_type: str, ds_name: str,
                   start: int, end: int, query: str, operation: str, max_logs_scanned: int,
                   max_patterns: int, timeout_seconds: int, account_id: int,
                   deps: Deps) -> DiagnoseResponse:
    check_account(actor, account_id)
    operation = operation or OPERATION_OF_TYPE.get(ds_type, "")
    if not operation:
        raise errors.invalid("operation", f"is required for ds_type {ds_type!r}")
    if ds_type not in TYPES_OF_OPERATION[operation]:
        raise errors.invalid("operation",
                             f"{operation} works on {', '.join(TYPES_OF_OPERATION[operation])} "
                             "data sources")
    row = await _datasource(conn, actor, ds_type, ds_name)
    if not query.strip():
        raise errors.invalid("input.query", "is required")
    start, end = _window(start, end, actor.now_s)
    timeout = float(timeout_seconds or DEFAULT_TIMEOUT_S)
    cap = max_patterns or DEFAULT_MAX_PATTERNS
    target = engine.target_of(deps.box, row)
    try:
        with anyio.fail_after(timeout):
            if operation == "log_patterns":
                results, scanned, truncated = await _log_patterns(
                    target, query, start, end, max_logs_scanned or DEFAULT_MAX_LOGS, cap,
                    timeout, deps)
            else:
                results, scanned, truncated = await _metric_trends(
                    target, query, start, end, cap, timeout, deps)
    except TimeoutError:
        raise errors.BadRequest("The diagnosis did not finish within {seconds} s",
                                seconds=int(timeout)) from None
    except prom.QueryFailed as exc:
        raise _failed(exc) from None
    return DiagnoseResponse(operation=operation, ds_type=ds_type, ds_name=ds_name, query=query,
                            window=Window(start=start, end=end), results=results,
                            scanned=scanned, truncated=truncated)


async def _log_patterns(target: prom.Target, query: str, start: int, end: int, max_lines: int,
                        cap: int, timeout_s: float,
                        deps: Deps) -> tuple[list[dict[str, Any]], int, bool]:
    lines, more = await loki.scan(deps.policy, target, query, start_s=start, end_s=end,
                                  max_lines=max_lines, timeout_s=timeout_s,
                                  transport=engine.transport_override)
    # Mining is CPU work over up to 50,000 lines (bounded: logpatterns.MAX_WORK): off the
    # event loop.
    mined = await anyio.to_thread.run_sync(
        logpatterns.mine, [(line.at_s, line.text) for line in lines], abandon_on_cancel=True)
    found = mined.patterns
    results = [{"signature": p.signature, "sample_count": p.count,
                "first_seen": int(p.first_seen), "sample": p.sample} for p in found[:cap]]
    return results, mined.lines, more or not mined.complete or len(found) > cap


async def _metric_trends(target: prom.Target, query: str, start: int, end: int, cap: int,
                         timeout_s: float, deps: Deps) -> tuple[list[dict[str, Any]], int, bool]:
    step = max(MIN_STEP_S, math.ceil((end - start) / MAX_TREND_POINTS))
    series = await prom.range_query(deps.policy, target, query, start, end, step,
                                    timeout_s=timeout_s, transport=engine.transport_override)
    trends = [t for t in (trend_of(s) for s in series) if t is not None]
    trends.sort(key=lambda t: (-abs(t["change_percent"]) if t["change_percent"] is not None
                               else 1.0, -abs(t["change"])))
    return trends[:cap], len(series), len(trends) > cap


def trend_of(series: prom.Series) -> dict[str, Any] | None:
    """A series condensed: where it started and ended, its range, and which way it went
    (a move over a fifth of its range, first to last, is a trend)."""
    if not series.points:
        return None
    values = [v for _, v in series.points]
    first, last = values[0], values[-1]
    low, high = min(values), max(values)
    peak_at = next(t for t, v in series.points if v == high)
    change = last - first
    spread = high - low
    trend = "flat"
    if spread > 0 and abs(change) > 0.2 * spread:
        trend = "rising" if change > 0 else "falling"
    return {
        "labels": series.labels, "points": len(values), "first": first, "last": last,
        "min": low, "max": high, "avg": sum(values) / len(values), "peak_at": int(peak_at),
        "change": change,
        "change_percent": None if first == 0 else round(100 * change / abs(first), 2),
        "trend": trend,
    }
