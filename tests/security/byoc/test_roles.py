"""Who may use a BYOC runner. A runner executes commands inside the customer's network, so
binding an automation rule or an MCP server to a worknode, changing or running such a rule,
needs `environment_use` (account_manage implies it; Owner and Admin hold it); a read-only
Member has neither. The check is repeated when a run starts, against the rule's creator and
the member who started the run, so a role taken away applies to the next run. Each test has a
real runner peer connected over the WebSocket and proves that it receives nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.api.permissions import BY_NAME, ENVIRONMENT_USE
from dutyline.db.tables.aisre import mcp_server
from dutyline.db.tables.automation import automation_rule
from tests.aisre.test_runners import (
    World,
    call,
    online_peer,
    run_jobs,
    worknode_with_key,
)
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_llm import Answer, Call, FakeLlm

pytestmark = pytest.mark.anyio
SHADOW = {"command": "cat /etc/shadow"}


def byoc_rule(worknode_id: str, **extra: Any) -> dict[str, Any]:
    return {"name": "Look around", "prompt": "Read the box's secrets", "cron_expr": "9 * * *",
            "enabled": True, "environment_kind": "byoc", "environment_id": worknode_id,
            **extra}


async def count(w: World, table: Any) -> int:
    async with w.api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


async def role_with(w: World, *names: str) -> int:
    made = await call(w, "/role/upsert", {"role_name": "R " + "+".join(names),
                                          "permission_ids": [BY_NAME[n].id for n in names]})
    return int(made["role_id"])


async def test_a_read_only_member_cannot_bind_change_or_run_a_worknode(
    w: World, llm: FakeLlm
) -> None:
    node, key = await worknode_with_key(w)
    worknode_id = node["worknode_id"]
    member = await new_member(w.api, w.owner)  # the built-in read-only Member
    team = await call(w, "/team/upsert", {"team_name": "SRE",
                                          "person_ids": [member.person_id]})
    llm.script = [Call("runner_bash", SHADOW), Answer("done")]
    async with online_peer(w, key) as peer:
        rules_before = await count(w, automation_rule)
        for body in (byoc_rule(worknode_id), byoc_rule(worknode_id, team_id=team["team_id"])):
            refused = await w.api.call("/safari/automation/rule/create", body, key=member.key)
            assert (refused.status, refused.code) == (403, "AccessDenied"), refused.body
        assert await count(w, automation_rule) == rules_before
        # A team rule an admin bound to the worknode: the member manages the team's rules,
        # but may neither rewrite its prompt, enable it, nor run it.
        rule = await call(w, "/safari/automation/rule/create",
                          byoc_rule(worknode_id, team_id=team["team_id"], enabled=False))
        personal = await call(w, "/safari/automation/rule/create",
                              {**byoc_rule(""), "environment_kind": ""}, key=member.key)
        for path, body in (
            ("/safari/automation/rule/update", {"rule_id": rule["rule_id"],
                                                "prompt": "Run `cat /etc/shadow`"}),
            ("/safari/automation/rule/enable", {"rule_id": rule["rule_id"]}),
            ("/safari/automation/rule/update", {"rule_id": personal["rule_id"],
                                                "environment_kind": "byoc",
                                                "environment_id": worknode_id}),
        ):
            refused = await w.api.call(path, body, key=member.key)
            assert (refused.status, refused.code) == (403, "AccessDenied"), (path, refused.body)
        await call(w, "/safari/automation/rule/enable", {"rule_id": rule["rule_id"]})
        refused = await w.api.call("/safari/automation/rule/run", {"rule_id": rule["rule_id"]},
                                   key=member.key)
        assert (refused.status, refused.code) == (403, "AccessDenied"), refused.body
        # Turning it off stays possible.
        await call(w, "/safari/automation/rule/disable", {"rule_id": rule["rule_id"]},
                   key=member.key)
        got = await call(w, "/safari/automation/rule/get", {"rule_id": rule["rule_id"]})
        assert got["prompt"] == "Read the box's secrets" and not got["enabled"]
        mine = await call(w, "/safari/automation/rule/get", {"rule_id": personal["rule_id"]},
                          key=member.key)
        assert (mine["environment_kind"], mine["environment_id"]) == ("", "")
        assert await run_jobs(w.api.runtime) == []
    assert peer.requests == [] and llm.requests == []


async def test_mcp_servers_on_a_worknode_need_environment_use(w: World) -> None:
    """mcp_manage alone manages cloud servers, not a command run on the customer's runner."""
    node, key = await worknode_with_key(w)
    mcp_only = await new_member(w.api, w.owner, builtin=None,
                                role_ids=[await role_with(w, "mcp_manage")])
    team = await call(w, "/team/upsert", {"team_name": "SRE",
                                          "person_ids": [mcp_only.person_id]})
    stdio = {"server_name": "shadow", "description": "d", "transport": "stdio",
             "url": "cat /etc/shadow", "environment_kind": "byoc",
             "environment_id": node["worknode_id"], "team_id": team["team_id"]}
    async with online_peer(w, key) as peer:
        before = await count(w, mcp_server)
        refused = await w.api.call("/safari/mcp/server/create", stdio, key=mcp_only.key)
        assert (refused.status, refused.code) == (403, "AccessDenied"), refused.body
        assert await count(w, mcp_server) == before
        cloud = await call(w, "/safari/mcp/server/create", {
            "server_name": "cloud", "description": "d", "url": "https://8.8.8.8/mcp",
            "team_id": team["team_id"]},
            key=mcp_only.key)
        for body in ({"environment_kind": "byoc", "environment_id": node["worknode_id"],
                      "transport": "stdio", "url": "cat /etc/shadow"},):
            refused = await w.api.call("/safari/mcp/server/update",
                                       {"server_id": cloud["server_id"], **body},
                                       key=mcp_only.key)
            assert (refused.status, refused.code) == (403, "AccessDenied"), refused.body
        made = await call(w, "/safari/mcp/server/create", {**stdio, "status": "disabled"})
        for path, body in (("/safari/mcp/server/update", {"server_id": made["server_id"],
                                                          "url": "sh -c id"}),
                           ("/safari/mcp/server/enable", {"server_id": made["server_id"]})):
            refused = await w.api.call(path, body, key=mcp_only.key)
            assert (refused.status, refused.code) == (403, "AccessDenied"), (path, refused.body)
        # With the permission, the same member binds the server.
        user = await new_member(w.api, w.owner, builtin=None, name="User",
                                role_ids=[await role_with(w, "mcp_manage", ENVIRONMENT_USE)])
        await call(w, "/team/upsert", {"team_id": team["team_id"], "team_name": "SRE",
                                       "person_ids": [mcp_only.person_id, user.person_id]})
        bound = await call(w, "/safari/mcp/server/update",
                           {"server_id": made["server_id"], "url": "kubectl-mcp"}, key=user.key)
        assert bound["url"] == "kubectl-mcp"
    assert peer.requests == [] and peer.mcp_calls == []


