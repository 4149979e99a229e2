"""Rules of MCP servers: names, transports, guarded URLs, write-only header secrets, who may see
and edit what, and the live probe of `get`."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.mcp import repository as repo
from dutyline.aisre.mcp.gateway import McpError, McpGateway, McpTarget, Tool
from dutyline.aisre.mcp.schemas import McpServerRecord, McpTool
from dutyline.aisre.runner import service as runner_service
from dutyline.aisre.scope import (
    TeamScope,
    in_team_scope,
    require_environment_use,
)
from dutyline.api import errors, outbound_urls
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import is_mask, mask_url, secret_to_store, url_to_store
from dutyline.api.permissions import MCP_MANAGE
from dutyline.kit.ids import prefixed_id
from dutyline.kit.origin import same_origin
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox
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


def gateway_of(deps: Deps) -> McpGateway:
    return McpGateway(deps.policy)


# --- operations ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ServerSpec:
    """A server to register (create_server); 0 timeouts take the defaults."""

    server_name: str
    description: str = ""
    transport: str = "streamable-http"
    url: str = ""
    environment_kind: str = ""
    environment_id: str = ""
    connect_timeout: int = 0
    call_timeout: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    auth_mode: str = "shared"
    team_id: int = 0
    status: str = "enabled"


@dataclass(frozen=True, kw_only=True)
class ServerChanges:
    """What update_server changes of `server_id`: None keeps a field."""

    server_id: str
    server_name: str | None = None
    description: str | None = None
    transport: str | None = None
    url: str | None = None
    environment_kind: str | None = None
    environment_id: str | None = None
    connect_timeout: int | None = None
    call_timeout: int | None = None
    headers: Mapping[str, str] | None = None
    auth_mode: str | None = None
    team_id: int | None = None


@dataclass(frozen=True)
class Probe:
    """A live probe of a server's tools, read before it is stored (get_server)."""

    row: Any
    values: dict[str, Any]


@writes("/safari/mcp/server/create", MCP_MANAGE, targets=lambda record: [record.server_id])
async def create_server(
    conn: AsyncConnection, actor: Actor, *, spec: ServerSpec, deps: Deps,
) -> McpServerRecord:
    """Register a server."""
    account_id = actor.account_id
    name = _server_name(spec.server_name)
    team_id = await _editable_team(conn, actor, spec.team_id)
    if await repo.name_taken(conn, account_id, name.lower()):
        raise errors.invalid("server_name", "already exists")
    _check_environment(spec.transport, spec.environment_kind)
    await _check_worknode(conn, actor, spec.environment_kind, spec.environment_id.strip())
    url = await _checked_url(deps.policy, spec.transport,
                             url_to_store(spec.url, "", keep=False, field="url"))
    headers = _validated_headers(spec.headers, {})
    now = actor.now_ms
    server_id = prefixed_id("mcp")
    values: dict[str, Any] = {
        "server_id": server_id,
        "account_id": account_id,
        "team_id": team_id,
        "server_name": name,
        "name_key": name.lower(),
        "description": _description(spec.description),
        "transport": spec.transport,
        "url": url,
        "environment_kind": spec.environment_kind,
        "environment_id": spec.environment_id.strip(),
        "connect_timeout": spec.connect_timeout or DEFAULT_CONNECT_TIMEOUT,
        "call_timeout": spec.call_timeout or DEFAULT_CALL_TIMEOUT,
        **_sealed(deps.box, headers),
        "auth_mode": spec.auth_mode,
        "status": spec.status,
        "created_by": actor.person_id,
        "created_at": now,
        "updated_at": now,
    }
    try:
        await repo.insert_server(conn, values)
    except IntegrityError:
        # Lost a race with a concurrent create of the same name.
        raise errors.invalid("server_name", "already exists") from None
    row = await _visible(conn, actor, server_id)
    return _record(row, can_edit=True)


async def probe_server(
    conn: AsyncConnection, actor: Actor, *, server_id: str, deps: Deps,
) -> Probe:
    """The read phase of `get`: the server, with its tools probed live. A failed probe still
    answers, with list_error; the last good tool summary is kept."""
    row = await _visible(conn, actor, server_id, with_secrets=True)
    values: dict[str, Any] = {"probed_at": actor.now_ms}
    try:
        tools = await gateway_of(deps).list_tools(target_of(row, deps.box))
        values.update(_tool_values(tools), list_error="")
    except McpError as exc:
        # Keep the last good tool summary; the error says why it may be stale.
        values["list_error"] = exc.reason
    return Probe(row, values)


async def store_probe(conn: AsyncConnection, actor: Actor, *, probe: Probe) -> McpServerRecord:
    """The write phase of `get`: the probe result is a cache of the server's state, written
    once the remote server has answered (the caller switches to writing in between, see
    api/transaction.py, as A2A's card fetches do)."""
    row = probe.row
    await repo.update_server(conn, row.account_id, row.server_id, probe.values)
    merged = {**row._mapping, **probe.values}
    return _record(merged, can_edit=await _can_edit(actor, row.team_id))


