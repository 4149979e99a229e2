"""Starting, reading and cancelling migration jobs. The work itself runs in tasks.py.
Starting and cancelling need status page management (a job writes pages and subscribers);
each notes its audit entry with the job's id."""

from __future__ import annotations

import json
import re

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.errors import InvalidParameter, invalid, not_found
from dutyline.api.permissions import STATUS_PAGE_MANAGE
from dutyline.kit.secretbox import SecretBox
from dutyline.status_page.migration import repository as repo
from dutyline.status_page.migration.schemas import MigrationJob, MigrationProgress
from dutyline.status_page.migration.target import page_exists
from dutyline.work import queue

TASK_KIND = "status_page.migrate"
STRUCTURE_STEPS = ("page", "groups", "components", "templates", "incidents")
SUBSCRIBER_STEPS = ("subscribers",)
API_KEY_MIN = 8
# A key is sent as an HTTP header value: visible ASCII only, so it can neither break the
# header nor carry a line break into a log or a request.
_API_KEY = re.compile(r"^[\x21-\x7e]+$")
# The page id becomes a path segment of the source URL.
_SOURCE_PAGE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def dedupe_key(job_id: str) -> str:
    """One queued step per migration at a time; each step hands the key to its successor."""
    return f"{TASK_KIND}:{job_id}"


def _validate(api_key: str, source_page_id: str) -> None:
    if not _API_KEY.match(api_key):
        raise invalid("api_key", "must be printable ASCII without spaces")
    if len(api_key) < API_KEY_MIN:
        raise invalid("api_key", "is too short to be an API key")
    if not _SOURCE_PAGE_ID.match(source_page_id):
        raise invalid("source_page_id", "must use only letters, digits, _ and -")


async def _start(conn: AsyncConnection, actor: Actor, *, kind: str, api_key: str,
                 source_page_id: str, target_page_id: int, box: SecretBox) -> str:
    now = actor.now_s
    job_id = repo.new_job_id(actor.now_ms)
    steps = STRUCTURE_STEPS if kind == "structure" else SUBSCRIBER_STEPS
    progress = MigrationProgress(total_steps=len(steps))
    await repo.insert_job(
        conn, job_id=job_id, account_id=actor.account_id,
        person_id=actor.person_id, kind=kind, source_page_id=source_page_id,
        target_page_id=target_page_id, phase="structure" if kind == "structure" else kind,
        status=repo.PENDING, progress=msgspec.json.encode(progress).decode(),
        checkpoint=json.dumps({"step": steps[0], "page": 0 if kind == "subscribers" else 1}),
        error="", api_key_sealed=box.seal(api_key),
        created_at=now, updated_at=now,
    )
    # In the caller's transaction: the job exists exactly when the response says so.
    await queue.enqueue(conn, TASK_KIND, {"job_id": job_id}, now_ms=actor.now_ms,
                        dedupe_key=dedupe_key(job_id))
    return job_id


@writes("/status-page/migrate-structure", STATUS_PAGE_MANAGE)
async def start_structure(conn: AsyncConnection, actor: Actor, *, api_key: str,
                          source_page_id: str, deps: Deps) -> str:
    """Start importing a source page's structure and history; returns the job's id."""
    _validate(api_key, source_page_id)
    # A rerun of the same source continues into the page the earlier run made.
    target = await repo.previous_target(conn, actor.account_id, source_page_id)
    return await _start(conn, actor, kind="structure", api_key=api_key,
                        source_page_id=source_page_id, target_page_id=target or 0,
                        box=deps.box)


@writes("/status-page/migrate-email-subscribers", STATUS_PAGE_MANAGE)
async def start_subscribers(conn: AsyncConnection, actor: Actor, *, api_key: str,
                            source_page_id: str, target_page_id: int, deps: Deps) -> str:
    """Start importing a source page's email subscribers into one of the actor's pages."""
    _validate(api_key, source_page_id)
    if not await page_exists(conn, actor, page_id=target_page_id):
        raise invalid("target_page_id", "is not a status page of this account")
    return await _start(conn, actor, kind="subscribers", api_key=api_key,
                        source_page_id=source_page_id, target_page_id=target_page_id,
                        box=deps.box)


def job_record(row: object) -> MigrationJob:
    r = row._mapping  # type: ignore[attr-defined]
    return MigrationJob(
        job_id=r["job_id"], account_id=r["account_id"], source_page_id=r["source_page_id"],
        target_page_id=r["target_page_id"], phase=r["phase"], status=r["status"],
        progress=msgspec.json.decode(r["progress"] or "{}", type=MigrationProgress),
        created_at=r["created_at"], updated_at=r["updated_at"],
        error=r["error"] if r["status"] == repo.FAILED else "",
    )


def get_status_sync(conn: Connection, actor: Actor, *, job_id: str) -> MigrationJob:
    row = repo.get_job_sync(conn, job_id, actor.account_id)
    if row is None:
        raise not_found("migration job", job_id)
    return job_record(row)


@writes("/status-page/migration/cancel", STATUS_PAGE_MANAGE)
async def cancel(conn: AsyncConnection, actor: Actor, *, job_id: str) -> None:
    row = await repo.get_job(conn, job_id, actor.account_id)
    if row is None:
        raise not_found("migration job", job_id)
    # The running step sees the cancel when it next locks the row, and stops there.
    if not await repo.cancel_job(conn, job_id, actor.account_id, actor.now_s):
        raise InvalidParameter(
            "Invalid parameter {field}: the job has already ended ({status})",
            field="job_id", status=row.status)
    actor.note_audit_targets(job_id)
