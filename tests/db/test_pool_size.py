"""`database_pool_size` sizes each process's PostgreSQL pool: that many connections stay
open between requests, as many more are opened for a burst and closed after it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from dutyline.app import build_runtime
from dutyline.config import Settings
from dutyline.db.engine import Database

pytestmark = pytest.mark.anyio


def test_the_setting_reaches_the_process_pool(postgres_database: str | None) -> None:
    if postgres_database is None:
        pytest.skip("DUTYLINE_TEST_POSTGRES_URL is not set: the pool is PostgreSQL's")
    runtime = build_runtime(Settings(database_url=postgres_database, database_pool_size=7,
                                     secret_key="k" * 32))
    pool = runtime.db.engine.sync_engine.pool
    assert (pool.size(), pool._max_overflow) == (7, 7)  # type: ignore[attr-defined]


def test_a_pool_of_no_connection_is_refused() -> None:
    with pytest.raises(ValueError, match="database_pool_size must be at least 1"):
        Database("postgresql+asyncpg://postgres@127.0.0.1/none", pool_size=0)


async def test_the_pool_keeps_its_size_open_after_a_burst(postgres_database: str | None,
                                                          ) -> None:
    if postgres_database is None:
        pytest.skip("DUTYLINE_TEST_POSTGRES_URL is not set: the pool is PostgreSQL's")
    db = Database(postgres_database, pool_size=2)
    try:
        hold, all_in = asyncio.Event(), asyncio.Event()
        inside = 0

        async def use() -> None:
            nonlocal inside
            async with db.transaction(write=False) as conn:
                await conn.execute(text("SELECT 1"))
                inside += 1
                if inside == 4:
                    all_in.set()
                await hold.wait()

        users = [asyncio.create_task(use()) for _ in range(4)]
        await all_in.wait()
        assert db.engine.sync_engine.pool.checkedout() == 4  # type: ignore[attr-defined]
        hold.set()
        await asyncio.gather(*users)
        assert db.engine.sync_engine.pool.checkedin() == 2  # type: ignore[attr-defined]
    finally:
        await db.dispose()
