"""Rules of MCP servers: names, transports, guarded URLs, write-only header secrets, who may see
and edit what, and the live probe of `get`."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

import msgspec
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.mcp import repository as repo
from dutyline.aisre.mcp.gateway import McpError, McpGateway, McpTarget, Tool
from dutyline.aisre.mcp.schemas import (
    McpServerCreateRequest,
    McpServerListRequest,
    McpServerListResponse,
    McpServerLookup,
    McpServerRecord,
    McpServerUpdateRequest,
    McpTool,
)
from dutyline.aisre.scope import TeamScope, in_team_scope
from dutyline.api import errors
from dutyline.api.operation import Context
from dutyline.api.runtime import Runtime
from dutyline.kit.ids import prefixed_id
from dutyline.kit.origin import same_origin
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, check_url
from dutyline.kit.secretbox import SecretBox
from dutyline.platform.permissions import MCP_MANAGE
from dutyline.platform.team import service as team_service

DEFAULT_CONNECT_TIMEOUT = 10
DEFAULT_CALL_TIMEOUT = 60
MASK = "******"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# Headers the transport owns; letting a user set them would break or smuggle requests.
_RESERVED_HEADERS = frozenset({
    "host", "content-length", "content-type", "transfer-encoding", "connection", "upgrade",
    "te", "trailer", "keep-alive", "accept", "mcp-session-id", "mcp-protocol-version",
    "proxy-authorization", "proxy-connection",
})
_MAX_STORED_DESCRIPTION = 1024


def policy_of(runtime: Runtime) -> OutboundPolicy:
    return runtime.outbound_policy()


def gateway_of(runtime: Runtime) -> McpGateway:
    return McpGateway(policy_of(runtime))


# --- operations ---------------------------------------------------------------------------


async def create_server(ctx: Context, req: McpServerCreateRequest) -> McpServerRecord:
    account_id = ctx.caller.account_id
    name = _server_name(req.server_name)
    team_id = await _editable_team(ctx, req.team_id)
    if await repo.name_taken(ctx.conn, account_id, name.lower()):
        raise errors.invalid("server_name", "already exists")
    _check_environment(req.transport, req.environment_kind)
    url = await _checked_url(ctx, req.transport, req.url)
    headers = _validated_headers(req.headers, {})
    now = ctx.now_ms
    server_id = prefixed_id("mcp")
    values: dict[str, Any] = {
        "server_id": server_id,
        "account_id": account_id,
        "team_id": team_id,
        "server_name": name,
        "name_key": name.lower(),
        "description": _description(req.description),
        "transport": req.transport,
        "url": url,
        "environment_kind": req.environment_kind,
        "environment_id": req.environment_id.strip(),
        "connect_timeout": req.connect_timeout or DEFAULT_CONNECT_TIMEOUT,
        "call_timeout": req.call_timeout or DEFAULT_CALL_TIMEOUT,
        **_sealed(ctx.runtime.secrets, headers),
        "auth_mode": req.auth_mode,
        "status": req.status,
        "created_by": ctx.caller.person_id,
        "created_at": now,
        "updated_at": now,
    }
    try:
        await repo.insert_server(ctx.conn, values)
    except IntegrityError:
        # Lost a race with a concurrent create of the same name.
        raise errors.invalid("server_name", "already exists") from None
    ctx.audit_targets.append(server_id)
    row = await _visible(ctx, server_id)
    return _record(row, can_edit=True)


async def get_server(ctx: Context, req: McpServerLookup) -> McpServerRecord:
    """The record, with its tools probed live. A failed probe still answers, with list_error."""
    row = await _visible(ctx, req.server_id, with_secrets=True)
    gateway = gateway_of(ctx.runtime)
    probe: dict[str, Any] = {"probed_at": ctx.now_ms}
    try:
        tools = await gateway.list_tools(target_of(row, ctx.runtime.secrets))
        probe.update(_tool_values(tools), list_error="")
    except McpError as exc:
        # Keep the last good tool summary; the error says why it may be stale.
        probe["list_error"] = exc.reason
    # The probe result is a cache of the server's state. It is written after the probe, in
    # the write phase the request switches to then (api/transaction.py), as A2A's card
    # fetches are: no write lock is held while the remote server answers.
    await ctx.begin_writes()
    await repo.update_server(ctx.conn, row.account_id, row.server_id, probe)
    merged = {**row._mapping, **probe}
    return _record(merged, can_edit=await _can_edit(ctx, row.team_id))


async def list_servers(ctx: Context, req: McpServerListRequest) -> McpServerListResponse:
    """Visible servers, a page at a time; never contacts a server."""
    caller = ctx.caller
    scope = await TeamScope.of(ctx.actor)
    team_ids = scope.team_ids or frozenset()
    include_account = req.include_account and req.scope in ("", "all", "account")
    include_team = req.scope in ("", "all", "team")
    total, rows = await repo.list_page(
        ctx.conn, scope, include_account=include_account, include_team=include_team,
        only_team_ids=req.team_ids, query=req.query.strip(), status=None,
        offset=req.offset, limit=req.limit,
    )
    manage = caller.has(MCP_MANAGE)
    servers = [
        _record(r, can_edit=manage and (caller.is_admin or (r.team_id != 0 and
                                                             r.team_id in team_ids)))
        for r in rows
    ]
    return McpServerListResponse(total=total, servers=servers)


async def update_server(ctx: Context, req: McpServerUpdateRequest) -> McpServerRecord:
    row = await _editable(ctx, req.server_id, with_secrets=True)
    account_id = ctx.caller.account_id
    values: dict[str, Any] = {}
    if req.server_name is not None:
        name = _server_name(req.server_name)
        if await repo.name_taken(ctx.conn, account_id, name.lower(), except_id=row.server_id):
            raise errors.invalid("server_name", "already exists")
        values.update(server_name=name, name_key=name.lower())
    if req.description is not None:
        values["description"] = _description(req.description)
    if req.team_id is not None and req.team_id != row.team_id:
        values["team_id"] = await _editable_team(ctx, req.team_id)
    transport = req.transport or row.transport
    kind = row.environment_kind if req.environment_kind is None else req.environment_kind
    _check_environment(transport, kind)
    values.update(transport=transport, environment_kind=kind)
    if req.environment_id is not None:
        values["environment_id"] = req.environment_id.strip()
    if req.url is not None or req.transport is not None:
        values["url"] = await _checked_url(
            ctx, transport, row.url if req.url is None else req.url
        )
    if req.connect_timeout is not None:
        values["connect_timeout"] = req.connect_timeout or DEFAULT_CONNECT_TIMEOUT
    if req.call_timeout is not None:
        values["call_timeout"] = req.call_timeout or DEFAULT_CALL_TIMEOUT
    # Stored headers were entered for the old URL's origin: a move elsewhere drops them
    # unless this update supplies them anew (kit/origin.py).
    moved = "url" in values and not same_origin(row.url, values["url"])
    if req.headers is not None:
        old = {} if moved else _open_headers(ctx.runtime.secrets, row.headers_encrypted)
        if moved and MASK in req.headers.values():
            raise errors.invalid(
                "headers", "must be sent in full: the url moved to another origin")
        values.update(_sealed(ctx.runtime.secrets, _validated_headers(req.headers, old)))
    elif moved and row.headers_encrypted:
        values.update(_sealed(ctx.runtime.secrets, {}))
    if req.auth_mode is not None:
        values["auth_mode"] = req.auth_mode
    values["updated_at"] = ctx.now_ms
    try:
        await repo.update_server(ctx.conn, account_id, row.server_id, values)
    except IntegrityError:
        raise errors.invalid("server_name", "already exists") from None
    ctx.audit_targets.append(row.server_id)
    fresh = await _visible(ctx, row.server_id)
    return _record(fresh, can_edit=await _can_edit(ctx, fresh.team_id))


async def delete_server(ctx: Context, req: McpServerLookup) -> None:
    row = await _editable(ctx, req.server_id)
    await repo.delete_server(ctx.conn, ctx.caller.account_id, row.server_id)
    ctx.audit_targets.append(row.server_id)


async def set_status(ctx: Context, req: McpServerLookup, status: str) -> None:
    """enable/disable: only a real change is accepted (contract: an enabled server → 400)."""
    row = await _editable(ctx, req.server_id)
    ctx.audit_targets.append(row.server_id)
    before = "disabled" if status == "enabled" else "enabled"
    changed = await repo.update_server(
        ctx.conn, ctx.caller.account_id, row.server_id,
        {"status": status, "updated_at": ctx.now_ms}, only_status=before,
    )
    if not changed:
        reason = "is already enabled" if status == "enabled" else "is already disabled"
        raise errors.invalid("server_id", reason)


# --- for the agent loop --------------------------------------------------------------------


async def enabled_targets(
    conn: AsyncConnection, runtime: Runtime, account_id: int, team_ids: Collection[int]
) -> list[McpTarget]:
    """The enabled HTTP servers a run in this scope may use (account-level + these teams)."""
    rows = await repo.enabled_in_scope(conn, account_id, team_ids)
    return [
        target_of(r, runtime.secrets) for r in rows if r.transport in ("streamable-http", "sse")
    ]


def target_of(row: Any, secrets: SecretBox) -> McpTarget:
    return McpTarget(
        server_id=row.server_id,
        url=row.url,
        transport=row.transport,
        headers=_open_headers(secrets, row.headers_encrypted),
        connect_timeout=float(row.connect_timeout),
        call_timeout=float(row.call_timeout),
    )


# --- rules --------------------------------------------------------------------------------


async def _visible(ctx: Context, server_id: str, *, with_secrets: bool = False) -> Any:
    row = await repo.find_visible(ctx.conn, await TeamScope.of(ctx.actor), server_id,
                                  with_secrets=with_secrets)
    if row is None:
        raise errors.not_found("MCP server", server_id)
    return row


async def _editable(ctx: Context, server_id: str, *, with_secrets: bool = False) -> Any:
    row = await _visible(ctx, server_id, with_secrets=with_secrets)
    if not await _can_edit(ctx, row.team_id):
        raise errors.AccessDenied()
    return row


async def _can_edit(ctx: Context, team_id: int) -> bool:
    """Account-level servers: owner/admin; team servers: a member of that team (or owner/
    admin). Always with MCP management."""
    return ctx.caller.has(MCP_MANAGE) and await in_team_scope(ctx.actor, team_id)


async def _editable_team(ctx: Context, team_id: int) -> int:
    """A team the caller may put a server in (0: account-level)."""
    teams = [team_id] if team_id else []
    if teams and not await team_service.existing_team_ids(ctx.conn, ctx.caller.account_id, teams):
        raise errors.not_found("team", team_id)
    if not await _can_edit(ctx, team_id):
        raise errors.AccessDenied()
    return team_id


def _server_name(raw: str) -> str:
    name = raw.strip()
    if not _NAME.fullmatch(name):
        raise errors.invalid(
            "server_name", "must start with a letter and use only letters, digits, _ and -"
        )
    return name


def _description(raw: str) -> str:
    text = raw.strip()
    if not text:
        raise errors.invalid("description", "is required")
    return text


def _check_environment(transport: str, environment_kind: str) -> None:
    if transport == "stdio" and environment_kind != "byoc":
        raise errors.invalid("transport", "stdio is only allowed with environment_kind byoc")


async def _checked_url(ctx: Context, transport: str, raw: str) -> str:
    url = raw.strip()
    if transport == "stdio":
        # Runs on the customer's runner; we never connect to it.
        return url
    if not url:
        raise errors.invalid("url", "is required")
    try:
        await check_url(url, policy_of(ctx.runtime))
    except OutboundBlocked as exc:
        raise errors.InvalidParameter(
            "Invalid parameter {field}: the address is refused ({detail})",
            field="url", detail=exc.reason,
        ) from None
    return url


def _validated_headers(given: Mapping[str, str], old: Mapping[str, str]) -> dict[str, str]:
    """The new header set. A masked value keeps the stored secret of the same name."""
    old_by_key = {k.lower(): v for k, v in old.items()}
    seen: set[str] = set()
    result: dict[str, str] = {}
    for raw_name, value in given.items():
        name = raw_name.strip()
        key = name.lower()
        if not _HEADER_NAME.fullmatch(name) or key in _RESERVED_HEADERS:
            raise errors.invalid("headers", "has a header name that is not allowed")
        if key in seen:
            raise errors.invalid("headers", "names a header twice")
        seen.add(key)
        if value == MASK:
            if key not in old_by_key:
                raise errors.invalid("headers", "has a masked value for a header never set")
            value = old_by_key[key]
        elif any(c in value for c in "\r\n\0"):
            raise errors.invalid("headers", "has a value with a line break")
        result[name] = value
    return result


def _sealed(secrets: SecretBox, headers: Mapping[str, str]) -> dict[str, Any]:
    return {
        "headers_encrypted": secrets.seal(json.dumps(dict(headers))) if headers else "",
        "header_names": json.dumps(list(headers)),
    }


def _open_headers(secrets: SecretBox, sealed: str) -> dict[str, str]:
    if not sealed:
        return {}
    opened: dict[str, str] = json.loads(secrets.open(sealed))
    return opened


def _tool_values(tools: list[Tool]) -> dict[str, Any]:
    summary = [
        {"name": t.name, "description": t.description[:_MAX_STORED_DESCRIPTION],
         "input_schema": t.input_schema}
        for t in tools
    ]
    return {"tools": json.dumps(summary), "tool_count": len(tools)}


_tool_list = msgspec.json.Decoder(list[McpTool])


def _record(row: Any, *, can_edit: bool) -> McpServerRecord:
    m = row if isinstance(row, Mapping) else row._mapping
    return McpServerRecord(
        server_id=m["server_id"],
        account_id=m["account_id"],
        team_id=m["team_id"],
        can_edit=can_edit,
        server_name=m["server_name"],
        description=m["description"],
        transport=m["transport"],
        url=m["url"],
        environment_kind=m["environment_kind"],
        environment_id=m["environment_id"],
        status=m["status"],
        connect_timeout=m["connect_timeout"],
        call_timeout=m["call_timeout"],
        tool_count=m["tool_count"],
        tools=_tool_list.decode(m["tools"] or "[]"),
        headers=dict.fromkeys(json.loads(m["header_names"] or "[]"), MASK),
        auth_mode=m["auth_mode"],
        list_error=m["list_error"],
        probed_at=m["probed_at"],
        created_by=m["created_by"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )
