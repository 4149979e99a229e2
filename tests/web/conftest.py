"""Fixtures of the console's tests; the helpers themselves are in tests/fixtures/console.py.

- `console`: the Owner of the `owner` account, signed in (a `Browser`).
- `anonymous`: a browser with no session.
- `clock`: the app's clock (the `api` of these tests runs on it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dutyline.config import Settings
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, signed_in

T0 = 1_700_000_000.0


@pytest.fixture
async def console(api: Api, owner: Person) -> AsyncIterator[Browser]:
    b = await signed_in(api, owner)
    yield b
    await b.aclose()


@pytest.fixture
async def anonymous(api: Api) -> AsyncIterator[Browser]:
    b = browser(api)
    yield b
    await b.aclose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The app on the fake clock: sessions and links expire when a test says so."""
    async with make_api(settings, clock=clock) as client:
        yield client
