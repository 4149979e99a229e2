"""The agent loop's way to an A2A agent: one message in, one text reply out.

Speaks through the official a2a-sdk client (JSON-RPC or HTTP+JSON, whichever the stored card
offers; v0.3 agents through the SDK's compat transports), over the outbound guard, with the
agent's credentials, one deadline for the whole exchange, and every failure, exception groups
included, turned into one A2aError with a reason a person can read."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, ClientCallContext, ClientConfig
from a2a.client.client_factory import ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.errors import A2AError

from dutyline.aisre.a2a.card import SUPPORTED_BINDINGS, card_from_json, connect_reason
from dutyline.aisre.a2a.service import A2aTarget
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_client

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT_CHARS = 16_000
_FAILED = {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED}


class A2aError(Exception):
    """A call to an agent failed; str() is the reason, fit for the agent loop's transcript."""


@dataclass(frozen=True)
class A2aReply:
    text: str
    context_id: str  # pass back to continue the conversation
    task_id: str = ""
    state: str = "message"  # "message", or the task's state: "completed", "input_required"...
    truncated: bool = False


@dataclass
class _Collected:
    message_text: str | None = None
    artifacts: dict[str, str] = field(default_factory=dict)
    status_text: str = ""
    state: int = TaskState.TASK_STATE_UNSPECIFIED
    context_id: str = ""
    task_id: str = ""

    def add(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "message":
            self.message_text = _text(event.message.parts)
            self.context_id = event.message.context_id or self.context_id
            self.task_id = event.message.task_id or self.task_id
        elif kind == "task":
            task = event.task
            self.context_id, self.task_id, self.state = task.context_id, task.id, task.status.state
            self.artifacts = {a.artifact_id: _text(a.parts) for a in task.artifacts}
            if task.status.HasField("message"):
                self.status_text = _text(task.status.message.parts)
        elif kind == "status_update":
            update = event.status_update
            self.state = update.status.state
            self.context_id = update.context_id or self.context_id
            self.task_id = update.task_id or self.task_id
            if update.status.HasField("message"):
                self.status_text = _text(update.status.message.parts)
        elif kind == "artifact_update":
            art = event.artifact_update
            text = _text(art.artifact.parts)
            old = self.artifacts.get(art.artifact.artifact_id, "") if art.append else ""
            self.artifacts[art.artifact.artifact_id] = old + text

    def text(self) -> str:
        if self.message_text is not None:
            return self.message_text
        artifacts = "\n".join(t for t in self.artifacts.values() if t)
        return artifacts or self.status_text


def _text(parts: object) -> str:
    return "\n".join(p.text for p in parts if p.HasField("text"))  # type: ignore[attr-defined]


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as anyio/SDK task groups wrap."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException, timeout: float) -> str:
    exc = _leaf(exc)
    if isinstance(exc, OutboundBlocked):
        return f"refused by the outbound guard: {exc.reason}"
    if isinstance(exc, A2AClientTimeoutError | TimeoutError | httpx.TimeoutException):
        return f"timed out after {timeout:g} s"
    cause = exc.__cause__
    if isinstance(cause, OutboundBlocked):
        return f"refused by the outbound guard: {cause.reason}"
    if isinstance(cause, httpx.ConnectError):
        return connect_reason(cause)
    if isinstance(exc, A2AClientError | A2AError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, httpx.HTTPError):
        return f"network error: {exc}"
    return f"{type(exc).__name__}: {exc}"


class A2aGateway:
    """Holds the outbound policy and limits; `send` is safe to call concurrently."""

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy
        self.timeout = timeout
        self.max_output_chars = max_output_chars
        self._transport = transport

    async def send(
        self, agent: A2aTarget, text: str, *, context_id: str | None = None
    ) -> A2aReply:
        limit = self.timeout
        try:
            async with asyncio.timeout(limit):
                collected = await self._exchange(agent, text, context_id, limit)
        except A2aError:
            raise
        except BaseException as exc:  # groups too; cancellation of *our* task passes below
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            raise A2aError(f"A2A agent {agent.agent_name}: {_reason(exc, limit)}") from exc
        if collected.state in _FAILED:
            state = TaskState.Name(collected.state).removeprefix("TASK_STATE_").lower()
            detail = collected.text() or "no reason given"
            raise A2aError(f"A2A agent {agent.agent_name}: the task {state}: {detail}")
        return self._reply(collected)

    async def _exchange(
        self, agent: A2aTarget, text: str, context_id: str | None, limit: float
    ) -> _Collected:
        card = card_from_json(agent.card)
        # The message send is a POST and is never retried (kit/outbound_retry): an agent that
        # got it before failing would start the task a second time.
        async with guarded_client(
            self.policy, timeout=limit, headers=agent.auth.headers(), transport=self._transport
        ) as http:
            config = ClientConfig(
                httpx_client=http, streaming=agent.streaming,
                supported_protocol_bindings=list(SUPPORTED_BINDINGS),
            )
            try:
                client = ClientFactory(config).create(card)
            except ValueError as exc:
                raise A2aError(f"A2A agent {agent.agent_name}: {exc}") from None
            message = Message(
                role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                context_id=context_id or "",
            )
            collected = _Collected()
            events = client.send_message(
                SendMessageRequest(message=message), context=ClientCallContext(timeout=limit)
            )
            async for event in events:
                collected.add(event)
            return collected

    def _reply(self, collected: _Collected) -> A2aReply:
        text = collected.text()
        truncated = len(text) > self.max_output_chars
        if truncated:
            cut = len(text) - self.max_output_chars
            text = text[: self.max_output_chars] + f"\n[truncated: {cut} more characters]"
        state = (
            "message" if collected.message_text is not None
            else TaskState.Name(collected.state).removeprefix("TASK_STATE_").lower()
        )
        return A2aReply(
            text=text, context_id=collected.context_id, task_id=collected.task_id,
            state=state, truncated=truncated,
        )
