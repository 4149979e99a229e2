"""The tools of a `byoc` run: shell, files, web fetch and MCP servers, each executed by the
runner of the rule's worknode (environment_id) inside the customer's network, as a
`task.request` of the runner's protocol (aisre/runner/protocol.py; the argument and result
shapes are protocol/messages.go's ReadArgs, WriteArgs, BashArgs, WebFetchArgs, MCPCallArgs...).

Every `task.output` chunk the runner streams is stored as a `tool_output` step of the run as it
arrives; the task's result goes back to the model as the tool's answer. A task that outlives
its timeout is cancelled on the runner (`task.cancel`) and answered as an error."""

from __future__ import annotations

import base64
import binascii
import json
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.automation.tools import AgentTool, ToolFailed, tool_name
from dutyline.aisre.mcp.gateway import McpTarget
from dutyline.aisre.runner import protocol
from dutyline.aisre.runner import service as runner_service
from dutyline.aisre.runner.hub import (
    RunnerUnavailable,
    TaskOutcome,
    TaskTimedOut,
    hub_of,
    offline_message,
)
from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime

DEFAULT_TIMEOUT_S = 60
MAX_TIMEOUT_S = 600
# The runner enforces a bash command's own timeout; the server waits this much longer for the
# result before it cancels the task.
GRACE_S = 5.0
MAX_RESULT_CHARS = 16_000
MAX_OUTPUT_STEPS = 200

StepFn = Callable[[str, str, Any], Awaitable[None]]  # (kind, name, content)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + " …[truncated]"


def _seconds(value: Any, default: int = DEFAULT_TIMEOUT_S) -> int:
    try:
        seconds = int(value or default)
    except (TypeError, ValueError):
        seconds = default
    return max(1, min(seconds, MAX_TIMEOUT_S))


async def check_worknode(conn: AsyncConnection, actor: Actor, *, worknode_id: str) -> str:
    """'' when the rule's worknode is online, else why the run cannot use it."""
    worknode = await runner_service.worknode_for_run(conn, actor, worknode_id=worknode_id)
    if worknode is None:
        return (f"the rule's environment_id {worknode_id!r} names no worknode of this "
                "account: create one with /safari/worknode/create and connect a runner")
    if not runner_service.is_online(worknode, actor.now_ms):
        return offline_message(worknode)
    return ""


