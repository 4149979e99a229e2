"""The tools a run offers its model: the enabled MCP servers' tools and the enabled A2A agents
in the rule's scope (through the connectors' services and gateways), and read-only tools over
this service's own incidents and alerts (through the incident domain's services), and, when
the rule's creator may manage alert rules, the monitor tools over the account's monitored
targets (through monit's services).

Each tool has a name the OpenAI tool schema accepts (`^[a-zA-Z0-9_-]{1,64}$`), a JSON-schema
of its arguments, a timeout, and a coroutine that answers text for the model."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.a2a import service as a2a_service
from dutyline.aisre.a2a.gateway import A2aError, A2aGateway
from dutyline.aisre.mcp import service as mcp_service
from dutyline.aisre.mcp.gateway import McpError, McpTarget
from dutyline.api.actor import Actor
from dutyline.api.errors import ApiError
from dutyline.api.permissions import ALERT_RULE_MANAGE, CHANNEL_VIEW
from dutyline.api.runtime import Runtime
from dutyline.api.unit import person_actor, system_actor
from dutyline.incident.service import query as incident_service
from dutyline.monit import service as monit_service
from dutyline.platform.role import service as role_service
from dutyline.platform.team import service as team_service

MAX_RESULT_CHARS = 16_000
INCIDENT_TOOL_TIMEOUT_S = 15.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

ToolFn = Callable[[dict[str, Any]], Awaitable[str]]


class ToolFailed(Exception):
    """A tool could not answer; str() is fed back to the model."""


@dataclass(frozen=True)
class AgentTool:
    name: str
    description: str
    parameters: dict[str, Any]
    timeout_s: float
    call: ToolFn

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description[:1024],
            "parameters": self.parameters or {"type": "object", "properties": {}},
        }}


def tool_name(*parts: str) -> str:
    return _UNSAFE.sub("_", "_".join(parts))[:64]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + " …[truncated]"


# --- MCP ------------------------------------------------------------------------------------


async def mcp_tools(
    runtime: Runtime, targets: list[McpTarget], problems: list[str]
) -> list[AgentTool]:
    gateway = mcp_service.gateway_of(runtime.deps)
    found: list[AgentTool] = []
    for n, target in enumerate(targets, 1):
        try:
            listed = await gateway.list_tools(target)
        except McpError as exc:
            problems.append(f"MCP server {target.server_id}: {exc.reason}")
            continue
        for tool in listed:
            found.append(AgentTool(
                name=tool_name(f"mcp{n}", tool.name),
                description=tool.description or tool.name,
                parameters=tool.input_schema,
                timeout_s=target.call_timeout + target.connect_timeout,
                call=_mcp_call(gateway, target, tool.name),
            ))
    return found


def _mcp_call(gateway: Any, target: McpTarget, name: str) -> ToolFn:
    async def call(arguments: dict[str, Any]) -> str:
        try:
            result = await gateway.call_tool(target, name, arguments)
        except McpError as exc:
            raise ToolFailed(exc.reason) from None
        text = _clip(result.text)
        return f"ERROR: {text}" if result.is_error else text

    return call


# --- A2A ------------------------------------------------------------------------------------


def a2a_tools(runtime: Runtime, targets: list[a2a_service.A2aTarget]) -> list[AgentTool]:
    gateway = A2aGateway(runtime.deps.policy)
    found = []
    for n, agent in enumerate(targets, 1):
        skills = "; ".join(str(s.get("name", "")) for s in agent.skills if isinstance(s, dict))
        about = agent.instructions or str(agent.card.get("description", ""))
        found.append(AgentTool(
            name=tool_name(f"a2a{n}", agent.agent_name),
            description=f"Delegate a task to the A2A agent '{agent.agent_name}'. {about} "
                        f"Skills: {skills}".strip(),
            parameters={"type": "object", "properties": {
                "message": {"type": "string", "description": "What to ask the agent"},
            }, "required": ["message"]},
            timeout_s=gateway.timeout,
            call=_a2a_call(gateway, agent),
        ))
    return found


def _a2a_call(gateway: A2aGateway, agent: a2a_service.A2aTarget) -> ToolFn:
    async def call(arguments: dict[str, Any]) -> str:
        message = str(arguments.get("message") or "").strip()
        if not message:
            raise ToolFailed("the argument 'message' is required")
        try:
            reply = await gateway.send(agent, message)
        except A2aError as exc:
            raise ToolFailed(str(exc)) from None
        return _clip(reply.text)

    return call


# --- this service's incidents and alerts (read-only) ---------------------------------------


@dataclass(frozen=True)
class ReadScope:
    """Whose view of the incidents a run reads with: a personal rule its creator's (public
    channels and the private channels of their teams), a team rule its team's. Never an
    owner's or admin's whole-account view, so a rule cannot show its creator incidents of
    private channels they could not list themselves."""

    account_id: int
    owner_id: int
    team_id: int


@asynccontextmanager
async def _reading(runtime: Runtime,
                   scope: ReadScope) -> AsyncIterator[tuple[AsyncConnection, Actor]]:
    """A read transaction of the run's own, with a non-admin actor of the rule's scope."""
    personal = scope.team_id == 0
    async with runtime.db.transaction(write=False) as conn:

        async def team_ids() -> frozenset[int]:
            # A team rule reads as its team; a personal one as its creator, with their teams.
            if not personal:
                return frozenset({scope.team_id})
            return await team_service.member_team_ids(conn, actor)

        def team_ids_sync(sync_conn: Connection) -> frozenset[int]:
            if not personal:
                return frozenset({scope.team_id})
            return team_service.member_team_ids_sync(sync_conn, actor)

        # It may read incidents as anyone who may view channels, within its scope's
        # visibility: the incident reads require that permission of every caller.
        actor = person_actor(scope.account_id, scope.owner_id if personal else 0,
                             runtime.clock, person_name="automation",
                             permissions=frozenset({CHANNEL_VIEW}), team_ids=team_ids,
                             team_ids_sync=team_ids_sync)
        yield conn, actor


def incident_tools(runtime: Runtime, scope: ReadScope) -> list[AgentTool]:
    def encode(value: Any) -> str:
        return _clip(msgspec.json.encode(value).decode())

    async def list_incidents(arguments: dict[str, Any]) -> str:
        hours = max(1, min(int(arguments.get("hours") or 24), 31 * 24))
        now = int(runtime.clock.now())
        try:
            async with _reading(runtime, scope) as (conn, actor):
                page = await incident_service.list_incidents(
                    conn, actor, start_time=now - hours * 3600, end_time=now,
                    limit=20, progress=str(arguments.get("progress") or ""),
                    incident_severity=str(arguments.get("severity") or ""),
                    deps=runtime.deps)
        except Exception as exc:
            raise ToolFailed(str(exc)) from None
        return encode({"total": page.total, "items": [
            {"incident_id": i.incident_id, "title": i.title, "severity": i.incident_severity,
             "progress": i.progress, "channel_id": i.channel_id, "start_time": i.start_time}
            for i in page.items]})

    async def get_incident(arguments: dict[str, Any]) -> str:
        try:
            incident_id = str(arguments.get("incident_id") or "")
            async with _reading(runtime, scope) as (conn, actor):
                return encode(await incident_service.incident_info(
                    conn, actor, incident_id=incident_id, deps=runtime.deps))
        except Exception as exc:
            raise ToolFailed(str(exc)) from None

    async def incident_alerts(arguments: dict[str, Any]) -> str:
        try:
            incident_id = str(arguments.get("incident_id") or "")
            async with _reading(runtime, scope) as (conn, actor):
                return encode(await incident_service.incident_alerts(
                    conn, actor, incident_id=incident_id, limit=50))
        except Exception as exc:
            raise ToolFailed(str(exc)) from None

    incident_id = {"type": "object", "properties": {
        "incident_id": {"type": "string", "description": "24-hex incident id"}},
        "required": ["incident_id"]}
    return [
        AgentTool(
            name="dutyline_list_incidents",
            description="List recent incidents of this account (newest first, at most 20).",
            parameters={"type": "object", "properties": {
                "hours": {"type": "integer", "description": "look back this many hours (24)"},
                "progress": {"type": "string", "description": "Triggered, Processing or Closed"},
                "severity": {"type": "string", "description": "Critical, Warning or Info"},
            }},
            timeout_s=INCIDENT_TOOL_TIMEOUT_S, call=list_incidents,
        ),
        AgentTool(name="dutyline_get_incident", description="Read one incident in full.",
                  parameters=incident_id, timeout_s=INCIDENT_TOOL_TIMEOUT_S, call=get_incident),
        AgentTool(name="dutyline_incident_alerts", description="List the alerts of an incident.",
                  parameters=incident_id, timeout_s=INCIDENT_TOOL_TIMEOUT_S,
                  call=incident_alerts),
    ]


# --- monitored targets (read-only; the creator's alert rule permission) ---------------------

MONIT_TOOL_TIMEOUT_S = 40.0  # a target's probes, then up to 8 tools' queries


def monit_tools(runtime: Runtime, account_id: int, owner_id: int) -> list[AgentTool]:
    """The catalogue and invocation of tools over a monitored target (`host:web-01`), read as
    the rule's creator with no more than the alert rule permission they hold."""

    @asynccontextmanager
    async def reading() -> AsyncIterator[tuple[AsyncConnection, Actor]]:
        async with runtime.db.transaction(write=False) as conn:
            yield conn, person_actor(account_id, owner_id, runtime.clock,
                                     person_name="automation",
                                     permissions=frozenset({ALERT_RULE_MANAGE}))

    def target(arguments: dict[str, Any]) -> tuple[str, str]:
        return (str(arguments.get("target_locator") or ""),
                str(arguments.get("target_kind") or ""))

    async def catalog(arguments: dict[str, Any]) -> str:
        locator, kind = target(arguments)
        try:
            async with reading() as (conn, actor):
                found = await monit_service.tools_catalog(
                    conn, actor, locator=locator, target_kind=kind, account_id=0,
                    deps=runtime.deps)
        except ApiError as exc:
            raise ToolFailed(f"{exc.code}: {exc}") from None
        return _clip(msgspec.json.encode(found).decode())

    async def invoke(arguments: dict[str, Any]) -> str:
        locator, kind = target(arguments)
        raw = arguments.get("tools")
        if not isinstance(raw, list) or not raw:
            raise ToolFailed("the argument 'tools' must be a non-empty array of {tool, params}")
        try:
            calls = msgspec.convert(raw, list[monit_service.InvokeTool])
        except msgspec.ValidationError as exc:
            raise ToolFailed(f"tools: {exc}") from None
        if len(calls) > 8:
            raise ToolFailed("at most 8 tools per call")
        try:
            async with reading() as (conn, actor):
                found = await monit_service.tools_invoke(
                    conn, actor, locator=locator, target_kind=kind, calls=calls,
                    toolset_hash="", account_id=0, deps=runtime.deps)
        except ApiError as exc:
            raise ToolFailed(f"{exc.code}: {exc}") from None
        return _clip(msgspec.json.encode(found).decode())

    locator = {"target_locator": {"type": "string", "description":
                                  "the target, e.g. host:web-01 or mysql:prod-master"},
               "target_kind": {"type": "string", "description": "host or mysql (optional)"}}
    return [
        AgentTool(
            name="dutyline_monit_tools_catalog",
            description="List the diagnostic tools of a monitored target (a host or a MySQL "
                        "server the account's Prometheus data sources scrape), with each "
                        "tool's JSON Schema of params.",
            parameters={"type": "object", "properties": locator,
                        "required": ["target_locator"]},
            timeout_s=MONIT_TOOL_TIMEOUT_S, call=catalog,
        ),
        AgentTool(
            name="dutyline_monit_tools_invoke",
            description="Run up to 8 tools of a monitored target's catalogue at once; each "
                        "result has `data` ({summary, data}) or an `error`.",
            parameters={"type": "object", "properties": {**locator, "tools": {
                "type": "array", "maxItems": 8, "items": {"type": "object", "properties": {
                    "tool": {"type": "string"}, "params": {"type": "object"}},
                    "required": ["tool"]}}}, "required": ["target_locator", "tools"]},
            timeout_s=MONIT_TOOL_TIMEOUT_S, call=invoke,
        ),
    ]