def list_servers_sync(
    conn: Connection, actor: Actor, *, include_account: bool = True, scope: str = "",
    team_ids: Collection[int] | None = None, query: str = "", offset: int, limit: int,
) -> tuple[int, list[McpServerRecord]]:
    """Visible servers, a page at a time; never contacts a server."""
    team_scope = TeamScope.of_sync(conn, actor)
    own_teams = team_scope.team_ids or frozenset()
    total, rows = repo.list_page_sync(
        conn, team_scope, include_account=include_account and scope in ("", "all", "account"),
        include_team=scope in ("", "all", "team"), only_team_ids=team_ids,
        query=query.strip(), status=None, offset=offset, limit=limit,
    )
    manage = actor.has(MCP_MANAGE)
    servers = [
        _record(r, can_edit=manage and (actor.is_admin or (r.team_id != 0 and
                                                            r.team_id in own_teams)))
        for r in rows
    ]
    return total, servers


@writes("/safari/mcp/server/update", MCP_MANAGE, targets=lambda record: [record.server_id])
async def update_server(
    conn: AsyncConnection, actor: Actor, *, changes: ServerChanges, deps: Deps,
) -> McpServerRecord:
    """Change `changes.server_id`; None keeps a field, `headers` replaces the set (a masked
    value keeps the stored secret of that name)."""
    row = await _editable(conn, actor, changes.server_id, with_secrets=True)
    account_id = actor.account_id
    c = changes
    values: dict[str, Any] = {}
    if c.server_name is not None:
        name = _server_name(c.server_name)
        if await repo.name_taken(conn, account_id, name.lower(), except_id=row.server_id):
            raise errors.invalid("server_name", "already exists")
        values.update(server_name=name, name_key=name.lower())
    if c.description is not None:
        values["description"] = _description(c.description)
    if c.team_id is not None and c.team_id != row.team_id:
        values["team_id"] = await _editable_team(conn, actor, c.team_id)
    transport = c.transport or row.transport
    kind = row.environment_kind if c.environment_kind is None else c.environment_kind
    _check_environment(transport, kind)
    values.update(transport=transport, environment_kind=kind)
    if kind == "byoc":
        # What a byoc server runs (its url: a command on the runner) is the runner's business.
        require_environment_use(actor)
    if c.environment_id is not None:
        values["environment_id"] = c.environment_id.strip()
    if c.environment_id is not None or c.environment_kind is not None:
        await _check_worknode(conn, actor, kind,
                              values.get("environment_id", row.environment_id),
                              named_id=c.environment_id is not None)
    if c.url is not None or c.transport is not None:
        url = row.url if c.url is None else url_to_store(c.url, row.url, keep=True,
                                                        field="url")
        values["url"] = await _checked_url(deps.policy, transport, url)
    if c.connect_timeout is not None:
        values["connect_timeout"] = c.connect_timeout or DEFAULT_CONNECT_TIMEOUT
    if c.call_timeout is not None:
        values["call_timeout"] = c.call_timeout or DEFAULT_CALL_TIMEOUT
    # Stored headers were entered for the old URL's origin: a move elsewhere drops them
    # unless this update supplies them anew (kit/origin.py).
    moved = "url" in values and not same_origin(row.url, values["url"])
    if c.headers is not None:
        old = {} if moved else _open_headers(deps.box, row.headers_encrypted)
        if moved and MASK in c.headers.values():
            raise errors.invalid(
                "headers", "must be sent in full: the url moved to another origin")
        values.update(_sealed(deps.box, _validated_headers(c.headers, old)))
    elif moved and row.headers_encrypted:
        values.update(_sealed(deps.box, {}))
    if c.auth_mode is not None:
        values["auth_mode"] = c.auth_mode
    values["updated_at"] = actor.now_ms
    try:
        await repo.update_server(conn, account_id, row.server_id, values)
    except IntegrityError:
        raise errors.invalid("server_name", "already exists") from None
    fresh = await _visible(conn, actor, row.server_id)
    return _record(fresh, can_edit=await _can_edit(actor, fresh.team_id))


@writes("/safari/mcp/server/delete", MCP_MANAGE)
async def delete_server(conn: AsyncConnection, actor: Actor, *, server_id: str) -> str:
    """Delete a server; returns its id."""
    row = await _editable(conn, actor, server_id)
    await repo.delete_server(conn, actor.account_id, row.server_id)
    return str(row.server_id)


@writes("/safari/mcp/server/enable", MCP_MANAGE)
async def enable_server(conn: AsyncConnection, actor: Actor, *, server_id: str) -> str:
    """Enable a disabled server (an enabled one is refused); returns its id."""
    return await _set_status(conn, actor, server_id=server_id, status="enabled")


