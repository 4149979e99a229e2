"""An automation's agent loop offers the monitor tools (/monit/tools/catalog|invoke) when the
rule's creator may manage alert rules, and reads through monit's guarded services with no
more than that permission, against a Prometheus-API peer on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest

from dutyline.aisre.automation.tools import ToolFailed, toolbox
from dutyline.config import Settings
from tests.fixtures.accounts import new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_prometheus import PromTable
from tests.fixtures.loopback import serve_asgi
from tests.monit.support import datasource

pytestmark = pytest.mark.anyio
PROBE = 'node_uname_info{instance=~"web\\\\-01(:[0-9]+)?"} or node_uname_info{nodename="web-01"}'
MONIT_TOOLS = {"dutyline_monit_tools_catalog", "dutyline_monit_tools_invoke"}


@pytest.fixture
async def capi(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(1_700_000_000)) as client:
        yield client


@pytest.fixture
def table() -> PromTable:
    return PromTable(answers={
        PROBE: [({"__name__": "node_uname_info", "instance": "web-01:9100"}, 1.0)],
        'max(node_load1{instance="web-01:9100"})': [({}, 2.5)]})


@pytest.fixture
def peer(table: PromTable) -> Iterator[str]:
    with serve_asgi(table.app()) as url:
        yield url


async def test_the_creator_s_permission_decides_and_the_tools_answer(
        capi: Api, table: PromTable, peer: str) -> None:
    owner = await new_account(capi)
    await datasource(capi, owner, peer)
    reader = await new_member(capi, owner, name="Reader")  # no alert rule permission
    problems: list[str] = []
    without = await toolbox(capi.runtime, account_id=owner.account_id, team_id=0,
                            owner_id=reader.person_id, problems=problems)
    assert not MONIT_TOOLS & {t.name for t in without}
    tools = {t.name: t for t in await toolbox(capi.runtime, account_id=owner.account_id,
                                              team_id=0, owner_id=owner.person_id,
                                              problems=problems)}
    assert set(tools) >= MONIT_TOOLS and problems == []
    catalog = msgspec.json.decode(await tools["dutyline_monit_tools_catalog"].call(
        {"target_locator": "host:web-01"}))
    assert catalog["target"]["instances"] == ["web-01:9100"]
    assert "host.cpu" in [t["name"] for t in catalog["tools"]]
    invoked = msgspec.json.decode(await tools["dutyline_monit_tools_invoke"].call({
        "target_locator": "host:web-01",
        "tools": [{"tool": "promql_query",
                   "params": {"query": 'max(node_load1{instance="web-01:9100"})'}}]}))
    assert invoked["results"] == [{"tool": "promql_query", "error": "", "data": {
        "summary": "1 series (vector)", "data": [{"labels": {}, "value": 2.5}]}}]
    with pytest.raises(ToolFailed, match=r"^forward_failed: The data source prom "):
        await tools["dutyline_monit_tools_catalog"].call({"target_locator": "host:db-9"})
    with pytest.raises(ToolFailed, match="tools"):
        await tools["dutyline_monit_tools_invoke"].call({"target_locator": "host:web-01"})
