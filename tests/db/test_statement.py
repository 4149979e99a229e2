"""Database.statement: a connection for one statement. On PostgreSQL it is in autocommit
(the statement's effect is there for everyone once it returns, with no transaction around
it: no BEGIN, no COMMIT); on SQLite it is a transaction like `transaction`, committed when
the block ends and rolled back on an error."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select

from dutyline.db.engine import Database

pytestmark = pytest.mark.anyio

_meta = MetaData()
note = Table(
    "statement_note", _meta, Column("id", Integer, primary_key=True),
    Column("text", String(40), nullable=False),
)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.drop_all)
        await conn.run_sync(_meta.create_all)
    yield database
    async with database.engine.begin() as conn:
        await conn.run_sync(_meta.drop_all)
    await database.dispose()


async def texts(db: Database) -> list[str]:
    async with db.transaction(write=False) as conn:
        return list((await conn.execute(select(note.c.text).order_by(note.c.id))).scalars())


async def test_the_statement_is_kept_once_the_block_ends(db: Database) -> None:
    async with db.statement() as conn:
        await conn.execute(insert(note).values(text="one"))
    async with db.statement(write=False) as conn:
        assert list((await conn.execute(select(note.c.text))).scalars()) == ["one"]
    assert await texts(db) == ["one"]


async def test_postgres_runs_it_outside_any_transaction_sqlite_inside_one(
        db: Database) -> None:
    if db.is_postgres:
        async with db.statement() as conn:
            await conn.execute(insert(note).values(text="one"))
            # Seen from another connection before the block ends: nothing left to commit.
            assert await texts(db) == ["one"]
            raw = await conn.get_raw_connection()
            assert raw.driver_connection is not None
            assert not raw.driver_connection.is_in_transaction()
    else:
        with pytest.raises(RuntimeError):  # noqa: PT012 - the error comes after the write
            async with db.statement() as conn:
                await conn.execute(insert(note).values(text="one"))
                raise RuntimeError("after the statement")
        assert await texts(db) == []  # rolled back with its transaction