class RunnerTools:
    """Builds the tools of one run on one worknode."""

    def __init__(self, runtime: Runtime, *, account_id: int, worknode_id: str, run_id: str,
                 add_step: StepFn) -> None:
        self.runtime = runtime
        self.account_id = account_id
        self.worknode_id = worknode_id
        self.run_id = run_id
        self.add_step = add_step
        self.output_steps = 0

    async def task(self, name: str, operation: str, args: dict[str, Any],
                   timeout_s: float) -> TaskOutcome:
        async def on_output(stream: str, data: str) -> None:
            self.output_steps += 1
            if self.output_steps <= MAX_OUTPUT_STEPS:
                await self.add_step("tool_output", name, {"stream": stream, "data": data})
            elif self.output_steps == MAX_OUTPUT_STEPS + 1:
                await self.add_step("tool_output", name,
                                    "…further output of this run is not stored as steps")

        try:
            return await hub_of(self.runtime).run_task(
                account_id=self.account_id, worknode_id=self.worknode_id, run_id=self.run_id,
                operation=operation, args=args, timeout_s=timeout_s, on_output=on_output)
        except TaskTimedOut:
            raise ToolFailed(f"the runner did not finish within {timeout_s:g} s; the task "
                             "was cancelled on the runner") from None
        except RunnerUnavailable as exc:
            raise ToolFailed(str(exc)) from None

    def _tool(self, name: str, description: str, properties: dict[str, Any],
              required: list[str], timeout_s: float,
              call: Callable[[dict[str, Any]], Awaitable[str]]) -> AgentTool:
        return AgentTool(
            name=name, description=description,
            parameters={"type": "object", "properties": properties, "required": required},
            # The agent's own timeout stays above the task's, so the task's cancel runs first.
            timeout_s=timeout_s + GRACE_S + 5, call=call)

    def builtin(self) -> list[AgentTool]:
        async def bash(a: dict[str, Any]) -> str:
            command = str(a.get("command") or "")
            if not command.strip():
                raise ToolFailed("the argument 'command' is required")
            seconds = _seconds(a.get("timeout"))
            args: dict[str, Any] = {"command": command, "timeout": seconds}
            if a.get("workdir"):
                args["workdir"] = str(a["workdir"])
            outcome = await self.task("runner_bash", protocol.BASH, args, seconds + GRACE_S)
            return _answer(outcome, _bash_text)

        async def read(a: dict[str, Any]) -> str:
            args: dict[str, Any] = {"path": str(a.get("path") or "")}
            for k in ("offset", "limit"):
                if a.get(k):
                    args[k] = int(a[k])
            outcome = await self.task("runner_read", protocol.READ, args, DEFAULT_TIMEOUT_S)
            return _answer(outcome, _read_text)

        async def write(a: dict[str, Any]) -> str:
            content = str(a.get("content") or "")
            args = {"path": str(a.get("path") or ""),
                    "content": base64.b64encode(content.encode()).decode()}
            outcome = await self.task("runner_write", protocol.WRITE, args, DEFAULT_TIMEOUT_S)
            return _answer(outcome, lambda _: f"wrote {len(content.encode())} bytes")

        async def listing(a: dict[str, Any]) -> str:
            args = {"path": str(a.get("path") or "."), "recursive": bool(a.get("recursive"))}
            outcome = await self.task("runner_list", protocol.LIST, args, DEFAULT_TIMEOUT_S)
            return _answer(outcome, _json_text)

        async def glob(a: dict[str, Any]) -> str:
            outcome = await self.task("runner_glob", protocol.GLOB,
                                      {"pattern": str(a.get("pattern") or "")},
                                      DEFAULT_TIMEOUT_S)
            return _answer(outcome, _json_text)

        async def grep(a: dict[str, Any]) -> str:
            args: dict[str, Any] = {"pattern": str(a.get("pattern") or "")}
            if isinstance(a.get("include"), list):
                args["include"] = [str(x) for x in a["include"]]
            outcome = await self.task("runner_grep", protocol.GREP, args, DEFAULT_TIMEOUT_S)
            return _answer(outcome, _grep_text)

        async def webfetch(a: dict[str, Any]) -> str:
            seconds = min(_seconds(a.get("timeout"), 30), 120)
            args = {"url": str(a.get("url") or ""), "format": str(a.get("format") or
                                                                  "markdown"),
                    "timeout": seconds}
            outcome = await self.task("runner_webfetch", protocol.WEBFETCH, args,
                                      seconds + GRACE_S)
            return _answer(outcome, lambda r: str((r or {}).get("content", "")))

        s, i, b = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
        where = "on the BYOC runner inside the customer's network"
        return [
            self._tool("runner_bash", f"Run a shell command {where}. Answers stdout, stderr "
                       "and the exit code.", {"command": s, "workdir": s, "timeout": {
                           **i, "description": "seconds (default 60, at most 600)"}},
                       ["command"], MAX_TIMEOUT_S + GRACE_S, bash),
            self._tool("runner_read", f"Read a file {where}.",
                       {"path": s, "offset": i, "limit": i}, ["path"], DEFAULT_TIMEOUT_S, read),
            self._tool("runner_write", f"Write a text file {where}.",
                       {"path": s, "content": s}, ["path", "content"], DEFAULT_TIMEOUT_S,
                       write),
            self._tool("runner_list", f"List a directory {where}.",
                       {"path": s, "recursive": b}, ["path"], DEFAULT_TIMEOUT_S, listing),
            self._tool("runner_glob", f"Find files by glob pattern {where}.", {"pattern": s},
                       ["pattern"], DEFAULT_TIMEOUT_S, glob),
            self._tool("runner_grep", f"Search file contents by regular expression {where}.",
                       {"pattern": s, "include": {"type": "array", "items": s}}, ["pattern"],
                       DEFAULT_TIMEOUT_S, grep),
            self._tool("runner_webfetch", f"Fetch a URL {where} (internal services "
                       "included).", {"url": s, "format": s, "timeout": i}, ["url"], 120,
                       webfetch),
        ]

    async def mcp(self, servers: list[dict[str, Any]], problems: list[str]) -> list[AgentTool]:
        """The tools of the MCP servers that run on this worknode, listed and called through
        the runner (operations mcp_list_tools and mcp_call)."""
        found: list[AgentTool] = []
        for n, server in enumerate(servers, 1):
            config = server["config"]
            try:
                outcome = await self.task("mcp_list_tools", protocol.MCP_LIST_TOOLS_OP,
                                          {"server": config}, server["connect_timeout"] +
                                          server["call_timeout"])
            except ToolFailed as exc:
                problems.append(f"MCP server {config['name']} (on the runner): {exc}")
                continue
            if not outcome.success:
                problems.append(f"MCP server {config['name']} (on the runner): "
                                f"{outcome.error or 'listing its tools failed'}")
                continue
            listed = (outcome.result or {}).get("tools") or []
            for tool in listed:
                if not isinstance(tool, dict) or not tool.get("name"):
                    continue
                found.append(AgentTool(
                    name=tool_name(f"rmcp{n}", str(tool["name"])),
                    description=str(tool.get("description") or tool["name"]),
                    parameters=tool.get("input_schema") or {"type": "object",
                                                            "properties": {}},
                    timeout_s=server["call_timeout"] + GRACE_S + 5,
                    call=self._mcp_call(config, str(tool["name"]),
                                        float(server["call_timeout"])),
                ))
        return found

    def _mcp_call(self, config: dict[str, Any], name: str,
                  timeout_s: float) -> Callable[[dict[str, Any]], Awaitable[str]]:
        async def call(arguments: dict[str, Any]) -> str:
            outcome = await self.task(name, protocol.MCP_CALL_OP, {
                "server": config, "tool_name": name, "args": arguments,
                "timeout": int(timeout_s)}, timeout_s + GRACE_S)
            if not outcome.success:
                raise ToolFailed(outcome.error or "the MCP call failed on the runner")
            result = outcome.result or {}
            text = _clip(str(result.get("content", "")))
            return f"ERROR: {text}" if result.get("is_error") else text

        return call


