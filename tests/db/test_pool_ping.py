"""PostgreSQL: a pooled connection is pinged before use only after sitting idle
(db/engine.py `IDLE_PING_S`), so a connection the server dropped meanwhile is replaced
before anyone uses it, while a busy pool pays no ping per checkout."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from dutyline.db import engine as engine_module
from dutyline.db.engine import Database

pytestmark = pytest.mark.anyio



async def backend_pid(db: Database) -> int:
    async with db.transaction(write=False) as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def terminate(url: str, pid: int) -> None:
    other = Database(url, pool_size=1)
    try:
        async with other.connect() as conn:
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await other.dispose()


async def test_an_idle_connection_the_server_dropped_is_replaced_before_use(
        pg: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await backend_pid(pg)
    await terminate(pg.url, first)
    monkeypatch.setattr(engine_module, "IDLE_PING_S", 0.0)  # every connection counts as idle
    assert await backend_pid(pg) != first  # no error: the ping found it dead


async def test_a_connection_in_use_a_moment_ago_is_not_pinged(
        pg: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "IDLE_PING_S", 3600.0)
    first = await backend_pid(pg)
    await terminate(pg.url, first)
    # Not pinged, so the dropped connection meets its first statement (an error the caller
    # sees, as it would mid-transaction); SQLAlchemy then recycles the pool, and within a
    # call or two a fresh connection answers.
    errors = 0
    for _ in range(3):
        try:
            pid = await backend_pid(pg)
        except SQLAlchemyError:
            errors += 1
        else:
            break
    assert errors >= 1 and pid != first
