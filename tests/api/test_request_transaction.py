"""The read-then-write request transaction (api/transaction.py): while an outbound
operation is still in its read phase, other writers of the process are not held up."""

from __future__ import annotations

import anyio
import pytest
from sqlalchemy import func, insert, select

from dutyline.api.transaction import RequestTransaction
from dutyline.db.engine import Database
from dutyline.db.tables.platform import account

pytestmark = pytest.mark.anyio


async def _add_account(db: Database, account_id: int) -> None:
    async with db.transaction(write=True) as conn:
        await conn.execute(insert(account).values(
            account_id=account_id, account_name=f"a{account_id}", created_at=0, updated_at=0))


async def _other_writer_finishes_during(db: Database, *, outbound: bool) -> bool:
    """Hold a request transaction open (as if waiting on a remote server) and report whether
    another writer could commit meanwhile."""
    other_done = anyio.Event()
    async with RequestTransaction(db, write=not outbound) as tx:
        await tx.conn.execute(select(func.count()).select_from(account))

        async def other() -> None:
            await _add_account(db, 2)
            other_done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(other)
            with anyio.move_on_after(1.0):  # the "remote call"
                await other_done.wait()
            finished_meanwhile = other_done.is_set()
            await tx.begin_writes()
            await tx.conn.execute(insert(account).values(
                account_id=1, account_name="a1", created_at=0, updated_at=0))
            if not outbound:
                # Holding the write lock: the other writer can only go after we commit.
                group.cancel_scope.cancel()
    return finished_meanwhile


async def test_outbound_read_phase_does_not_block_writers(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    try:
        assert await _other_writer_finishes_during(db, outbound=True) is True
        async with db.connect() as conn:
            ids = (await conn.execute(select(account.c.account_id))).scalars().all()
        assert sorted(ids) == [1, 2]
    finally:
        await db.dispose()


async def test_a_write_transaction_holds_other_writers(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    try:
        assert await _other_writer_finishes_during(db, outbound=False) is False
    finally:
        await db.dispose()


async def test_error_after_the_step_rolls_back_the_writes(sqlite_url: str) -> None:
    db = Database(sqlite_url)

    async def fail_after_writing() -> None:
        async with RequestTransaction(db, write=False) as tx:
            await tx.begin_writes()
            await tx.conn.execute(insert(account).values(
                account_id=7, account_name="x", created_at=0, updated_at=0))
            raise RuntimeError("boom")

    try:
        with pytest.raises(RuntimeError):
            await fail_after_writing()
        async with db.connect() as conn:
            assert (await conn.execute(select(func.count()).select_from(account))).scalar() == 0
    finally:
        await db.dispose()
