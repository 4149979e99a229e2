"""Fixtures of the durable-work tests: a runtime on a fake clock and the effect table."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from dutyline.api.runtime import Runtime
from dutyline.app import build_runtime
from dutyline.config import Settings
from dutyline.kit.clock import FakeClock
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