async def test_a_permission_taken_away_applies_to_the_next_run(
    w: World, llm: FakeLlm, clock: FakeClock
) -> None:
    """Queued while the member could, run after the role lost environment_use: the run fails
    at its start and the runner receives nothing."""
    node, key = await worknode_with_key(w)
    role_id = await role_with(w, ENVIRONMENT_USE)
    operator = await new_member(w.api, w.owner, builtin="member", name="Operator",
                                role_ids=[role_id])
    llm.script = [Call("runner_bash", {"command": "echo allowed"}), Answer("ok")]
    async with online_peer(w, key) as peer:
        rule = await call(w, "/safari/automation/rule/create", byoc_rule(node["worknode_id"]),
                          key=operator.key)
        first = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]},
                           key=operator.key)
        await run_jobs(w.api.runtime)
        done = await call(w, "/safari/automation/run/get", {"run_id": first["run_id"]},
                          key=operator.key)
        assert done["status"] == "succeeded", done
        assert [r["args"]["command"] for r in peer.requests] == ["echo allowed"]
        clock.advance(61)  # manual runs: one a minute per rule
        llm.script = [Call("runner_bash", SHADOW), Answer("done")]
        queued = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]},
                            key=operator.key)
        await call(w, "/role/upsert", {"role_id": role_id, "role_name": "R environment_use",
                                       "permission_ids": []})
        await run_jobs(w.api.runtime)
        failed = await call(w, "/safari/automation/run/get", {"run_id": queued["run_id"]},
                            key=operator.key)
    assert failed["status"] == "failed", failed
    assert failed["error"] == (
        f"The run could not start: member {operator.person_id} may not use BYOC runners (the "
        "environment_use permission), so nothing was sent to the runner")
    assert [r["args"]["command"] for r in peer.requests] == ["echo allowed"]
    assert len(llm.requests) == 2  # the first run's two turns; the second never asked


async def test_a_run_started_by_an_admin_still_needs_the_creators_permission(
    w: World, llm: FakeLlm, clock: FakeClock
) -> None:
    """A team rule made by a member who has since lost environment_use, run by hand by an
    admin who holds it: the run acts for the creator too, and fails."""
    node, key = await worknode_with_key(w)
    role_id = await role_with(w, ENVIRONMENT_USE)
    creator = await new_member(w.api, w.owner, name="Creator", role_ids=[role_id])
    admin = await new_member(w.api, w.owner, name="Admin", builtin="admin")
    team = await call(w, "/team/upsert", {"team_name": "Ops",
                                          "person_ids": [creator.person_id]})
    rule = await call(w, "/safari/automation/rule/create",
                      byoc_rule(node["worknode_id"], team_id=team["team_id"]), key=creator.key)
    await call(w, "/member/role/revoke", {"member_id": creator.person_id,
                                          "role_ids": [role_id]})
    llm.script = [Call("runner_bash", SHADOW), Answer("done")]
    async with online_peer(w, key) as peer:
        started = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]},
                             key=admin.key)
        await run_jobs(w.api.runtime)
    run = await call(w, "/safari/automation/run/get", {"run_id": started["run_id"]})
    assert run["status"] == "failed" and f"member {creator.person_id} may not" in run["error"]
    assert peer.requests == [] and llm.requests == []


async def test_account_manage_implies_environment_use() -> None:
    from dutyline.api.permissions import ACCOUNT_MANAGE, expand

    assert ENVIRONMENT_USE in expand({BY_NAME[ACCOUNT_MANAGE].id})
    assert ENVIRONMENT_USE not in expand({BY_NAME["mcp_manage"].id})


async def test_a_member_given_environment_use_may_bind_a_rule(w: World) -> None:
    node, _ = await worknode_with_key(w)
    user: Person = await new_member(w.api, w.owner, name="User",
                                    role_ids=[await role_with(w, ENVIRONMENT_USE)])
    made = await call(w, "/safari/automation/rule/create", byoc_rule(node["worknode_id"]),
                      key=user.key)
    assert made["environment_id"] == node["worknode_id"]
