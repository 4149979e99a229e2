"""A task cancelled in the middle of a statement leaves the database helpers as a
`CancelledError`, never as the `PendingRollbackError` SQLAlchemy raises while cleaning up the
connection the cancellation invalidated (db/engine.py `CancellationGuard`). Loops that go
on after an `Exception` (the worker's polls) depend on it to stop when cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.engine import CancellationGuard, Database

pytestmark = pytest.mark.anyio

Block = Callable[[Database], AbstractAsyncContextManager[AsyncConnection]]
BLOCKS: dict[str, Block] = {
    "connect": lambda db: db.connect(),
    "read transaction": lambda db: db.transaction(write=False),
    "write transaction": lambda db: db.transaction(write=True),
}



async def _sleeping_on_the_server(pg: Database) -> bool:
    async with pg.connect() as conn:
        return bool((await conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state = 'active' AND query LIKE 'SELECT pg_sleep%'"
        ))).scalar_one())


@pytest.mark.parametrize("block", list(BLOCKS))
async def test_cancelled_mid_statement_raises_cancelled(pg: Database, block: str) -> None:
    started = asyncio.Event()
    outcome: list[BaseException] = []

    async def sleeper() -> None:
        try:
            async with BLOCKS[block](pg) as conn:
                started.set()
                await conn.execute(text("SELECT pg_sleep(30)"))
        except BaseException as exc:
            outcome.append(exc)
            raise

    task = asyncio.create_task(sleeper())
    await started.wait()
    with anyio.fail_after(10):  # until the statement is on the server
        while True:
            if await _sleeping_on_the_server(pg):
                break
            await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 20)
    assert len(outcome) == 1 and isinstance(outcome[0], asyncio.CancelledError)
    # The pool is usable afterwards.
    async with pg.transaction(write=False) as conn:
        assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1


async def test_the_guard_turns_only_a_cleanup_error_back_into_the_cancellation() -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom):  # no cancellation: an error passes through unchanged
        async with (guard := CancellationGuard()), guard.body():
            raise Boom

    @asynccontextmanager
    async def failing_cleanup() -> AsyncIterator[None]:
        try:
            yield
        finally:
            raise Boom  # what an invalidated connection's rollback does

    original = asyncio.CancelledError()
    with pytest.raises(asyncio.CancelledError) as caught:
        async with (guard := CancellationGuard()), failing_cleanup(), guard.body():
            raise original
    assert caught.value is original and isinstance(caught.value.__cause__, Boom)
