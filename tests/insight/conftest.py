"""The insight tests: the app on a fake clock, and an account whose time zone changes to
summer time inside the tested window (Europe/Paris, 2026-03-29 01:00 UTC)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import update

from dutyline.config import Settings
from dutyline.db.tables.platform import account
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, Reply, make_api
from tests.fixtures.clock import FakeClock


def utc(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp())  # type: ignore[arg-type,misc]


START = utc(2026, 3, 27, 0, 0)  # the clock starts here; windows start here too


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(float(START))


@pytest.fixture
async def capi(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


async def set_time_zone(api: Api, who: Person, name: str) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == who.account_id)
                           .values(time_zone=name))


@pytest.fixture
async def acme(capi: Api) -> Person:
    person = await new_account(capi, "Acme")
    await set_time_zone(capi, person, "Europe/Paris")
    return person


def at(clock: FakeClock, t: int) -> None:
    clock.advance(t - clock.now())


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Reply:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    return reply
