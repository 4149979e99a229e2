"""/monit/tools/catalog and /monit/tools/invoke: tools an agent runs against a monitored
target, answered from the account's Prometheus-compatible data sources (toolsets.py).

A target is resolved on every call, so the answer is never about a host the data sources
have stopped seeing: each enabled Prometheus data source is asked, for each candidate kind,
whether it has the target's series. No match anywhere is `target_unavailable` (or
`forward_failed` when a data source could not be asked), matches of several kinds with no
kind named are `ambiguous_target_kind`. Tools then run concurrently against the first data
source (by name) that knows the target, each failing alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.monit import engine, prom, toolsets
from dutyline.monit import repository as repo
from dutyline.monit.agent_schemas import (
    CatalogResponse,
    InvokeResponse,
    InvokeResult,
    InvokeTool,
    TargetInfo,
    ToolInfo,
)

# Data sources asked when resolving a target, at most (by name); more would make every
# call as slow as the slowest of many.
MAX_PROBED_SOURCES = 20
PROBE_TIMEOUT_S = 5.0
MAX_PROMQL_ROWS = 200


def check_account(actor: Actor, account_id: int) -> None:
    """The optional consistency check clients send: their own account or nothing."""
    if account_id and account_id != actor.account_id:
        raise errors.invalid("account_id", "is not the account of the app_key")


@dataclass(frozen=True)
class Resolved:
    info: TargetInfo
    kind: toolsets.Kind
    target: prom.Target


@dataclass
class _Probe:
    row: Any
    kind: toolsets.Kind
    instances: list[str]
    failure: str = ""


async def _probe(deps: Deps, row: Any, kind: toolsets.Kind, name: str, at_s: float,
                 out: list[_Probe]) -> None:
    try:
        result = await prom.instant_query(deps.policy, engine.target_of(deps.box, row),
                                          kind.probe_for(name), at_s, timeout_s=PROBE_TIMEOUT_S,
                                          transport=engine.transport_override)
    except prom.QueryFailed as exc:
        out.append(_Probe(row, kind, [], exc.reason))
        return
    found = sorted({s.labels["instance"] for s in result.samples if s.labels.get("instance")})
    out.append(_Probe(row, kind, found))


async def resolve(conn: AsyncConnection, actor: Actor, *, locator: str, target_kind: str,
                  deps: Deps) -> Resolved:
    parsed = toolsets.parse_locator(locator)
    if isinstance(parsed, str):
        raise errors.invalid("target_locator", parsed)
    if target_kind and target_kind not in toolsets.KINDS:
        raise errors.invalid("target_kind", f"must be one of {', '.join(toolsets.KINDS)}")
    if target_kind and parsed.kind and target_kind != parsed.kind:
        raise errors.invalid("target_kind", f"contradicts the locator's kind {parsed.kind!r}")
    wanted = target_kind or parsed.kind
    kinds = [toolsets.KINDS[wanted]] if wanted else list(toolsets.KINDS.values())
    sources = [r for r in await repo.list_datasources(conn, actor.account_id, "prometheus")
               if r.enabled][:MAX_PROBED_SOURCES]
    if not sources:
        raise errors.TargetUnavailable(
            "No enabled prometheus data source can answer for the target {target}",
            target=locator)
    probes: list[_Probe] = []
    async with anyio.create_task_group() as tg:
        for row in sources:
            for kind in kinds:
                tg.start_soon(_probe, deps, row, kind, parsed.name, float(actor.now_s), probes)
    order = {row.id: i for i, row in enumerate(sources)}
    probes.sort(key=lambda p: (order[p.row.id], p.kind.name))
    found: dict[str, _Probe] = {}
    for probe in probes:
        if probe.instances:
            found.setdefault(probe.kind.name, probe)
    if not found:
        failed = next((p for p in probes if p.failure), None)
        if failed is not None:
            raise errors.ForwardFailed(datasource=failed.row.name, reason=failed.failure)
        raise errors.TargetUnavailable(target=locator)
    if len(found) > 1:
        raise errors.AmbiguousTargetKind(target=locator, kinds=", ".join(sorted(found)))
    (hit,) = found.values()
    info = TargetInfo(target_locator=locator, target_kind=hit.kind.name, name=parsed.name,
                      datasource_id=hit.row.id, datasource_name=hit.row.name,
                      instances=hit.instances)
    return Resolved(info, hit.kind, engine.target_of(deps.box, hit.row))


@reads(ALERT_RULE_MANAGE)
async def catalog(conn: AsyncConnection, actor: Actor, *, locator: str, target_kind: str,
                  account_id: int, deps: Deps) -> CatalogResponse:
    check_account(actor, account_id)
    resolved = await resolve(conn, actor, locator=locator, target_kind=target_kind, deps=deps)
    tools = [ToolInfo(name=t.name, description=t.description, input_schema=t.input_schema)
             for t in resolved.kind.tools]
    return CatalogResponse(target=resolved.info, tools=tools,
                           toolset_hash=resolved.kind.toolset_hash)


@reads(ALERT_RULE_MANAGE)
async def invoke(conn: AsyncConnection, actor: Actor, *, locator: str, target_kind: str,
                 calls: list[InvokeTool], toolset_hash: str, account_id: int,
                 deps: Deps) -> InvokeResponse:
    check_account(actor, account_id)
    resolved = await resolve(conn, actor, locator=locator, target_kind=target_kind, deps=deps)
    if toolset_hash and toolset_hash != resolved.kind.toolset_hash:
        raise errors.UnknownToolsetHash(hash=toolset_hash)
    results: list[InvokeResult] = [InvokeResult(tool=c.tool) for c in calls]
    if calls:
        async with (await prom.client_for(deps.policy, resolved.target.tls,
                                          transport=engine.transport_override) as client,
                    anyio.create_task_group() as tg):
            for index, call in enumerate(calls):
                tg.start_soon(_run_tool, resolved, call, float(actor.now_s), client, deps,
                              results, index)
    return InvokeResponse(target=resolved.info, results=results)


async def _run_tool(resolved: Resolved, call: InvokeTool, now_s: float,
                    client: httpx.AsyncClient, deps: Deps, results: list[InvokeResult],
                    index: int) -> None:
    try:
        data = await _tool_data(resolved, call, now_s, client, deps)
    except _ToolFailed as exc:
        results[index] = InvokeResult(tool=call.tool, error=str(exc))
    else:
        results[index] = InvokeResult(tool=call.tool, data=data)


class _ToolFailed(Exception):
    pass


async def _tool_data(resolved: Resolved, call: InvokeTool, now_s: float,
                     client: httpx.AsyncClient, deps: Deps) -> dict[str, Any]:
    tool = resolved.kind.tool(call.tool)
    if tool is None:
        names = ", ".join(t.name for t in resolved.kind.tools)
        raise _ToolFailed(f"unknown tool {call.tool!r} for a {resolved.kind.name} target; "
                          f"the catalogue has {names}")
    params = call.params or {}
    problem = toolsets.check_params(tool.input_schema, params)
    if problem:
        raise _ToolFailed(problem)

    async def ask(expr: str, at_s: float) -> prom.Result:
        try:
            return await prom.instant_query(deps.policy, resolved.target, expr, at_s,
                                            client=client)
        except prom.QueryFailed as exc:
            raise _ToolFailed(exc.reason) from None

    if tool.queries is None:  # promql_query
        at_s = float(params.get("time") or now_s)
        result = await ask(str(params["query"]), at_s)
        rows = [{"labels": s.labels, "value": s.value} for s in result.samples]
        summary = f"{len(rows)} series ({result.result_type})"
        if len(rows) > MAX_PROMQL_ROWS:
            summary += f"; the first {MAX_PROMQL_ROWS} shown"
        return {"summary": summary, "data": rows[:MAX_PROMQL_ROWS]}
    matcher = toolsets.instance_matcher(resolved.info.instances)
    data: dict[str, Any] = {}
    for query in tool.queries(matcher, params):
        result = await ask(query.expr, now_s)
        if query.by:
            data[query.key] = {s.labels.get(query.by, ""): s.value for s in result.samples}
        else:
            data[query.key] = result.samples[0].value if result.samples else None
    assert tool.summarize is not None
    return {"summary": tool.summarize(data), "data": data}