async def toolbox(
    runtime: Runtime, *, account_id: int, team_id: int, owner_id: int,
    problems: list[str],
) -> list[AgentTool]:
    """Every tool of a run in this scope; servers that cannot be listed go to `problems`."""
    system = system_actor(account_id, runtime.clock)
    async with runtime.db.transaction(write=False) as conn:
        mcp_targets = await mcp_service.enabled_targets(
            conn, system, team_ids=[team_id] if team_id else [], deps=runtime.deps)
        agents = await a2a_service.enabled_targets(conn, system, team_id=team_id,
                                                   deps=runtime.deps)
        # Monitored targets are the account's, not a team's: only on the authority of a
        # creator who may read them (checked per run, so a role change applies next time).
        may_monitor = bool(owner_id) and ALERT_RULE_MANAGE in await (
            role_service.member_permissions(conn, system, member_id=owner_id))
    tools = await mcp_tools(runtime, mcp_targets, problems)
    tools += a2a_tools(runtime, agents)
    tools += incident_tools(runtime, ReadScope(account_id, owner_id, team_id))
    if may_monitor:
        tools += monit_tools(runtime, account_id, owner_id)
    # Two tools of one name would be ambiguous to the model: keep the first.
    unique: dict[str, AgentTool] = {}
    for t in tools:
        unique.setdefault(t.name, t)
    return list(unique.values())
