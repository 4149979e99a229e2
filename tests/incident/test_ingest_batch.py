"""Group commit of pushes on SQLite (incident/ingest/batch.py): pushes that arrive together
share a transaction, each in its own savepoint, so one failing push changes nothing for the
others and answers its own error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest
from sqlalchemy import Connection, insert, select

from dutyline.db.engine import Database
from dutyline.db.tables.platform import account
from dutyline.incident.ingest.batch import IngestBatcher
from tests.fixtures.api import Api, Reply
from tests.incident.conftest import Wired, event, push

pytestmark = pytest.mark.anyio


async def test_concurrent_pushes_with_failures_in_between(
    capi: Api, channel_with_integration: Callable[..., Awaitable[Wired]]
) -> None:
    wired = await channel_with_integration()
    replies: dict[int, Reply] = {}

    async def one(i: int) -> None:
        body = event(title=" " if i % 5 == 0 else f"disk {i}", key=f"k{i}")
        replies[i] = await push(capi, wired.key, body)

    async with anyio.create_task_group() as group:
        for i in range(40):
            group.start_soon(one, i)
    failed = sorted(i for i, r in replies.items() if r.status != 200)
    assert failed == list(range(0, 40, 5))
    assert all(replies[i].code == "InvalidParameter" for i in failed)
    alerts = await capi.call("/alert/list", {
        "start_time": 1_699_990_000, "end_time": 1_700_010_000, "limit": 100,
    }, key=wired.account.key)
    assert alerts.data["total"] == 32


def adder(account_id: int, fail: bool) -> Callable[[Connection], int]:
    """A push's work: a sync function of the batch's connection (run on the DB thread)."""
    def work(conn: Connection) -> int:
        conn.execute(insert(account).values(
            account_id=account_id, account_name="x", created_at=0, updated_at=0))
        if fail:
            raise ValueError(f"push {account_id} refused")
        return account_id
    return work


async def stored_accounts(db: Database) -> list[int]:
    async with db.connect() as conn:
        return sorted((await conn.execute(select(account.c.account_id))).scalars().all())


async def test_a_lone_failing_work_stores_nothing(database_url: str) -> None:
    db = Database(database_url)
    batcher = IngestBatcher(db)
    try:
        with pytest.raises(ValueError, match="push 7 refused"):
            await batcher.run(adder(7, True))
        assert await batcher.run(adder(8, False)) == 8
        assert await stored_accounts(db) == [8]
    finally:
        await db.dispose()


async def test_a_failing_work_rolls_back_alone(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    batcher = IngestBatcher(db)

    results: dict[int, object] = {}

    async def run(account_id: int) -> None:
        try:
            results[account_id] = await batcher.run(adder(account_id, account_id % 3 == 0))
        except ValueError as exc:
            results[account_id] = exc

    try:
        async with anyio.create_task_group() as group:
            for account_id in range(1, 13):
                group.start_soon(run, account_id)
        # Twelve concurrent pushes, fewer transactions: they were batched.
        assert 1 <= batcher.commits < 12
        refused = sorted(k for k, v in results.items() if isinstance(v, ValueError))
        assert refused == [3, 6, 9, 12]
        assert await stored_accounts(db) == [1, 2, 4, 5, 7, 8, 10, 11]
    finally:
        await db.dispose()
