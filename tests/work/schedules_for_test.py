"""A test-only schedule kind, loaded by real `dutyline worker` processes through
DUTYLINE_JOB_MODULES=tests.work.schedules_for_test, and by the in-process tests.

Each fire writes a row (no key: a due time fired twice shows twice) in the fire's transaction."""

from __future__ import annotations

import os

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.work.scheduler import Fire, schedule_handler

TICK_KIND = "test.tick"
FIRE_TABLE = "work_test_fire"
CREATE_FIRE_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {FIRE_TABLE} ("
    " owner_id VARCHAR(64) NOT NULL, due_at BIGINT NOT NULL, missed INTEGER NOT NULL,"
    " first_due_at BIGINT NOT NULL, pid INTEGER NOT NULL)"
)
DROP_FIRE_TABLE = f"DROP TABLE IF EXISTS {FIRE_TABLE}"


@schedule_handler(TICK_KIND)
async def record_fire(conn: AsyncConnection, fire: Fire) -> None:
    if fire.owner_id.startswith("boom"):
        raise RuntimeError("this schedule's handler always fails")
    await conn.execute(
        text(f"INSERT INTO {FIRE_TABLE} (owner_id, due_at, missed, first_due_at, pid) "
             "VALUES (:o, :d, :m, :f, :p)"),
        {"o": fire.owner_id, "d": fire.due_at_ms, "m": fire.missed,
         "f": fire.first_due_at_ms, "p": os.getpid()},
    )


async def fires(conn: AsyncConnection) -> list[tuple[str, int, int, int]]:
    rows = await conn.execute(text(
        f"SELECT owner_id, due_at, missed, pid FROM {FIRE_TABLE} ORDER BY owner_id, due_at"))
    return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]
