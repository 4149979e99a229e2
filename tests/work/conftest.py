"""Fixtures of the durable-work tests: a runtime on a fake clock, the effect table, and a
database of its own for the tests that run real worker processes."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from dutyline.api.runtime import Runtime
from dutyline.app import build_runtime
from dutyline.config import Settings
from tests.fixtures import databases as dbs
from tests.fixtures.clock import FakeClock
from tests.work.jobs_for_test import CREATE_EFFECT_TABLE, DROP_EFFECT_TABLE


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000.0)


@pytest.fixture
async def runtime(settings: Settings, clock: FakeClock) -> AsyncIterator[Runtime]:
    rt = build_runtime(settings, clock)
    async with rt.db.transaction() as conn:
        # The PostgreSQL test database lives for the whole session and is only emptied of
        # the migrated tables between tests, so this test-only table is dropped afterwards.
        await conn.execute(text(CREATE_EFFECT_TABLE))
    try:
        yield rt
    finally:
        async with rt.db.transaction() as conn:
            await conn.execute(text(DROP_EFFECT_TABLE))
        await rt.db.dispose()


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if dbs.postgres_admin_url() else ["sqlite"]


@pytest.fixture(params=_backends())
def own_database(request: pytest.FixtureRequest, sqlite_template: Path,
                 tmp_path: Path) -> Iterator[str]:
    """A fresh migrated database for worker processes (a copy of the migrated template).
    Sync on purpose: the PostgreSQL helpers run their own event loop."""
    if request.param == "sqlite":
        shutil.copyfile(sqlite_template, tmp_path / "own.db")
        yield dbs.sqlite_url(tmp_path / "own.db")
        return
    admin = dbs.postgres_admin_url()
    assert admin is not None
    url = dbs.create_postgres_database(admin)
    try:
        yield url
    finally:
        dbs.drop_postgres_database(admin, url)
