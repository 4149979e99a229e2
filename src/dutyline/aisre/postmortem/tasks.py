"""The post-mortem drafting job (the incident domain's `postmortem.DRAFT_JOB`).

The model is asked outside the job's transaction (on SQLite that transaction would hold the
writer lock for the whole conversation): the material is read in a short read transaction,
and only the answer is written in the job's own, through the incident domain's service,
which keeps an edit made meanwhile."""

from __future__ import annotations

from typing import Any

from dutyline.aisre.automation import agent
from dutyline.aisre.automation.llm import LlmError
from dutyline.aisre.postmortem.drafter import DEADLINE_S, DraftFailed, draft
from dutyline.api import errors
from dutyline.api.unit import system_actor, unit
from dutyline.incident.service import postmortem
from dutyline.work.registry import DeadJobContext, JobContext, job_handler, job_on_dead


@job_handler(postmortem.DRAFT_JOB)
async def draft_post_mortem(ctx: JobContext, payload: dict[str, Any]) -> None:
    runtime = ctx.runtime
    account_id = int(payload["account_id"])
    post_mortem_id = str(payload["post_mortem_id"])
    revision = int(payload["revision"])
    sections: dict[str, str] | None = None
    error = ""
    try:
        async with unit(runtime, system_actor(account_id, runtime.clock),
                        write=False) as work:
            ask = await postmortem.model_draft_ask(
                work.conn, work.actor, post_mortem_id=post_mortem_id, revision=revision,
                deps=runtime.deps)
    except errors.ApiError as exc:  # an incident removed since
        ask, error = None, f"the incidents could not be read: {exc}"
    if ask is None and not error:
        # Deleted or drafted meanwhile (nothing to write), or edited: recorded as skipped,
        # without asking the model for a draft that could not be applied.
        await postmortem.record_model_draft(
            ctx.conn, ctx.system_actor(account_id), post_mortem_id=post_mortem_id,
            revision=revision, sections=None, model=runtime.settings.llm_model or "")
        return
    model = agent.model_of(runtime)
    if ask is not None and model is None:
        error = agent.NO_LLM
    elif ask is not None and model is not None:
        try:
            sections = await draft(runtime, ask, model)
        except (LlmError, DraftFailed) as exc:
            error = str(exc)
        except TimeoutError:
            error = f"the model did not finish within {int(DEADLINE_S)} s"
    await postmortem.record_model_draft(
        ctx.conn, ctx.system_actor(account_id), post_mortem_id=post_mortem_id,
        revision=revision, sections=sections, model=runtime.settings.llm_model or "",
        error=error)


@job_on_dead(postmortem.DRAFT_JOB)
async def draft_died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
    """Never leave a report's draft pending: its last attempt died."""
    reason = ("its worker stopped while it ran" if ctx.lease_expired
              else f"it failed: {ctx.error}")
    await postmortem.record_model_draft(
        ctx.conn, ctx.system_actor(int(payload["account_id"])),
        post_mortem_id=str(payload["post_mortem_id"]), revision=int(payload["revision"]),
        sections=None, model=ctx.runtime.settings.llm_model or "",
        error=f"The model's draft did not finish: {reason}")
