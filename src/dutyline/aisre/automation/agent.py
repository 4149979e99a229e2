"""The agent loop of a run: the rule's prompt and the trigger's context go to the model with
the run's tools; the model's tool calls are executed (each with a timeout) and their results fed
back, until a final answer, the step budget (tools are withheld on the last step, so the model
must answer) or the run's deadline.

Every LLM request and answer, tool call and result is stored as a step as it happens, in a
short transaction of its own, so run/get shows a running run's progress. The run's final
state is written by the job (tasks.py) in the job's own transaction, fenced by its lease."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import structlog

from dutyline.aisre.automation import repository as repo
from dutyline.aisre.automation.llm import ChatModel, LlmError, OpenAiCompatibleChat
from dutyline.aisre.automation.runner_tools import RunnerTools, mcp_server_config
from dutyline.aisre.automation.runs import FAILED, SUCCEEDED
from dutyline.aisre.automation.tools import AgentTool, ToolFailed, toolbox
from dutyline.aisre.mcp import service as mcp_service
from dutyline.api.runtime import Runtime
from dutyline.api.unit import system_actor

log = structlog.get_logger("dutyline.automation")

MAX_STEPS = 8
RUN_DEADLINE_S = 600.0
STEP_CONTENT_MAX = 64_000
NO_LLM = ("No LLM is configured: set DUTYLINE_LLM_BASE_URL and DUTYLINE_LLM_MODEL "
          "(and DUTYLINE_LLM_API_KEY if the endpoint needs one)")
SYSTEM_PROMPT = (
    "You are dutyline's AI SRE assistant, running an automation rule. Investigate with the "
    "tools you are given (they read this service's incidents and alerts, call MCP tools, "
    "delegate to A2A agents and, on a BYOC runner, run shell commands and read files inside "
    "the customer's network), then answer with a concise, factual report."
)


@dataclass(frozen=True)
class Outcome:
    status: str
    answer: str = ""
    error: str = ""


def model_of(runtime: Runtime) -> ChatModel | None:
    s = runtime.settings
    if not s.llm_base_url or not s.llm_model:
        return None
    return OpenAiCompatibleChat(base_url=s.llm_base_url, model=s.llm_model,
                                api_key=s.llm_api_key, policy=runtime.deps.policy)


class Steps:
    """Appends the run's steps, numbered, each committed at once."""

    def __init__(self, runtime: Runtime, run_id: str) -> None:
        self.runtime = runtime
        self.run_id = run_id
        self.seq = 0

    async def add(self, kind: str, name: str, content: Any) -> None:
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        if len(text) > STEP_CONTENT_MAX:
            text = text[:STEP_CONTENT_MAX] + " …[truncated]"
        self.seq += 1
        async with self.runtime.db.transaction(write=True) as conn:
            await repo.add_step(conn, {
                "run_id": self.run_id, "seq": self.seq, "kind": kind, "name": name[:255],
                "content": text, "created_at": int(self.runtime.clock.now() * 1000),
            })


def first_message(prompt: str, context: Any) -> str:
    if context in (None, {}, [], ""):
        return prompt
    return f"{prompt}\n\nTrigger context (JSON):\n{json.dumps(context, ensure_ascii=False)}"


async def run_loop(
    runtime: Runtime, *, run_id: str, account_id: int, team_id: int, owner_id: int,
    prompt: str, context: Any, model: ChatModel | None, worknode_id: str = "",
) -> Outcome:
    """`worknode_id`: a byoc rule's worknode, whose runner executes the shell, file, web-fetch
    and MCP tools (runner_tools.py); the caller checked that it is online."""
    steps = Steps(runtime, run_id)
    if model is None:
        await steps.add("error", "llm", NO_LLM)
        return Outcome(FAILED, error=NO_LLM)
    try:
        async with asyncio.timeout(RUN_DEADLINE_S):
            problems: list[str] = []
            tools = await toolbox(runtime, account_id=account_id, team_id=team_id,
                                  owner_id=owner_id, problems=problems)
            if worknode_id:
                tools = await _runner_tools(runtime, steps, account_id=account_id,
                                            team_id=team_id, worknode_id=worknode_id,
                                            problems=problems) + tools
            for problem in problems:
                await steps.add("error", "tools", problem)
            return await _converse(steps, model, tools, prompt, context)
    except TimeoutError:
        error = f"the run's deadline of {int(RUN_DEADLINE_S)} s passed"
    except LlmError as exc:
        error = str(exc)
    await steps.add("error", "run", error)
    return Outcome(FAILED, error=error)


async def _runner_tools(
    runtime: Runtime, steps: Steps, *, account_id: int, team_id: int, worknode_id: str,
    problems: list[str],
) -> list[AgentTool]:
    made = RunnerTools(runtime, account_id=account_id, worknode_id=worknode_id,
                       run_id=steps.run_id, add_step=steps.add)
    async with runtime.db.transaction(write=False) as conn:
        servers = await mcp_service.byoc_targets(
            conn, system_actor(account_id, runtime.clock),
            team_ids=[team_id] if team_id else [], worknode_id=worknode_id, deps=runtime.deps)
    configs = [{"config": mcp_server_config(target, name),
                "connect_timeout": target.connect_timeout, "call_timeout": target.call_timeout}
               for name, target in servers]
    return made.builtin() + await made.mcp(configs, problems)


async def _converse(
    steps: Steps, model: ChatModel, tools: list[AgentTool], prompt: str, context: Any
) -> Outcome:
    by_name = {t.name: t for t in tools}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": first_message(prompt, context)},
    ]
    for step in range(MAX_STEPS):
        last = step == MAX_STEPS - 1
        offered = [] if last else [t.schema() for t in tools]
        await steps.add("llm_request", f"step {step + 1}", {
            "messages": messages, "tools": [t["function"]["name"] for t in offered]})
        reply = await model.complete(messages, offered)
        await steps.add("llm_response", reply.finish_reason, reply.message)
        messages.append(reply.message)
        if not reply.tool_calls or last:
            if not reply.content.strip():
                error = "the step budget ran out without an answer" if last else \
                    "the model answered nothing"
                await steps.add("error", "run", error)
                return Outcome(FAILED, error=error)
            await steps.add("answer", "", reply.content)
            return Outcome(SUCCEEDED, answer=reply.content)
        for call in reply.tool_calls:
            await steps.add("tool_call", call.name, call.raw_arguments)
            result = await call_tool(by_name.get(call.name), call.name, call.arguments)
            await steps.add("tool_result", call.name, result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("unreachable: the last step always returns")


async def call_tool(tool: AgentTool | None, name: str, arguments: dict[str, Any]) -> str:
    """One tool call of an agent loop, as the text the model reads back: a failure, a
    timeout or an unknown tool is an "ERROR: ..." answer, never an exception."""
    if tool is None:
        return f"ERROR: there is no tool named {name}"
    try:
        async with asyncio.timeout(tool.timeout_s):
            return await tool.call(arguments)
    except TimeoutError:
        return f"ERROR: the tool did not answer within {tool.timeout_s:g} s"
    except ToolFailed as exc:
        return f"ERROR: {exc}"
    except Exception as exc:
        log.warning("agent tool failed", tool=name, error=repr(exc))
        return f"ERROR: {type(exc).__name__}: {exc}"
