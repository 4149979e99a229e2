"""The migration job: one durable job per step, one source request per step.

Each run of `status_page.migrate` reads the job's checkpoint, makes the one source request the
checkpoint names (a page of a list, paced and retried by the client), then, in the job's own
transaction, writes what it got, moves the checkpoint on and enqueues its successor. The
effects of a step, its checkpoint and its successor therefore commit together or not at all
(the queue fences a step whose lease was lost): a process killed mid-step leaves the previous
checkpoint, the lease runs out, and the step runs again elsewhere; `status_import_ref` makes a
step that is re-run, or a whole migration that is rerun, skip what exists. A step whose last
attempt fails or never finishes dies, and its on_dead hook ends the migration as failed.

The source request happens before the job's transaction begins (it begins lazily), so on
SQLite a step waiting out the source's 1 request/second does not hold the only writer lock.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import structlog
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.kit.secretbox import SecretBoxError
from dutyline.status_page.migration import repository as repo
from dutyline.status_page.migration import target
from dutyline.status_page.migration.client import PER_PAGE, SourceError, StatuspageClient
from dutyline.status_page.migration.schemas import MigrationProgress
from dutyline.status_page.migration.service import (
    STRUCTURE_STEPS,
    SUBSCRIBER_STEPS,
    TASK_KIND,
    dedupe_key,
)
from dutyline.work import queue
from dutyline.work.registry import DeadJobContext, JobContext, job_handler, job_on_dead

log = structlog.get_logger("dutyline.status_page.migration")

_LISTS = {"groups": "component-groups", "components": "components",
          "templates": "incident_templates", "incidents": "incidents"}
_PHASE = {"page": "structure", "groups": "structure", "components": "structure",
          "templates": "structure", "incidents": "history", "subscribers": "subscribers"}


@job_handler(TASK_KIND)
async def migrate_step(ctx: JobContext, payload: dict[str, Any]) -> None:
    # A failure propagates: the queue retries the step later, with backoff, from the same
    # checkpoint, and on the last attempt the job dies and `migration_step_died` ends it.
    await _step(ctx, str(payload.get("job_id", "")))


@job_on_dead(TASK_KIND)
async def migration_step_died(ctx: DeadJobContext, payload: dict[str, Any]) -> None:
    """The step's job died: its last attempt failed, or never finished (its worker stopped
    or stalled, and the reaper buried it once its lease ran out). No successor will carry
    the migration on, so end it as failed, saying why, and erase its key, in the transaction
    that buries the job; rather than leave it "running" forever with its key sealed."""
    row = await repo.lock_job(ctx.conn, str(payload.get("job_id", "")))
    if row is None:
        return
    why = ("its last attempt did not finish in time (the worker running it stopped or "
           "stalled)" if ctx.lease_expired else ctx.error[:300])
    attempts = f"{ctx.attempts} attempt{'' if ctx.attempts == 1 else 's'}"
    await _finish(ctx, row, repo.FAILED, f"the migration stopped after {attempts}: {why}")


async def _step(ctx: JobContext, job_id: str) -> None:
    runtime = ctx.runtime
    async with runtime.db.transaction(write=False) as conn:
        row = await repo.get_job(conn, job_id)
    if row is None or row.status not in repo.ACTIVE:
        return  # cancelled, or finished by an earlier run of this step
    checkpoint = json.loads(row.checkpoint or "{}")
    try:
        api_key = runtime.deps.box.open(row.api_key_sealed)
    except SecretBoxError:
        await _finish(ctx, row, repo.FAILED, "the stored api_key cannot be opened (the server "
                      "key changed); start the migration again")
        return
    settings = runtime.settings
    try:
        async with StatuspageClient(
            settings.statuspage_api_url, api_key,
            policy=runtime.deps.policy,
            rate_per_second=settings.statuspage_rate_per_second,
        ) as client:
            fetched = await _fetch(client, row, checkpoint)
    except SourceError as exc:
        if exc.permanent or ctx.attempt >= ctx.max_attempts:
            await _finish(ctx, row, repo.FAILED, str(exc))
            return
        raise  # the queue retries this step later, with backoff
    await _apply(ctx, row, checkpoint, fetched)


async def _fetch(client: StatuspageClient, row: Row[Any], checkpoint: dict[str, Any]) -> Any:
    step, page, source = checkpoint["step"], int(checkpoint["page"]), row.source_page_id
    if step == "page":
        return await client.page(source)
    if step == "subscribers":
        return await client.subscribers_page(source, page)
    return await client.list_page(source, _LISTS[step], page)


async def _apply(ctx: JobContext, seen: Row[Any], checkpoint: dict[str, Any],
                 fetched: Any) -> None:
    conn = ctx.conn
    row = await repo.lock_job(conn, seen.job_id)
    # Cancelled meanwhile, or another run of this step got here first: write nothing.
    if row is None or row.status not in repo.ACTIVE or row.checkpoint != seen.checkpoint:
        return
    now = int(ctx.clock.now())
    progress = msgspec.json.decode(row.progress or "{}", type=MigrationProgress)
    step, page = checkpoint["step"], int(checkpoint["page"])
    page_id = int(row.target_page_id)
    actor = ctx.system_actor(int(row.account_id))
    if step == "page":
        if not page_id or not await target.page_exists(conn, actor, page_id=page_id):
            page_id = await target.create_page(conn, actor, source=fetched,
                                               warnings=progress.warnings)
        list_done = True
    else:
        if not await target.page_exists(conn, actor, page_id=page_id):
            await _finish(ctx, row, repo.FAILED, f"the target status page {page_id} was deleted")
            return
        await _write(conn, ctx, actor, step, fetched, progress, page_id)
        list_done = len(fetched) < PER_PAGE
        await target.touch_page(conn, actor, page_id=page_id)
    steps = STRUCTURE_STEPS if row.kind == "structure" else SUBSCRIBER_STEPS
    if list_done:
        progress.completed_steps += 1
        index = steps.index(step) + 1
        nxt: dict[str, Any] | None = (
            {"step": steps[index], "page": 1} if index < len(steps) else None)
    else:
        nxt = {"step": step, "page": page + 1}
    values: dict[str, Any] = {
        "progress": msgspec.json.encode(progress).decode(), "target_page_id": page_id,
        "updated_at": now, "status": repo.RUNNING,
    }
    if nxt is None:
        values.update(status=repo.COMPLETED, api_key_sealed="")
        await repo.update_job(conn, row.job_id, **values)
        log.info("status page migration completed", migration_job_id=row.job_id,
                 target_page_id=page_id)
        return
    values.update(checkpoint=json.dumps(nxt), phase=_PHASE[str(nxt["step"])])
    await repo.update_job(conn, row.job_id, **values)
    # Hand the dedupe key to the successor, in this transaction: exactly one next step.
    await queue.drop_dedupe_key(conn, ctx.job_id)
    await queue.enqueue(conn, TASK_KIND, {"job_id": row.job_id}, now_ms=ctx.now_ms(),
                        dedupe_key=dedupe_key(row.job_id))


async def _write(conn: AsyncConnection, ctx: JobContext, actor: Actor, step: str,
                 items: list[dict[str, Any]], progress: MigrationProgress,
                 page_id: int) -> None:
    warnings = progress.warnings
    if step == "groups":
        progress.sections_imported += await target.import_sections(
            conn, actor, page_id=page_id, groups=items)
    elif step == "components":
        progress.components_imported += await target.import_components(
            conn, actor, page_id=page_id, components=items, warnings=warnings)
    elif step == "templates":
        progress.templates_imported += await target.import_templates(
            conn, actor, page_id=page_id, templates=items, warnings=warnings)
    elif step == "incidents":
        incidents, maintenances = await target.import_changes(
            conn, actor, page_id=page_id, incidents=items, warnings=warnings)
        progress.incidents_imported += incidents
        progress.maintenances_imported += maintenances
    elif step == "subscribers":
        added, skipped = await target.import_subscribers(
            conn, actor, page_id=page_id, subscribers=items,
            secret_key=ctx.runtime.settings.resolved_secret_key(), warnings=warnings)
        progress.subscribers_imported += added
        progress.subscribers_skipped += skipped


async def _finish(ctx: JobContext | DeadJobContext, seen: Row[Any], status: str,
                  error: str) -> None:
    """End the migration (failed): the key is erased with the same write."""
    row = await repo.lock_job(ctx.conn, seen.job_id)
    if row is None or row.status not in repo.ACTIVE:
        return
    await repo.update_job(ctx.conn, row.job_id, status=status, error=error[:2000],
                          api_key_sealed="", updated_at=int(ctx.clock.now()))
    log.warning("status page migration ended", migration_job_id=row.job_id, status=status,
                error=error)
