"""The agent loop that drafts a post-mortem's summary, impact and contributing factors: the
report's material (its incidents, their timeline, notes and alerts) goes to the model with
read-only tools over this service's incidents, as its first author sees them; the model
may look further, then answers one JSON object with the three sections."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from dutyline.aisre.automation.agent import call_tool
from dutyline.aisre.automation.llm import ChatModel
from dutyline.aisre.automation.tools import AgentTool, ReadScope, incident_tools
from dutyline.api.runtime import Runtime
from dutyline.incident.service import postmortem

MAX_STEPS = 4  # tools are withheld on the last one, so the model must answer
DEADLINE_S = 300.0
SECTIONS = {"summary": "Summary", "impact": "Impact",
            "contributing_factors": "Contributing factors"}
SYSTEM_PROMPT = (
    "You are dutyline's AI SRE assistant. You draft blameless post-mortems of closed "
    "incidents from their data: state facts the data supports, name no one as at fault, and "
    "say what is unknown rather than guess. You may read more of this service's incidents "
    "and alerts with the tools you are given."
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


class DraftFailed(Exception):
    """The model answered, but not what was asked for."""


def prompt_of(ask: postmortem.DraftAsk) -> str:
    return (
        f'Draft the post-mortem "{ask.title}". Answer with one JSON object and nothing else, '
        'with three string fields in markdown without headings: "summary" (what happened, '
        'in a few sentences), "impact" (who and what was affected, and for how long) and '
        '"contributing_factors" (what caused the incident or let it last).\n\n'
        f"{ask.material}"
    )


async def draft(runtime: Runtime, ask: postmortem.DraftAsk, model: ChatModel) -> dict[str, str]:
    """The three sections by heading (template.MODEL_SECTIONS); raises DraftFailed, LlmError
    or TimeoutError."""
    personal = ask.author_id != 0
    tools = incident_tools(runtime, ReadScope(ask.account_id, ask.author_id,
                                              0 if personal else ask.team_id))
    async with asyncio.timeout(DEADLINE_S):
        return parse_answer(await _converse(model, tools, prompt_of(ask)))


async def _converse(model: ChatModel, tools: list[AgentTool], prompt: str) -> str:
    by_name = {t.name: t for t in tools}
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": prompt}]
    for step in range(MAX_STEPS):
        last = step == MAX_STEPS - 1
        reply = await model.complete(messages, [] if last else [t.schema() for t in tools])
        messages.append(reply.message)
        if not reply.tool_calls or last:
            return reply.content
        for call in reply.tool_calls:
            result = await call_tool(by_name.get(call.name), call.name, call.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("unreachable: the last step always returns")


def parse_answer(text: str) -> dict[str, str]:
    """The JSON object the prompt asks for (a code fence around it is tolerated)."""
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    try:
        answer = json.loads(body[start:end + 1]) if start >= 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise DraftFailed("the model did not answer the JSON object asked for")
    sections = {}
    for key, heading in SECTIONS.items():
        value = answer.get(key)
        if not isinstance(value, str) or not value.strip():
            raise DraftFailed(f"the model's answer has no text for {key}")
        sections[heading] = value.strip()
    return sections
