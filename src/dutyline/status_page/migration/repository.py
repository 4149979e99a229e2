"""Every query of the migration: its job rows and the import's own bulk writes. Reads for
callers are scoped to their account here, so another account's job id behaves as not found."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_import_ref,
    status_migration_job,
    status_page,
    status_template,
)

PENDING, RUNNING, COMPLETED, FAILED, CANCELLED = (
    "pending", "running", "completed", "failed", "cancelled")
ACTIVE = (PENDING, RUNNING)

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_job_id(now_ms: int) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, Crockford base32 (26 characters).
    Sorts by creation time; the random part keeps it unguessable."""
    value = ((now_ms & (2**48 - 1)) << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


async def insert_job(conn: AsyncConnection, **values: Any) -> None:
    await conn.execute(insert(status_migration_job).values(**values))


_JOB = select(status_migration_job).where(status_migration_job.c.job_id == bindparam("job_id"))
_JOB_OF_ACCOUNT = _JOB.where(status_migration_job.c.account_id == bindparam("account_id"))


def get_job_sync(conn: Connection, job_id: str, account_id: int | None = None
                 ) -> Row[Any] | None:
    if account_id is None:
        return conn.execute(_JOB, {"job_id": job_id}).first()
    return conn.execute(_JOB_OF_ACCOUNT, {"job_id": job_id, "account_id": account_id}).first()


async def get_job(conn: AsyncConnection, job_id: str, account_id: int | None = None
                  ) -> Row[Any] | None:
    return await conn.run_sync(get_job_sync, job_id, account_id)


async def lock_job(conn: AsyncConnection, job_id: str) -> Row[Any] | None:
    """The row inside the writer's transaction; on PostgreSQL locked, so a cancel and a step
    of the job serialize (SQLite's single writer does that already)."""
    query = select(status_migration_job).where(status_migration_job.c.job_id == job_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    return (await conn.execute(query)).first()


async def update_job(conn: AsyncConnection, job_id: str, **values: Any) -> None:
    await conn.execute(update(status_migration_job)
                       .where(status_migration_job.c.job_id == job_id).values(**values))


async def previous_target(conn: AsyncConnection, account_id: int, source_page_id: str
                          ) -> int | None:
    """The page an earlier structure migration of this source made in this account, when it
    still exists: a rerun imports into it what is missing instead of making a second page."""
    query = (
        select(status_migration_job.c.target_page_id)
        .join(status_page, status_page.c.page_id == status_migration_job.c.target_page_id)
        .where(status_migration_job.c.account_id == account_id,
               status_migration_job.c.kind == "structure",
               status_migration_job.c.source_page_id == source_page_id,
               status_page.c.account_id == account_id)
        .order_by(status_migration_job.c.created_at.desc())
        .limit(1)
    )
    value = (await conn.execute(query)).scalar()
    return None if value is None else int(value)


async def cancel_job(conn: AsyncConnection, job_id: str, account_id: int, now: int) -> bool:
    """Cancel a pending or running job of the account; its key is erased at once. False when
    the job is not the account's or has already ended."""
    result = await conn.execute(
        update(status_migration_job)
        .where(status_migration_job.c.job_id == job_id,
               status_migration_job.c.account_id == account_id,
               status_migration_job.c.status.in_(ACTIVE))
        .values(status=CANCELLED, api_key_sealed="", updated_at=now)
    )
    return bool(result.rowcount == 1)


# --- the import's own writes ------------------------------------------------------------

async def known_refs(
    conn: AsyncConnection, page_id: int, kind: str, source_ids: Iterable[str] | None = None
) -> dict[str, str]:
    """source id -> our id, for the given source ids (all of the kind when None)."""
    query = select(status_import_ref.c.source_id, status_import_ref.c.target_id).where(
        status_import_ref.c.page_id == page_id, status_import_ref.c.kind == kind)
    if source_ids is not None:
        wanted = list(source_ids)
        if not wanted:
            return {}
        query = query.where(status_import_ref.c.source_id.in_(wanted))
    return {r.source_id: r.target_id for r in await conn.execute(query)}


async def remember_refs(conn: AsyncConnection, page_id: int, kind: str,
                        pairs: list[tuple[str, str]]) -> None:
    if pairs:
        await conn.execute(insert(status_import_ref), [
            {"page_id": page_id, "kind": kind, "source_id": s, "target_id": t} for s, t in pairs
        ])


async def imported_components(conn: AsyncConnection, page_id: int) -> dict[str, str]:
    """source component id -> our component id, for the page's imported components that
    still exist."""
    query = (
        select(status_import_ref.c.source_id, status_component.c.component_id)
        .join(status_component, status_component.c.component_id == status_import_ref.c.target_id)
        .where(status_import_ref.c.page_id == page_id, status_import_ref.c.kind == "component")
    )
    return {r.source_id: r.component_id for r in await conn.execute(query)}


async def insert_templates(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(status_template), rows)


async def insert_history(conn: AsyncConnection, changes: list[dict[str, Any]],
                         entries: list[dict[str, Any]]) -> None:
    """A finished history: events and their timeline entries, each in one multi-row INSERT."""
    if changes:
        await conn.execute(insert(status_change), changes)
    if entries:
        await conn.execute(insert(status_change_update), entries)
