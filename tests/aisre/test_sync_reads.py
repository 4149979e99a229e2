"""The AI SRE and monit reads are sync read operations (api/operation.py), and their sync
services scope a member by their teams alike whoever calls them: an actor the agent loop or a
job builds, whose teams load only on the async side, is served once they are loaded
(`aisre.scope.preload_teams`), as an app key's caller is."""

from __future__ import annotations

import pytest

from dutyline.aisre.a2a import service as a2a
from dutyline.aisre.automation import runs
from dutyline.aisre.automation import service as automation
from dutyline.aisre.mcp import service as mcp
from dutyline.aisre.scope import preload_teams
from dutyline.api.actor import Actor
from dutyline.domains import all_routers
from tests.fixtures.accounts import new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync

pytestmark = pytest.mark.anyio

SYNC_READS = (
    "/monit/datasource/info", "/monit/datasource/list", "/monit/rule/info",
    "/monit/rule/list/basic", "/monit/rule/status", "/monit/rule/export", "/monit/rule/audits",
    "/monit/rule/audit/detail", "/monit/rule/dstypes", "/monit/rule/counter/total",
    "/monit/rule/counter/status", "/monit/rule/counter/channel", "/monit/rule/counter/node",
    "/monit/store/ruleset/info", "/monit/store/ruleset/list",
    "/safari/a2a-agent/get", "/safari/a2a-agent/list",
    "/safari/automation/rule/get", "/safari/automation/rule/list",
    "/safari/automation/run/list", "/safari/automation/run/get",
    "/safari/mcp/server/list", "/safari/worknode/info", "/safari/worknode/list",
    "/safari/runner/key/list",
)


def test_the_reads_run_as_one_unit_of_database_work() -> None:
    by_path = {op.path: op for router in all_routers() for op in router.operations}
    assert [p for p in SYNC_READS if not by_path[p].sync] == []


async def test_a_member_whose_teams_load_only_asynchronously_is_scoped_by_them(
        api: Api) -> None:
    owner = await new_account(api, "Acme")
    teammate = await new_member(api, owner, name="Teammate")
    team = await api.call("/team/upsert", {"team_name": "SRE",
                                           "person_ids": [teammate.person_id]}, key=owner.key)
    team_id = team.data["team_id"]
    made = await api.call("/safari/automation/rule/create", {
        "name": "Team check", "prompt": "Summarise open incidents", "cron_expr": "9 * * *",
        "team_id": team_id}, key=owner.key)
    assert made.status == 200, made.body
    rule_id = made.data["rule_id"]
    loads: list[int] = []

    async def teams() -> frozenset[int]:
        loads.append(team_id)
        return frozenset({team_id})

    async def actor() -> Actor:
        # As the agent loop or a job builds one: its teams come from an async loader only.
        built = Actor(account_id=owner.account_id, person_id=teammate.person_id,
                      clock=api.runtime.clock, _load_team_ids=teams)
        await preload_teams(built)
        return built

    async with api.runtime.db.connect() as conn:
        got = await in_sync(conn, automation.get_rule_sync, await actor(), rule_id=rule_id)
        assert (got.rule_id, got.can_edit) == (rule_id, True)
        listed = await in_sync(conn, automation.list_rules_sync, await actor(), team_ids=None,
                               query="", offset=0, limit=10)
        assert [r.rule_id for r in listed.rules] == [rule_id]
        assert listed.rules[0].can_edit is True
        assert (await in_sync(conn, runs.list_runs_sync, await actor(), rule_id=rule_id,
                              status="", offset=0, limit=10)).total == 0
        assert await in_sync(conn, a2a.list_agents_sync, await actor(), offset=0, limit=10,
                             deps=api.runtime.deps) == (0, [])
        assert await in_sync(conn, mcp.list_servers_sync, await actor(), offset=0,
                             limit=10) == (0, [])
    assert loads == [team_id] * 5

    # An owner's reads load no teams at all.
    admin = Actor(account_id=owner.account_id, person_id=owner.person_id,
                  clock=api.runtime.clock, is_admin=True, _load_team_ids=teams)
    await preload_teams(admin)
    async with api.runtime.db.connect() as conn:
        assert (await in_sync(conn, automation.get_rule_sync,
                              admin, rule_id=rule_id)).can_edit is True
    assert loads == [team_id] * 5
