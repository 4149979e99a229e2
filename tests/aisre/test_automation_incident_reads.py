"""An automation's incident tools read through the guarded incident services: its reader holds
the permission they require (never more than its scope's visibility)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest

from dutyline.aisre.automation.tools import ReadScope, incident_tools
from dutyline.config import Settings
from tests.fixtures.accounts import new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.incident.lifecycle_support import create

pytestmark = pytest.mark.anyio


@pytest.fixture
async def capi(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(1_700_000_000)) as client:
        yield client


async def test_the_list_tool_lists_the_scope_s_incidents(capi: Api) -> None:
    owner = await new_account(capi, "Acme")
    made = await create(capi, owner, title="database latency high")
    capi.runtime.clock.advance(60)
    tools = {t.name: t for t in incident_tools(
        capi.runtime, ReadScope(account_id=owner.account_id, owner_id=owner.person_id,
                                team_id=0))}
    listed = msgspec.json.decode(await tools["dutyline_list_incidents"].call({"hours": 1}))
    assert listed["total"] == 1
    assert [i["incident_id"] for i in listed["items"]] == [made]
