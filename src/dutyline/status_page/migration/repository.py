"""Every query on migration job rows. Reads for callers are scoped to their account here, so
another account's job id behaves as not found."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import status_migration_job, status_page

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


async def get_job(conn: AsyncConnection, job_id: str, account_id: int | None = None
                  ) -> Row[Any] | None:
    query = select(status_migration_job).where(status_migration_job.c.job_id == job_id)
    if account_id is not None:
        query = query.where(status_migration_job.c.account_id == account_id)
    return (await conn.execute(query)).first()


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