@writes("/safari/mcp/server/disable", MCP_MANAGE)
async def disable_server(conn: AsyncConnection, actor: Actor, *, server_id: str) -> str:
    """Disable an enabled server (a disabled one is refused); returns its id."""
    return await _set_status(conn, actor, server_id=server_id, status="disabled")


async def _set_status(conn: AsyncConnection, actor: Actor, *, server_id: str,
                      status: str) -> str:
    """Only a real change is accepted (contract: enabling an enabled server → 400)."""
    row = await _editable(conn, actor, server_id)
    if status == "enabled" and row.environment_kind == "byoc":
        require_environment_use(actor)
    before = "disabled" if status == "enabled" else "enabled"
    changed = await repo.update_server(
        conn, actor.account_id, row.server_id,
        {"status": status, "updated_at": actor.now_ms}, only_status=before,
    )
    if not changed:
        reason = "is already enabled" if status == "enabled" else "is already disabled"
        raise errors.invalid("server_id", reason)
    return str(row.server_id)


# --- for the agent loop --------------------------------------------------------------------


async def enabled_targets(
    conn: AsyncConnection, actor: Actor, *, team_ids: Collection[int], deps: Deps
) -> list[McpTarget]:
    """The enabled HTTP servers a run in this scope may use (account-level + these teams);
    never those that run on a BYOC runner (`byoc_targets`), which may not be reachable from
    here."""
    rows = await repo.enabled_in_scope(conn, actor.account_id, team_ids)
    return [
        target_of(r, deps.box) for r in rows
        if r.transport in ("streamable-http", "sse") and r.environment_kind != "byoc"
    ]


async def byoc_targets(
    conn: AsyncConnection, actor: Actor, *, team_ids: Collection[int], worknode_id: str,
    deps: Deps,
) -> list[tuple[str, McpTarget]]:
    """(server name, target) of the enabled servers in this scope that run on the BYOC
    runner of `worknode_id` (environment_kind byoc): a byoc run reaches them through it."""
    rows = await repo.enabled_in_scope(conn, actor.account_id, team_ids)
    return [
        (r.server_name, target_of(r, deps.box)) for r in rows
        if r.environment_kind == "byoc" and r.environment_id == worknode_id
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


async def _visible(conn: AsyncConnection, actor: Actor, server_id: str, *,
                   with_secrets: bool = False) -> Any:
    row = await repo.find_visible(conn, await TeamScope.of(actor), server_id,
                                  with_secrets=with_secrets)
    if row is None:
        raise errors.not_found("MCP server", server_id)
    return row


async def _editable(conn: AsyncConnection, actor: Actor, server_id: str, *,
                    with_secrets: bool = False) -> Any:
    row = await _visible(conn, actor, server_id, with_secrets=with_secrets)
    if not await _can_edit(actor, row.team_id):
        raise errors.AccessDenied()
    return row


async def _can_edit(actor: Actor, team_id: int) -> bool:
    """Account-level servers: owner/admin; team servers: a member of that team (or owner/
    admin). Always with MCP management."""
    return actor.has(MCP_MANAGE) and await in_team_scope(actor, team_id)


async def _editable_team(conn: AsyncConnection, actor: Actor, team_id: int) -> int:
    """A team the actor may put a server in (0: account-level)."""
    teams = [team_id] if team_id else []
    if teams and not await team_service.existing_team_ids(conn, actor, teams):
        raise errors.not_found("team", team_id)
    if not await _can_edit(actor, team_id):
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
    # Empty is allowed: the vendor's command-line client sends "" when given none.
    return raw.strip()


async def _check_worknode(conn: AsyncConnection, actor: Actor, kind: str, environment_id: str,
                          *, named_id: bool = True) -> None:
    """A byoc server runs on a worknode of the caller's account, bound by someone who may use
    worknodes; another account's worknode is as unknown as one that never existed."""
    if kind == "byoc":
        require_environment_use(actor)
        if not environment_id:
            raise errors.invalid("environment_id", "is required with environment_kind byoc")
    if not environment_id or (not named_id and kind != "byoc"):
        return
    if await runner_service.worknode_for_run(conn, actor, worknode_id=environment_id) is None:
        raise errors.invalid(
            "environment_id", "names no worknode of this account (see /safari/worknode/list)")


def _check_environment(transport: str, environment_kind: str) -> None:
    if transport == "stdio" and environment_kind != "byoc":
        raise errors.invalid("transport", "stdio is only allowed with environment_kind byoc")


async def _checked_url(policy: OutboundPolicy, transport: str, raw: str) -> str:
    url = raw.strip()
    if transport == "stdio":
        # Runs on the customer's runner; we never connect to it.
        return url
    if not url:
        raise errors.invalid("url", "is required")
    await outbound_urls.check(url, policy, field="url")
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
        if is_mask(value):
            value = secret_to_store(value, old_by_key.get(key, ""), keep=True, field="headers")
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
        url=mask_url(m["url"]),  # the credentials it carries are write-only
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
