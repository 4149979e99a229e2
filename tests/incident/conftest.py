"""Fixtures of the ingestion and alert tests: an app on a fake clock, and channels with an
integration made through the API (so the integration key is a real one); and, for what
paging hears of incidents, the paging suites' app (`papi`) and webhook receiver."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from dutyline.config import Settings
from tests.dispatch.receiver import receiver  # noqa: F401  (the fixture)
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, Reply, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.paging import papi  # noqa: F401  (the fixture)

PUSH_PATH = "/event/push/alert/standard"


@dataclass(frozen=True)
class Wired:
    account: Person
    channel_id: int
    integration_id: int
    key: str  # the integration key


async def wire(
    api: Api, account: Person, *, name: str = "Payments", group: dict[str, Any] | None = None,
    **channel: Any,
) -> Wired:
    """A channel (with the given settings) and one standard integration in it."""
    body: dict[str, Any] = {"channel_name": name, **channel}
    if group is not None:
        body["group"] = group
    created = await api.call("/channel/create", body, key=account.key)
    channel_id = int(created.data["channel_id"])
    integ = await api.call(
        "/integration/create", {"channel_id": channel_id, "integration_name": f"{name} std"},
        key=account.key,
    )
    return Wired(account, channel_id, int(integ.data["integration_id"]),
                 integ.data["integration_key"])


async def push(
    api: Api, key: str | None, body: Any, *, headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    params = {"integration_key": key} if key is not None else {}
    if raw is not None:
        response = await api.client.post(PUSH_PATH, params=params, content=raw,
                                         headers=headers)
    else:
        response = await api.client.post(PUSH_PATH, params=params, json=body, headers=headers)
    return Reply(response.status_code, response.json(), response.headers)


def event(title: str = "disk full", status: str = "Critical", key: str | None = "k1",
          **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"title_rule": title, "event_status": status, **extra}
    if key is not None:
        body["alert_key"] = key
    return body


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1_700_000_000.0)


@pytest.fixture
async def capi(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The app on a clock the test moves."""
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
async def acme(capi: Api) -> Person:
    return await new_account(capi, "Acme")


@pytest.fixture
def channel_with_integration(capi: Api, acme: Person) -> Callable[..., Awaitable[Wired]]:
    """wire(...) bound to the fake-clock app and the Acme account."""

    async def make(**kw: Any) -> Wired:
        return await wire(capi, acme, **kw)

    return make
