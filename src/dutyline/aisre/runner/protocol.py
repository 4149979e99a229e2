"""The runner's WebSocket protocol, server side, as the published runner speaks it
(github.com/flashcatcloud/flashduty-runner, Apache-2.0):

- protocol/messages.go: every frame is a JSON text message `{id, type, payload, timestamp}`
  (`id` "msg_…", `timestamp` Unix ms). Server -> runner: `welcome` {worknode_id, name,
  labels}, `task.request` {task_id, trace_id, source_instance_id, operation, args},
  `task.cancel` {task_id}, `mcp.call` {call_id, server, tool_name, arguments}. Runner -> server:
  `heartbeat` {worknode_id, name, labels, version, environment?, metrics?}, `task.output`
  {task_id, stream, data}, `task.result` {task_id, source_instance_id, success, result, error,
  exit_code}, `mcp.result` {call_id, success, result, error}.
- Operations of task.request (TaskOperation): read, write, list, glob, grep, bash, webfetch,
  mcp_call, mcp_list_tools, sync_skill, with the argument structs of messages.go.
- ws/client.go: the runner dials its URL (default `wss://…/safari/worknode/ws`, cmd/main.go)
  with the key as the `token` query parameter (older releases: the `FD-API-KEY` header, and
  `wss://…/runner/ws`), reads one `welcome` within 5 s, then heartbeats every 30 s and answers
  pings (it drops the connection after 60 s without a frame or ping). Older releases read
  `worknode_id` at the top level of the welcome frame, so it is sent there too."""

from __future__ import annotations

import secrets
from typing import Any, TypeVar

import msgspec

WELCOME = "welcome"
HEARTBEAT = "heartbeat"
TASK_REQUEST = "task.request"
TASK_OUTPUT = "task.output"
TASK_RESULT = "task.result"
TASK_CANCEL = "task.cancel"
MCP_CALL = "mcp.call"
MCP_RESULT = "mcp.result"

# TaskOperation of protocol/messages.go.
READ, WRITE, LIST, GLOB, GREP, BASH, WEBFETCH = (
    "read", "write", "list", "glob", "grep", "bash", "webfetch")
MCP_CALL_OP, MCP_LIST_TOOLS_OP = "mcp_call", "mcp_list_tools"

WS_PATHS = ("/safari/worknode/ws", "/runner/ws")
KEY_QUERY = "token"
KEY_HEADER = "fd-api-key"
WORKNODE_ID_HEADER = "X-Worknode-ID"


class Message(msgspec.Struct, kw_only=True):
    id: str = ""
    type: str = ""
    payload: msgspec.Raw = msgspec.Raw(b"null")
    timestamp: int = 0


class Heartbeat(msgspec.Struct, kw_only=True):
    worknode_id: str = ""
    name: str = ""
    labels: list[str] | None = None
    version: str = ""
    environment: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None


class TaskOutput(msgspec.Struct, kw_only=True):
    task_id: str = ""
    stream: str = ""
    data: str = ""


class TaskResult(msgspec.Struct, kw_only=True):
    task_id: str = ""
    source_instance_id: str = ""
    success: bool = False
    # Raw JSON; empty when the runner left it out (`omitempty`), b"null" for null.
    result: msgspec.Raw = msgspec.Raw(b"")
    error: str = ""
    exit_code: int = 0


class McpResult(msgspec.Struct, kw_only=True):
    call_id: str = ""
    success: bool = False
    # Raw JSON; empty when the runner left it out (`omitempty`), b"null" for null.
    result: msgspec.Raw = msgspec.Raw(b"")
    error: str = ""


_decode_message = msgspec.json.Decoder(Message)


def decode(frame: str | bytes) -> Message:
    return _decode_message.decode(frame)


T = TypeVar("T")


def payload_of(message: Message, kind: type[T]) -> T:
    return msgspec.json.decode(message.payload, type=kind)


def message_id() -> str:
    return "msg_" + secrets.token_hex(11)


def frame(kind: str, payload: Any, now_ms: int, **top: Any) -> str:
    """One frame; `top` adds fields beside the envelope's (the welcome's worknode_id)."""
    body = {"id": message_id(), "type": kind, "payload": payload, "timestamp": now_ms, **top}
    return msgspec.json.encode(body).decode()
