"""A PostgreSQL `Database` of one pooled connection, for the tests of what our engine code
does with asyncpg's connections (pings, cancellation)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dutyline.db.engine import Database
from tests.fixtures import databases as dbs


@pytest.fixture
async def pg(postgres_database: str | None) -> AsyncIterator[Database]:
    if postgres_database is None:
        pytest.skip(f"{dbs.POSTGRES_ENV} is not set: this test is about asyncpg's connections")
    db = Database(postgres_database, pool_size=1)
    yield db
    await db.dispose()
