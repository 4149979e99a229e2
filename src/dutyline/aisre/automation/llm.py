"""The one `ChatModel` protocol and its default adapter: OpenAI-compatible
`POST {base_url}/chat/completions` (OpenAI, vLLM, Ollama, LiteLLM proxy...), with tools.

Through kit/outbound like every outbound call (guard, timeouts, retries of transient
failures). The operator configures it: DUTYLINE_LLM_BASE_URL, _API_KEY, _MODEL."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_client

DEFAULT_TIMEOUT_S = 120.0


class LlmError(Exception):
    """The model could not be asked, or answered something we cannot read."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str


@dataclass(frozen=True)
class ChatReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    # The assistant message as the API returned it, to send back in the next request.
    message: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""


class ChatModel(Protocol):
    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ChatReply: ...


class OpenAiCompatibleChat:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        policy: OutboundPolicy,
        timeout: float = DEFAULT_TIMEOUT_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._policy = policy
        self._timeout = timeout
        self._transport = transport

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return body

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ChatReply:
        body = self.request_body(messages, tools)
        try:
            async with guarded_client(self._policy, timeout=self._timeout,
                                      headers=self._headers, transport=self._transport) as c:
                response = await c.post(self.url, json=body)
        except OutboundBlocked as exc:
            raise LlmError(f"the LLM address is refused: {exc.reason}") from None
        except httpx.HTTPError as exc:
            raise LlmError(f"the LLM could not be reached: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise LlmError(f"the LLM answered HTTP {response.status_code}: "
                           f"{response.text[:500]}")
        try:
            return parse_reply(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LlmError(f"the LLM answered something unreadable: {exc}") from None


def parse_reply(data: dict[str, Any]) -> ChatReply:
    choice = data["choices"][0]
    message = dict(choice["message"])
    calls: list[ToolCall] = []
    for call in message.get("tool_calls") or []:
        raw = call["function"].get("arguments") or "{}"
        try:
            arguments = json.loads(raw)
        except ValueError:
            arguments = {}
        calls.append(ToolCall(
            id=str(call.get("id") or f"call_{len(calls)}"), name=str(call["function"]["name"]),
            arguments=arguments if isinstance(arguments, dict) else {}, raw_arguments=raw,
        ))
    # Only what the next request needs: role, content and the tool calls.
    sent: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        sent["tool_calls"] = message["tool_calls"]
    return ChatReply(content=message.get("content") or "", tool_calls=calls, message=sent,
                     finish_reason=str(choice.get("finish_reason") or ""))
