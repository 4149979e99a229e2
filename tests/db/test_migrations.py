"""The migrations build exactly the schema the table modules describe, on both databases."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.db.engine import Database
from dutyline.db.tables import metadata
from dutyline.db.tables.meta import include_name
from dutyline.db.tables.platform import account, member

pytestmark = pytest.mark.anyio


async def test_migrated_schema_matches_table_modules(database_url: str) -> None:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(
                # The same filter as autogenerate's (migrations/env.py): only the hand-made
                # objects named in meta.py are left out.
                lambda sync: compare_metadata(MigrationContext.configure(
                    sync, opts={"include_name": include_name}), metadata)
            )
    finally:
        await engine.dispose()
    assert diff == []


async def test_live_member_emails_are_unique_per_account(database_url: str) -> None:
    db = Database(database_url)
    row = {"account_id": 1, "member_name": "A", "email": "a@example.com", "created_at": 0,
           "updated_at": 0}
    try:
        async with db.transaction() as conn:
            await conn.execute(insert(account).values(account_id=1, account_name="x",
                                                      created_at=0, updated_at=0))
            await conn.execute(insert(member).values(member_id=10, **row))
        with pytest.raises(IntegrityError):
            async with db.transaction() as conn:
                await conn.execute(insert(member).values(member_id=11, **row))
        # A deleted member frees the address.
        async with db.transaction() as conn:
            await conn.execute(update(member).where(member.c.member_id == 10)
                               .values(status="deleted"))
            await conn.execute(insert(member).values(member_id=12, **row))
    finally:
        await db.dispose()