def mcp_server_config(target: McpTarget, name: str) -> dict[str, Any]:
    """protocol/messages.go MCPServerConfig from an MCP server record: a stdio server's `url`
    holds its command line."""
    config: dict[str, Any] = {"name": name, "transport": target.transport}
    if target.transport == "stdio":
        parts = shlex.split(target.url)
        config.update(command=parts[0] if parts else "", args=parts[1:])
    else:
        config["url"] = target.url
    if target.headers:
        config["headers"] = dict(target.headers)
    return config


def _answer(outcome: TaskOutcome, render: Callable[[Any], str]) -> str:
    if not outcome.success:
        return f"ERROR: {outcome.error or 'the task failed on the runner'}" + (
            f" (exit code {outcome.exit_code})" if outcome.exit_code else "")
    return _clip(render(outcome.result))


def _bash_text(result: Any) -> str:
    r = result if isinstance(result, dict) else {}
    parts = [f"exit_code: {r.get('exit_code', 0)}"]
    if r.get("stdout"):
        parts.append(f"stdout:\n{r['stdout']}")
    if r.get("stderr"):
        parts.append(f"stderr:\n{r['stderr']}")
    if r.get("truncated"):
        parts.append(f"(truncated; the full output is at {r.get('file_path', '')} on the "
                     "runner)")
    return "\n".join(parts)


def _read_text(result: Any) -> str:
    content = str((result or {}).get("content", ""))
    try:
        return base64.b64decode(content, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return content


def _grep_text(result: Any) -> str:
    r = result if isinstance(result, dict) else {}
    return str(r.get("content") or "") or _json_text(r.get("matches", []))


def _json_text(result: Any) -> str:
    return json.dumps(result, ensure_ascii=False)
