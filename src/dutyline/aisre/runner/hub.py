"""Routing tasks to runners, whichever server process holds a runner's socket.

Several dutyline processes may serve one database; a runner is connected to one of them (the
worknode row's `holder`). The process that runs an agent loop needs the runner's tools, and
may not be that one. The choice: **the database carries the task** — no extra moving part,
and the same on SQLite (one process) and PostgreSQL (many):

- Every task is a `runner_task` row. When this process holds the socket, it sends the task at
  once and waits on an in-memory future (the fast path; the row is the record).
- Otherwise the row is written `pending`; the holder polls `runner_task` for its worknodes
  (every poll interval, only while it holds a socket), claims the row (`pending -> sent`, one
  winner), sends it, appends the runner's `task.output` chunks to the row and writes the
  `task.result` back. The requester polls the row for output and the outcome.
- On timeout the requester sends `task.cancel` itself (local) or sets `cancel_requested`,
  which the holder relays as `task.cancel`. A runner that disconnects fails its tasks at once.

The relay costs one indexed query per poll interval (`runner_relay_poll_seconds`, 0.2 s) per
process that holds runners. With Redis, the writer of a row also rings a bell (bell.py: the
holder on `work:<worknode>`, the requester on `task:<task>`) so the other side reads it at
once; the polling stays as the fallback, so a lost ring delays a task by one interval and
loses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from starlette.websockets import WebSocket

from dutyline.aisre.runner import protocol, service
from dutyline.aisre.runner import repository as repo
from dutyline.aisre.runner.bell import TASK, WORK, RelayBell
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor
from dutyline.kit.ids import prefixed_id

log = structlog.get_logger("dutyline.runner")

MAX_RESULT_CHARS = 64_000
# Tasks are a trail of what ran; rows older than this are dropped by the relay loop.
TASK_RETENTION_MS = 7 * 24 * 3600 * 1000

OutputFn = Callable[[str, str], Awaitable[None]]  # (stream, data)


class RunnerUnavailable(Exception):
    """The worknode does not exist, is offline, or disconnected during the task."""


class TaskTimedOut(Exception):
    pass


@dataclass(frozen=True)
class TaskOutcome:
    success: bool
    result: Any
    error: str
    exit_code: int


@dataclass
class Connection:
    worknode_id: str
    account_id: int
    key_id: str
    websocket: WebSocket
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def send(self, text: str) -> None:
        async with self.lock:
            await self.websocket.send_text(text)


@dataclass
class _Waiter:
    worknode_id: str
    future: asyncio.Future[TaskOutcome]
    on_output: OutputFn | None


def _outcome(row: Any) -> TaskOutcome:
    result: Any = None
    if row.result:
        with contextlib.suppress(ValueError):
            result = json.loads(row.result)
    return TaskOutcome(success=row.status == "succeeded", result=result, error=row.error,
                       exit_code=row.exit_code)


class RunnerHub:
    """This process's runner sockets and the tasks waiting on them."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.holder = f"{socket.gethostname()[:30]}:{os.getpid()}:{secrets.token_hex(4)}"
        self.connections: dict[str, Connection] = {}
        self._waiters: dict[str, _Waiter] = {}  # local requesters, by task_id
        self._relayed: dict[str, str] = {}  # task_id -> worknode_id, for other processes
        self._mcp: dict[str, tuple[str, asyncio.Future[TaskOutcome]]] = {}  # by call_id
        self._relay_task: asyncio.Task[None] | None = None
        self.poll_s = runtime.settings.runner_relay_poll_seconds
        self._bell: RelayBell | None = None
        if runtime.settings.redis_url:
            self._bell = RelayBell(runtime.settings.redis_url, self._on_ring)
        # Set by a ring: work for one of our worknodes; a relayed task of ours changed.
        self._work = asyncio.Event()
        self._task_changed: dict[str, asyncio.Event] = {}

    def now_ms(self) -> int:
        return int(self.runtime.clock.now() * 1000)

    async def close(self) -> None:
        if self._relay_task is not None:
            self._relay_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._relay_task
        if self._bell is not None:
            await self._bell.close()

    # --- wake-ups (bell.py) -----------------------------------------------------------------

    def _on_ring(self, name: str) -> None:
        if name.startswith(WORK):
            if name.removeprefix(WORK) in self.connections:
                self._work.set()
        elif name.startswith(TASK):
            event = self._task_changed.get(name.removeprefix(TASK))
            if event is not None:
                event.set()

    async def _ring(self, name: str) -> None:
        if self._bell is not None:
            await self._bell.ring(name)

    async def _listen(self) -> None:
        """Subscribe before writing what another process will answer, so its ring is heard."""
        if self._bell is not None:
            await self._bell.start()

    async def _nap(self, event: asyncio.Event, timeout_s: float) -> None:
        """Until a ring sets `event`, or the poll interval is over."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await event.wait()

    # --- connections ------------------------------------------------------------------------

    async def attach(self, connection: Connection) -> None:
        old = self.connections.get(connection.worknode_id)
        self.connections[connection.worknode_id] = connection
        if old is not None:  # the same worknode connected again: the new socket wins
            await self._fail_tasks_of(old.worknode_id, "the runner reconnected")
            with contextlib.suppress(Exception):
                await old.websocket.close(4000)
        if self._relay_task is None or self._relay_task.done():
            await self._listen()
            self._relay_task = asyncio.create_task(self._relay_loop())

    async def detach(self, connection: Connection) -> bool:
        """Forget the connection; False when a newer one of the worknode replaced it."""
        if self.connections.get(connection.worknode_id) is not connection:
            return False
        del self.connections[connection.worknode_id]
        await self._fail_tasks_of(connection.worknode_id, "the runner disconnected")
        return True

    async def _fail_tasks_of(self, worknode_id: str, reason: str) -> None:
        for waiter in self._waiters.values():
            if waiter.worknode_id == worknode_id and not waiter.future.done():
                waiter.future.set_exception(RunnerUnavailable(reason))
        for task_id, owner in list(self._relayed.items()):
            if owner == worknode_id:
                del self._relayed[task_id]
                await self._finish_row(
                    task_id, {"status": "failed", "error": reason, "exit_code": 1}, ring=True)

    # --- frames from runners ----------------------------------------------------------------

    # A runner's frames name a task (or call) by id; each is taken only from the connection
    # of the worknode the task was sent to. A runner that learns another task's id (another
    # worknode's, another account's) cannot answer it or write into its output.

    async def on_output(self, connection: Connection, payload: protocol.TaskOutput) -> None:
        """Streamed output: to the local requester's callback, or onto the task's row for a
        requester in another process. A failure to store a chunk loses that chunk only, never
        the connection (the task's result still carries the whole output)."""
        try:
            waiter = self._waiters.get(payload.task_id)
            if waiter is not None:
                if waiter.on_output is not None and waiter.worknode_id == connection.worknode_id:
                    await waiter.on_output(payload.stream, payload.data)
                return
            if self._relayed.get(payload.task_id) == connection.worknode_id:
                chunk = json.dumps({"stream": payload.stream, "data": payload.data}) + "\n"
                async with self.runtime.db.transaction(write=True) as conn:
                    await repo.append_output(conn, payload.task_id, chunk, self.now_ms())
                await self._ring(TASK + payload.task_id)
        except Exception as exc:
            log.warning("could not store runner output", task_id=payload.task_id,
                        error=repr(exc))

    async def on_result(self, connection: Connection, payload: protocol.TaskResult) -> None:
        result_text = bytes(payload.result).decode()
        if result_text == "null":
            result_text = ""
        values = {
            "status": "succeeded" if payload.success else "failed",
            "result": result_text[:MAX_RESULT_CHARS * 4], "error": payload.error[:8000],
            "exit_code": payload.exit_code,
        }
        waiter = self._waiters.get(payload.task_id)
        if waiter is not None:
            if waiter.worknode_id != connection.worknode_id:
                return
            if not waiter.future.done():
                result: Any = None
                with contextlib.suppress(ValueError):
                    result = json.loads(result_text) if result_text else None
                waiter.future.set_result(TaskOutcome(
                    success=payload.success, result=result, error=payload.error,
                    exit_code=payload.exit_code))
            await self._finish_row(payload.task_id, values)
        elif self._relayed.get(payload.task_id) == connection.worknode_id:
            del self._relayed[payload.task_id]
            await self._finish_row(payload.task_id, values, ring=True)

    def on_mcp_result(self, connection: Connection, payload: protocol.McpResult) -> None:
        called = self._mcp.get(payload.call_id)
        if called is None or called[0] != connection.worknode_id:
            return
        future = self._mcp.pop(payload.call_id)[1]
        if not future.done():
            result: Any = None
            if bytes(payload.result) not in (b"", b"null"):
                with contextlib.suppress(ValueError):
                    result = json.loads(bytes(payload.result))
            future.set_result(TaskOutcome(success=payload.success, result=result,
                                          error=payload.error, exit_code=0))

    async def _finish_row(self, task_id: str, values: dict[str, Any], *,
                          ring: bool = False) -> None:
        """Store a task's outcome; `ring` tells its requester in another process."""
        try:
            async with self.runtime.db.transaction(write=True) as conn:
                await repo.update_task(conn, task_id, {**values, "updated_at": self.now_ms()},
                                       only_status=["pending", "sent"])
        except Exception as exc:  # the record only; the requester already has its answer
            log.warning("could not record a runner task", task_id=task_id, error=repr(exc))
            return
        if ring:
            await self._ring(TASK + task_id)

    # --- tasks ------------------------------------------------------------------------------

    async def run_task(
        self, *, account_id: int, worknode_id: str, run_id: str, operation: str,
        args: dict[str, Any], timeout_s: float, on_output: OutputFn | None = None,
    ) -> TaskOutcome:
        """Send one task.request to the worknode's runner and wait for its task.result."""
        if worknode_id not in self.connections:
            await self._listen()
        now = self.now_ms()
        async with self.runtime.db.transaction(write=True) as conn:
            worknode = await service.worknode_for_run(
                conn, system_actor(account_id, self.runtime.clock), worknode_id=worknode_id)
            if worknode is None:
                raise RunnerUnavailable(f"the worknode {worknode_id!r} does not exist")
            if not service.is_online(worknode, now):
                raise RunnerUnavailable(offline_message(worknode))
            local = self.connections.get(worknode_id)
            task_id = prefixed_id("rtask")
            await repo.insert_task(conn, {
                "task_id": task_id, "account_id": account_id, "worknode_id": worknode_id,
                "run_id": run_id, "operation": operation, "args": json.dumps(args),
                "status": "sent" if local else "pending",
                "deadline_at": now + int(timeout_s * 1000), "created_at": now,
                "updated_at": now,
            })
        if local is not None:
            return await self._run_local(local, task_id, operation, args, timeout_s, on_output)
        changed = self._task_changed[task_id] = asyncio.Event()
        try:
            await self._ring(WORK + worknode_id)
            return await self._run_relayed(task_id, worknode_id, timeout_s, on_output, changed)
        finally:
            self._task_changed.pop(task_id, None)

    def _request(self, task_id: str, operation: str, args: dict[str, Any]) -> str:
        return protocol.frame(protocol.TASK_REQUEST, {
            "task_id": task_id, "trace_id": task_id, "source_instance_id": self.holder,
            "operation": operation, "args": args}, self.now_ms())

    async def _run_local(
        self, connection: Connection, task_id: str, operation: str, args: dict[str, Any],
        timeout_s: float, on_output: OutputFn | None,
    ) -> TaskOutcome:
        future: asyncio.Future[TaskOutcome] = asyncio.get_running_loop().create_future()
        self._waiters[task_id] = _Waiter(connection.worknode_id, future, on_output)
        try:
            try:
                await connection.send(self._request(task_id, operation, args))
            except Exception as exc:
                raise RunnerUnavailable(f"the runner could not be reached: {exc}") from None
            try:
                async with asyncio.timeout(timeout_s):
                    return await asyncio.shield(future)
            except TimeoutError:
                with contextlib.suppress(Exception):
                    await connection.send(protocol.frame(
                        protocol.TASK_CANCEL, {"task_id": task_id}, self.now_ms()))
                await self._finish_row(task_id, {"status": "timed_out",
                                                 "error": "timed out; task.cancel sent"})
                raise TaskTimedOut(task_id) from None
        finally:
            self._waiters.pop(task_id, None)

    async def _run_relayed(
        self, task_id: str, worknode_id: str, timeout_s: float, on_output: OutputFn | None,
        changed: asyncio.Event,
    ) -> TaskOutcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        seen = 0
        while True:
            changed.clear()  # before the read: a ring after it wakes the next nap
            async with self.runtime.db.transaction(write=False) as conn:
                row = await repo.get_task(conn, task_id)
            if row is None:
                raise RunnerUnavailable("the task was deleted")
            if on_output is not None and len(row.output) > seen:
                for line in row.output[seen:].splitlines():
                    with contextlib.suppress(ValueError, TypeError, AttributeError):
                        chunk = json.loads(line)
                        await on_output(str(chunk.get("stream", "")), str(chunk.get("data", "")))
                seen = len(row.output)
            if row.status in ("succeeded", "failed"):
                if row.status == "failed" and row.error in (
                        "the runner disconnected", "the runner reconnected") and not row.result:
                    raise RunnerUnavailable(row.error)
                return _outcome(row)
            if loop.time() >= deadline:
                async with self.runtime.db.transaction(write=True) as conn:
                    now = self.now_ms()
                    # Never sent: it simply expires. Sent: the holder relays task.cancel.
                    if not await repo.update_task(conn, task_id, {
                            "status": "timed_out", "error": "timed out before it was sent",
                            "updated_at": now}, only_status=["pending"]):
                        await repo.update_task(conn, task_id, {
                            "cancel_requested": True, "updated_at": now}, only_status=["sent"])
                await self._ring(WORK + worknode_id)
                raise TaskTimedOut(task_id)
            await self._nap(changed, min(self.poll_s, max(0.0, deadline - loop.time())))

    async def _relay_loop(self) -> None:
        """Send the tasks other processes wrote for our runners, and their cancels."""
        last_cleanup = 0
        while self.connections:
            self._work.clear()  # before the read: a ring after it wakes the next nap
            try:
                await self._relay_once()
                now = self.now_ms()
                if now - last_cleanup > 3600_000:
                    last_cleanup = now
                    async with self.runtime.db.transaction(write=True) as conn:
                        await repo.delete_tasks_before(conn, now - TASK_RETENTION_MS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep relaying; a missed poll only delays a task
                log.warning("runner task relay failed", error=repr(exc))
            await self._nap(self._work, self.poll_s)

    async def _relay_once(self) -> None:
        async with self.runtime.db.transaction(write=False) as conn:
            work = await repo.relay_work(conn, list(self.connections))
        for row in work:
            connection = self.connections.get(row.worknode_id)
            if connection is None or row.task_id in self._waiters:
                continue
            now = self.now_ms()
            if row.status == "pending":
                async with self.runtime.db.transaction(write=True) as conn:
                    claimed = await repo.update_task(conn, row.task_id, {
                        "status": "sent", "updated_at": now}, only_status=["pending"])
                if not claimed:
                    continue
                self._relayed[row.task_id] = row.worknode_id
                try:
                    args = json.loads(row.args)
                except ValueError:
                    args = {}
                with contextlib.suppress(Exception):
                    await connection.send(self._request(row.task_id, row.operation, args))
            else:  # sent, and its requester gave up: cancel it on the runner
                self._relayed.pop(row.task_id, None)
                with contextlib.suppress(Exception):
                    await connection.send(protocol.frame(
                        protocol.TASK_CANCEL, {"task_id": row.task_id}, now))
                async with self.runtime.db.transaction(write=True) as conn:
                    await repo.update_task(conn, row.task_id, {
                        "status": "timed_out", "cancel_requested": False,
                        "error": "timed out; task.cancel sent", "updated_at": now},
                        only_status=["sent"])

    async def mcp_call(
        self, worknode_id: str, *, server: dict[str, Any], tool_name: str,
        arguments: dict[str, Any], timeout_s: float,
    ) -> TaskOutcome:
        """An `mcp.call` frame to a runner this process holds (the task path, operation
        mcp_call, works from any process and is what the agent loop uses)."""
        connection = self.connections.get(worknode_id)
        if connection is None:
            raise RunnerUnavailable(f"the worknode {worknode_id!r} is not connected here")
        call_id = prefixed_id("mcall")
        future: asyncio.Future[TaskOutcome] = asyncio.get_running_loop().create_future()
        self._mcp[call_id] = (worknode_id, future)
        try:
            await connection.send(protocol.frame(protocol.MCP_CALL, {
                "call_id": call_id, "server": server, "tool_name": tool_name,
                "arguments": arguments}, self.now_ms()))
            async with asyncio.timeout(timeout_s):
                return await future
        except TimeoutError:
            raise TaskTimedOut(call_id) from None
        finally:
            self._mcp.pop(call_id, None)


def offline_message(worknode: Any) -> str:
    if not worknode.holder:
        return (f"the BYOC runner of worknode {worknode.name!r} ({worknode.worknode_id}) is "
                "offline: no runner is connected with one of its keys")
    return (f"the BYOC runner of worknode {worknode.name!r} ({worknode.worknode_id}) is "
            "offline: no heartbeat in the last "
            f"{service.ONLINE_WINDOW_MS // 1000} s")


def hub_of(runtime: Runtime) -> RunnerHub:
    """The process's hub, made on first use."""
    hub = runtime.runner_hub
    if hub is None:
        hub = runtime.runner_hub = RunnerHub(runtime)
    assert isinstance(hub, RunnerHub)
    return hub
