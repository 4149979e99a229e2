"""Back-off after failed sign-ins, per e-mail address and per client, on the fake clock."""

from __future__ import annotations

import pytest

from dutyline.web.lockout import CLIENT_RULE, EMAIL_RULE, lock_seconds
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, set_password

pytestmark = pytest.mark.anyio

EMAIL = "owner@acme.example"
PASSWORD = "correct horse battery"


def test_the_lock_doubles_and_is_bounded() -> None:
    assert [lock_seconds(EMAIL_RULE, n) for n in range(1, 11)] == [
        0, 0, 0, 0, 30, 60, 120, 240, 480, 900]
    assert lock_seconds(EMAIL_RULE, 1000) == 900
    assert lock_seconds(CLIENT_RULE, CLIENT_RULE.free - 1) == 0


async def _try(b: Browser, email: str, password: str) -> int:
    await b.get("/console/sign-in")
    return (await b.post("/console/sign-in", {"email": email, "password": password})
            ).status_code


async def test_an_address_is_locked_after_repeated_failures_then_free_again(
        api: Api, owner: Person, anonymous: Browser, clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    assert [await _try(anonymous, EMAIL, "wrong guess!") for _ in range(5)] == [401] * 5
    # Locked now: even the right password is not checked.
    locked = await _try(anonymous, EMAIL, PASSWORD)
    assert locked == 429
    page = await anonymous.post("/console/sign-in", {"email": EMAIL, "password": PASSWORD})
    assert "Try again in 1 minute" in page.text
    clock.advance(31)
    assert await _try(anonymous, EMAIL, "wrong guess!") == 401  # the sixth: 60 s now
    clock.advance(31)
    assert await _try(anonymous, EMAIL, PASSWORD) == 429
    clock.advance(30)
    assert await _try(anonymous, EMAIL, PASSWORD) == 303
    # A success clears the address's count.
    fresh = browser(api)
    assert await _try(fresh, EMAIL, "wrong guess!") == 401
    assert await _try(fresh, EMAIL, PASSWORD) == 303
    await fresh.aclose()


async def test_unknown_addresses_lock_alike(api: Api, anonymous: Browser) -> None:
    codes = [await _try(anonymous, "nobody@acme.example", "whatever it is") for _ in range(6)]
    assert codes == [401] * 5 + [429]


async def test_a_client_is_locked_after_failures_on_many_addresses(
        api: Api, owner: Person, anonymous: Browser, clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    codes = [await _try(anonymous, f"guess{i}@acme.example", "wrong guess!")
             for i in range(CLIENT_RULE.free)]
    assert set(codes) == {401}
    assert await _try(anonymous, EMAIL, PASSWORD) == 429  # the client, not the address
    clock.advance(CLIENT_RULE.base_s + 1)
    assert await _try(anonymous, EMAIL, PASSWORD) == 303


async def test_counts_are_forgotten_after_an_hour_without_failures(
        api: Api, owner: Person, anonymous: Browser, clock: FakeClock) -> None:
    await set_password(api, owner, PASSWORD)
    for _ in range(4):
        assert await _try(anonymous, EMAIL, "wrong guess!") == 401
    clock.advance(3601)
    for _ in range(4):
        assert await _try(anonymous, EMAIL, "wrong guess!") == 401
    assert await _try(anonymous, EMAIL, PASSWORD) == 303
