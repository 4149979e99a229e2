"""A BYOC runner peer written from the published runner's protocol
(github.com/flashcatcloud/flashduty-runner: protocol/messages.go, ws/client.go, ws/handler.go),
so the tests talk to dutyline exactly as the runner does:

- it dials `ws://host/safari/worknode/ws?token=<key>` (or, like older releases, `/runner/ws`
  with the `FD-API-KEY` header), reads one `welcome` frame, then sends `heartbeat`s;
- it runs `task.request`s as the runner's workspace does: `bash` in a real shell (streaming
  each stdout line as `task.output`, answering a BashResult), `read`/`write` (base64) under its
  workspace root, `mcp_list_tools`/`mcp_call` against a scripted MCP server; it answers every
  task with `task.result` {task_id, source_instance_id, success, result, error, exit_code};
- `task.cancel` kills the task (recorded in `cancelled`), like the runner's context cancel;
- `mcp.call` frames are answered with `mcp.result` {call_id, success, result};
- `hang_on` names commands it never answers, to test timeouts."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect


def frame(kind: str, payload: Any) -> str:
    return json.dumps({"id": "msg_" + secrets.token_hex(8), "type": kind, "payload": payload,
                       "timestamp": int(time.time() * 1000)})


@dataclass
class RunnerPeer:
    ws: ClientConnection
    workspace: Path
    welcome: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    hang_on: set[str] = field(default_factory=set)
    mcp_tools: list[dict[str, Any]] = field(default_factory=list)
    mcp_calls: list[dict[str, Any]] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    @property
    def worknode_id(self) -> str:
        return str(self.welcome.get("worknode_id", ""))

    async def send(self, kind: str, payload: Any) -> None:
        await self.ws.send(frame(kind, payload))

    async def heartbeat(self, *, version: str = "v0.3.1",
                        environment: dict[str, Any] | None = None) -> None:
        payload: dict[str, Any] = {"worknode_id": self.worknode_id,
                                   "name": self.welcome.get("name", ""),
                                   "labels": self.welcome.get("labels", []),
                                   "version": version}
        if environment is not None:
            payload["environment"] = environment
        await self.send("heartbeat", payload)

    async def read_loop(self) -> None:
        try:
            async for data in self.ws:
                msg = json.loads(data)
                if msg["type"] == "task.request":
                    req = msg["payload"]
                    self.requests.append(req)
                    self._tasks[req["task_id"]] = asyncio.create_task(self._execute(req))
                elif msg["type"] == "mcp.call":
                    call = msg["payload"]
                    self.mcp_calls.append(call)
                    await self.send("mcp.result", {
                        "call_id": call["call_id"], "success": True,
                        "result": {"content": f"{call['server']['name']}:{call['tool_name']}"}})
                elif msg["type"] == "task.cancel":
                    task_id = msg["payload"]["task_id"]
                    self.cancelled.append(task_id)
                    running = self._tasks.pop(task_id, None)
                    if running is not None:
                        running.cancel()
        except Exception:  # the server closed the socket
            pass
        finally:
            self.closed.set()

    async def _result(self, req: dict[str, Any], *, success: bool, result: Any = None,
                      error: str = "", exit_code: int = 0) -> None:
        await self.send("task.result", {
            "task_id": req["task_id"], "source_instance_id": req.get("source_instance_id", ""),
            "success": success, "result": result, "error": error, "exit_code": exit_code})

    async def _execute(self, req: dict[str, Any]) -> None:
        op, args = req["operation"], req.get("args") or {}
        try:
            if op == "bash":
                await self._bash(req, args)
            elif op == "read":
                content = (self.workspace / args["path"]).read_bytes()
                await self._result(req, success=True, result={
                    "content": base64.b64encode(content).decode(), "total_size": len(content)})
            elif op == "write":
                target = self.workspace / args["path"]
                target.write_bytes(base64.b64decode(args["content"]))
                await self._result(req, success=True, result={"success": True})
            elif op == "mcp_list_tools":
                await self._result(req, success=True, result={"tools": self.mcp_tools})
            elif op == "mcp_call":
                self.mcp_calls.append(args)
                await self._result(req, success=True, result={
                    "content": f"{args['server']['name']}:{args['tool_name']} -> "
                               f"{json.dumps(args['args'], sort_keys=True)}"})
            else:
                await self._result(req, success=False, error=f"unknown operation: {op}",
                                   exit_code=1)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._result(req, success=False, error=str(exc), exit_code=1)
        finally:
            self._tasks.pop(req["task_id"], None)

    async def _bash(self, req: dict[str, Any], args: dict[str, Any]) -> None:
        command = args["command"]
        if command in self.hang_on:
            await asyncio.Event().wait()  # until task.cancel
        proc = await asyncio.create_subprocess_shell(
            command, cwd=self.workspace, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        stdout: list[str] = []
        try:
            assert proc.stdout is not None and proc.stderr is not None
            async for line in proc.stdout:
                text = line.decode()
                stdout.append(text)
                await self.send("task.output", {"task_id": req["task_id"], "stream": "stdout",
                                                "data": text})
            stderr = (await proc.stderr.read()).decode()
            code = await proc.wait()
        except asyncio.CancelledError:
            proc.kill()
            raise
        await self._result(req, success=True, result={
            "stdout": "".join(stdout), "stderr": stderr, "exit_code": code})


@contextlib.asynccontextmanager
async def runner_peer(
    host: str, key: str, workspace: Path, *, path: str = "/safari/worknode/ws",
    legacy_header: bool = False,
) -> AsyncIterator[RunnerPeer]:
    """Connect like the runner (a refused key raises websockets' InvalidStatus)."""
    if legacy_header:
        url, headers = f"ws://{host}{path}", {"FD-API-KEY": key, "X-Worknode-Name": "legacy"}
    else:
        url, headers = f"ws://{host}{path}?token={key}", {}
    async with connect(url, additional_headers=headers, open_timeout=10) as ws:
        welcome = json.loads(await asyncio.wait_for(ws.recv(), 5))  # ws/client.go: 5 s
        assert welcome["type"] == "welcome", welcome
        peer = RunnerPeer(ws=ws, workspace=workspace, welcome=welcome["payload"])
        peer.welcome["_top_level_worknode_id"] = welcome.get("worknode_id")
        peer.welcome["_header_worknode_id"] = ws.response.headers.get("X-Worknode-ID")
        reader = asyncio.create_task(peer.read_loop())
        try:
            yield peer
        finally:
            for task in list(peer._tasks.values()):
                task.cancel()
            await ws.close()
            with contextlib.suppress(Exception):
                await reader
