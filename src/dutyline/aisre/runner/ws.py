"""The runner's WebSocket endpoint: `/safari/worknode/ws` (and `/runner/ws`, the path older
runner releases default to). Not an app_key operation: the runner key authenticates it, from
the `token` query parameter the runner adds to its URL (ws/client.go `Connect`), or the
`FD-API-KEY` header of older releases, or `Authorization: Bearer`.

A refused key closes the handshake before it is accepted, which uvicorn answers with HTTP 403
(the runner logs the status and retries with backoff). An accepted runner gets its
`welcome` at once (it waits 5 s for it), then every frame it sends is handled in order; its
heartbeats keep the worknode online, and each one re-checks the key, so a revoked key or a
deleted worknode drops the connection at the next heartbeat."""

from __future__ import annotations

from typing import Any

import msgspec
import structlog
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket

from dutyline.aisre.runner import keys, protocol, service
from dutyline.aisre.runner.hub import Connection, RunnerHub, hub_of
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor

log = structlog.get_logger("dutyline.runner")

CLOSE_POLICY = 1008  # RFC 6455: policy violation (a refused or revoked key)


def presented_key(websocket: WebSocket) -> str:
    key = websocket.query_params.get(protocol.KEY_QUERY, "")
    if not key:
        key = websocket.headers.get(protocol.KEY_HEADER, "")
    if not key:
        scheme, _, token = websocket.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            key = token
    return key.strip()


def routes(runtime: Runtime) -> list[BaseRoute]:
    async def endpoint(websocket: WebSocket) -> None:
        await serve_runner(runtime, websocket)

    return [WebSocketRoute(path, endpoint) for path in protocol.WS_PATHS]


async def serve_runner(runtime: Runtime, websocket: WebSocket) -> None:
    hub = hub_of(runtime)
    now = hub.now_ms()
    presented = presented_key(websocket)
    # A malformed key, or one refused moments ago, is refused before any database work:
    # a flood of wrong keys costs no transaction each (keys.MISSED, as for app keys).
    digest = keys.key_hash(presented) if keys.well_formed(presented) else ""
    if not digest or keys.MISSED.recently_missed(digest, now / 1000):
        await _refuse(websocket)
        return
    try:
        async with runtime.db.transaction(write=True) as conn:
            key, worknode = await service.open_with_key(conn, presented, now_ms=now)
            await service.mark_connected(conn, worknode.worknode_id, holder=hub.holder,
                                         now_ms=now)
    except service.KeyRefused:
        keys.MISSED.remember(digest, now / 1000)
        await _refuse(websocket)
        return
    worknode_id = str(worknode.worknode_id)
    await websocket.accept(headers=[(protocol.WORKNODE_ID_HEADER.lower().encode(),
                                     worknode_id.encode())])
    connection = Connection(worknode_id=worknode_id, account_id=int(key.account_id),
                            key_id=str(key.key_id), websocket=websocket)
    await hub.attach(connection)
    log.info("runner connected", worknode_id=worknode_id, holder=hub.holder)
    try:
        welcome = service.welcome_fields(worknode)
        await connection.send(protocol.frame(protocol.WELCOME, welcome, hub.now_ms(),
                                             worknode_id=worknode_id))
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if not await _handle(runtime, hub, connection, data):
                await websocket.close(CLOSE_POLICY)
                break
    except Exception as exc:  # a broken socket: the runner reconnects on its own
        log.info("runner connection ended", worknode_id=worknode_id, error=repr(exc))
    finally:
        if await hub.detach(connection):
            async with runtime.db.transaction(write=True) as conn:
                await service.mark_disconnected(conn, worknode_id, holder=hub.holder,
                                                now_ms=hub.now_ms())
        log.info("runner disconnected", worknode_id=worknode_id)


async def _refuse(websocket: WebSocket) -> None:
    # Never log the key itself.
    log.info("runner refused", client=str(websocket.client and websocket.client.host))
    await websocket.close(CLOSE_POLICY)


async def _handle(runtime: Runtime, hub: RunnerHub, connection: Connection,
                  data: str | bytes) -> bool:
    """Handle one frame; False to drop the connection (its key or worknode is gone)."""
    try:
        message = protocol.decode(data)
        if message.type == protocol.HEARTBEAT:
            beat = protocol.payload_of(message, protocol.Heartbeat)
            return await _heartbeat(runtime, hub, connection, beat)
        if message.type == protocol.TASK_OUTPUT:
            await hub.on_output(connection, protocol.payload_of(message, protocol.TaskOutput))
        elif message.type == protocol.TASK_RESULT:
            await hub.on_result(connection, protocol.payload_of(message, protocol.TaskResult))
        elif message.type == protocol.MCP_RESULT:
            hub.on_mcp_result(connection, protocol.payload_of(message, protocol.McpResult))
        else:
            log.debug("runner frame of unknown type ignored", type=message.type[:64])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        log.warning("malformed runner frame ignored", worknode_id=connection.worknode_id,
                 error=str(exc)[:200])
    return True


async def _heartbeat(runtime: Runtime, hub: RunnerHub, connection: Connection,
                     beat: Any) -> bool:
    async with runtime.db.transaction(write=True) as conn:
        actor = system_actor(connection.account_id, runtime.clock)
        if not await service.key_still_valid(conn, actor, key_id=connection.key_id):
            log.info("runner key revoked: disconnecting", worknode_id=connection.worknode_id)
            return False
        return await service.record_heartbeat(
            conn, connection.worknode_id, holder=hub.holder, now_ms=hub.now_ms(),
            version=beat.version, name=beat.name, labels=beat.labels,
            environment=beat.environment, metrics=beat.metrics)
