"""/safari/automation/rule/*: the contract's update, create defaults, cron forms, scope and
access, triggers, the record's required fields, and the schedule kept in step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.automation import automation_trigger
from dutyline.db.tables.scheduler import work_schedule as schedule
from dutyline.kit.cron import next_after
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, Reply

pytestmark = pytest.mark.anyio

# The contract's AutomationRuleItem fields marked "Required in response: yes".
REQUIRED = {
    "rule_id", "account_id", "team_id", "owner_id", "name", "enabled", "run_scope", "cron_expr",
    "prompt", "environment_kind", "environment_id", "schedule_trigger_enabled",
    "http_post_trigger_enabled", "can_edit", "created_at", "updated_at",
    "schedule_next_fire_at_ms", "oncall_incident_trigger_enabled",
}


@dataclass
class World:
    api: Api
    owner: Person
    admin: Person
    teammate: Person
    outsider: Person
    stranger: Person  # another account
    team_id: int
    channel_id: int


@pytest.fixture
async def w(api: Api) -> World:
    owner = await new_account(api, "Acme")
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    teammate = await new_member(api, owner, name="Teammate")
    outsider = await new_member(api, owner, name="Outsider")
    team = await api.call("/team/upsert", {"team_name": "SRE",
                                           "person_ids": [teammate.person_id]}, key=owner.key)
    channel = await api.call("/channel/create", {"channel_name": "Prod"}, key=owner.key)
    stranger = await new_account(api, "Globex")
    return World(api, owner, admin, teammate, outsider, stranger, team.data["team_id"],
                 channel.data["channel_id"])


def rule_body(**extra: Any) -> dict[str, Any]:
    return {"name": "Morning check", "prompt": "Summarise open incidents", "cron_expr": "9 * * *",
            **extra}


async def create(w: World, who: Person | None = None, **extra: Any) -> dict[str, Any]:
    reply = await w.api.call("/safari/automation/rule/create", rule_body(**extra),
                             key=(who or w.owner).key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def update(w: World, who: Person, **fields: Any) -> Reply:
    return await w.api.call("/safari/automation/rule/update", fields, key=who.key)


def assert_record(data: dict[str, Any]) -> None:
    missing = REQUIRED - set(data)
    assert not missing, missing
    assert data["rule_id"].startswith("arule_")
    assert data["run_scope"] in ("person", "team")


async def test_create_defaults_and_record(w: World) -> None:
    data = await create(w)
    assert_record(data)
    assert data["enabled"] is False
    assert data["schedule_trigger_enabled"] is True
    assert data["schedule_trigger_id"].startswith("atrig_")
    assert data["cron_expr"] == "0 9 * * *"
    assert data["team_id"] == 0 and data["run_scope"] == "person"
    assert data["owner_id"] == w.owner.person_id
    assert data["account_id"] == w.owner.account_id
    assert data["schedule_next_fire_at_ms"] == 0  # rule disabled
    assert data["http_post_trigger_enabled"] is False
    assert "http_post_token" not in data and "http_post_trigger_id" not in data
    assert data["oncall_incident_trigger_enabled"] is False
    assert data["can_edit"] is True
    assert data["created_at"] > 10**12  # milliseconds


@pytest.mark.parametrize("missing", ["name", "prompt", "cron_expr"])
async def test_create_requires_name_prompt_and_cron(w: World, missing: str) -> None:
    body = rule_body()
    body[missing] = "  " if missing != "cron_expr" else ""
    reply = await w.api.call("/safari/automation/rule/create", body, key=w.owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert missing in reply.message


async def test_enabling_computes_the_next_fire_in_the_rule_time_zone(w: World) -> None:
    rule = await create(w, enabled=True, timezone="Asia/Shanghai", cron_expr="30 9 * * *")
    now_ms = int(w.api.runtime.clock.now() * 1000)
    expected = next_after("30 9 * * *", "Asia/Shanghai", now_ms)
    assert rule["schedule_next_fire_at_ms"] == expected
    # Disable the schedule trigger: 0, and the stored schedule is paused in the same commit.
    off = await update(w, w.owner, rule_id=rule["rule_id"], schedule_trigger_enabled=False)
    assert off.data["schedule_next_fire_at_ms"] == 0
    async with w.api.runtime.db.connect() as conn:
        row = (await conn.execute(select(schedule.c.next_fire_at).where(
            schedule.c.owner_id == rule["rule_id"]))).one()
    assert row.next_fire_at is None
    on = await update(w, w.owner, rule_id=rule["rule_id"], schedule_trigger_enabled=True,
                      cron_expr="0 10 * * *")
    assert on.data["schedule_next_fire_at_ms"] == next_after("0 10 * * *", "Asia/Shanghai",
                                                             now_ms)
    rule_off = await update(w, w.owner, rule_id=rule["rule_id"], enabled=False)
    assert rule_off.data["schedule_next_fire_at_ms"] == 0


async def test_update_changes_only_what_is_sent(w: World) -> None:
    rule = await create(w)
    reply = await update(w, w.owner, rule_id=rule["rule_id"], name="Renamed")
    data = reply.data
    assert_record(data)
    assert data["name"] == "Renamed"
    for same in ("prompt", "cron_expr", "enabled", "team_id", "environment_kind",
                 "schedule_trigger_id", "created_at"):
        assert data[same] == rule[same], same
    assert data["updated_at"] >= rule["updated_at"]
    got = await w.api.call("/safari/automation/rule/get", {"rule_id": rule["rule_id"]},
                           key=w.owner.key)
    assert got.data == data


@pytest.mark.parametrize(("cron", "normalized"), [
    ("15 8 * * 1-5", "15 8 * * 1-5"), ("8 * * 1-5", "0 8 * * 1-5"), ("07 */2 * * *", "7 */2 * * *"),
])
async def test_update_normalises_cron(w: World, cron: str, normalized: str) -> None:
    rule = await create(w)
    reply = await update(w, w.owner, rule_id=rule["rule_id"], cron_expr=cron)
    assert reply.data["cron_expr"] == normalized


@pytest.mark.parametrize("cron", [
    "0 0 9 * * 1", "@daily", "*/5 * * * *", "0-10 9 * * *", "1,2 9 * * *", "61 9 * * *", "x",
])
async def test_update_refuses_other_cron_forms(w: World, cron: str) -> None:
    rule = await create(w)
    reply = await update(w, w.owner, rule_id=rule["rule_id"], cron_expr=cron)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert "cron_expr" in reply.message


async def test_update_field_rules(w: World) -> None:
    rule = await create(w)
    rid = rule["rule_id"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "x" * 256}, "name"),
        ({"name": ""}, "name"),
        ({"team_id": w.team_id}, "team_id"),  # scope is fixed at creation
        ({"team_id": -1}, "team_id"),
        ({"environment_kind": "moon"}, "environment_kind"),
        ({"environment_kind": "byoc"}, "environment_id"),
        ({"rotate_http_post_trigger_token": True}, "rotate_http_post_trigger_token"),
        ({"oncall_incident_trigger_enabled": True}, "oncall_incident_channel_ids"),
        ({"oncall_incident_trigger_enabled": True, "oncall_incident_channel_ids": [w.channel_id]},
         "oncall_incident_severities"),
        ({"oncall_incident_trigger_enabled": True, "oncall_incident_severities": ["Critical"]},
         "oncall_incident_channel_ids"),
        ({"oncall_incident_channel_ids": [w.channel_id], "oncall_incident_severities": ["Info"]},
         "oncall_incident_trigger_enabled"),
        ({"oncall_incident_trigger_enabled": True, "oncall_incident_channel_ids": [999],
          "oncall_incident_severities": ["Info"]}, "oncall_incident_channel_ids"),
        ({"oncall_incident_trigger_enabled": True, "oncall_incident_channel_ids": [w.channel_id],
          "oncall_incident_severities": ["Fatal"]}, "oncall_incident_severities"),
        ({"timezone": "Mars/Base"}, "timezone"),
    ]
    for fields, field in cases:
        reply = await update(w, w.owner, rule_id=rid, **fields)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), fields
        assert field in reply.message, (fields, reply.message)
    missing = await w.api.call("/safari/automation/rule/update", {"name": "x"}, key=w.owner.key)
    assert (missing.status, missing.code) == (400, "InvalidParameter")
    assert "rule_id" in missing.message
    same_team = await update(w, w.owner, rule_id=rid, team_id=0, name="x" * 255)
    assert same_team.status == 200 and same_team.data["name"] == "x" * 255
    # Nothing of the refused updates was stored.
    got = await w.api.call("/safari/automation/rule/get", {"rule_id": rid}, key=w.owner.key)
    assert got.data["oncall_incident_trigger_enabled"] is False
    assert "oncall_incident_trigger_id" not in got.data


async def worknode(w: World, who: Person, name: str) -> str:
    made = await w.api.call("/safari/worknode/create", {"name": name}, key=who.key)
    assert made.status == 200, made.body
    return str(made.data["worknode_id"])


async def test_environment(w: World) -> None:
    node = await worknode(w, w.owner, "runner-1")
    rule = await create(w)
    byoc = await update(w, w.owner, rule_id=rule["rule_id"], environment_kind="byoc",
                        environment_id=node)
    assert (byoc.data["environment_kind"], byoc.data["environment_id"]) == ("byoc", node)
    cloud = await update(w, w.owner, rule_id=rule["rule_id"], environment_kind="cloud")
    assert cloud.data["environment_kind"] == "cloud"
    auto = await update(w, w.owner, rule_id=rule["rule_id"], environment_kind="")
    assert auto.data["environment_kind"] == ""
    made = await create(w, environment_kind="byoc", environment_id=node)
    assert (made["environment_kind"], made["environment_id"]) == ("byoc", node)


async def rule_count(w: World) -> int:
    listed = await w.api.call("/safari/automation/rule/list", {}, key=w.owner.key)
    return int(listed.data["total"])


async def test_a_byoc_rule_must_name_a_worknode_of_its_account(w: World) -> None:
    """On create and update, an unknown worknode and another account's get the same 400, and
    nothing is written."""
    theirs = await worknode(w, w.stranger, "globex-runner")
    mine = await worknode(w, w.owner, "acme-runner")
    rule = await create(w)
    before = await rule_count(w)
    for wrong in ("wn_000000000000000000000000", theirs, "runner-1"):
        made = await w.api.call("/safari/automation/rule/create", rule_body(
            environment_kind="byoc", environment_id=wrong), key=w.owner.key)
        assert (made.status, made.code) == (400, "InvalidParameter"), wrong
        assert made.message == ("Invalid parameter environment_id: names no worknode of this "
                                "account (see /safari/worknode/list)")
        changed = await update(w, w.owner, rule_id=rule["rule_id"], environment_kind="byoc",
                               environment_id=wrong, name="renamed")
        assert (changed.status, changed.message) == (400, made.message)
    assert await rule_count(w) == before
    got = await w.api.call("/safari/automation/rule/get", {"rule_id": rule["rule_id"]},
                           key=w.owner.key)
    assert (got.data["environment_kind"], got.data["environment_id"]) == ("", "")
    assert got.data["name"] == "Morning check"
    # Naming the worknode alone checks it against the rule's kind, byoc once set.
    ok = await update(w, w.owner, rule_id=rule["rule_id"], environment_kind="byoc",
                      environment_id=mine)
    assert ok.status == 200
    moved = await update(w, w.owner, rule_id=rule["rule_id"], environment_id=theirs)
    assert (moved.status, moved.code) == (400, "InvalidParameter")
    # An update that leaves the environment alone is not refused once its worknode is gone.
    gone = await w.api.call("/safari/worknode/delete", {"worknode_id": mine}, key=w.owner.key)
    assert gone.status == 200
    disabled = await update(w, w.owner, rule_id=rule["rule_id"], enabled=False)
    assert disabled.status == 200 and disabled.data["environment_id"] == mine


async def test_http_post_trigger_token_is_shown_once_and_stored_hashed(w: World) -> None:
    rule = await create(w)
    made = await update(w, w.owner, rule_id=rule["rule_id"], http_post_trigger_enabled=True)
    data = made.data
    token = data["http_post_token"]
    trigger_id = data["http_post_trigger_id"]
    assert token.startswith("dlat_") and len(token) > 40
    assert trigger_id.startswith("atrig_")
    assert data["http_post_trigger_url"] == f"/safari/automation/triggers/{trigger_id}/fire"
    assert data["http_post_trigger_enabled"] is True
    for again in (
        await w.api.call("/safari/automation/rule/get", {"rule_id": rule["rule_id"]},
                         key=w.owner.key),
        await update(w, w.owner, rule_id=rule["rule_id"], http_post_trigger_enabled=True),
        await update(w, w.owner, rule_id=rule["rule_id"], name="other"),
    ):
        assert "http_post_token" not in again.data
        assert again.data["http_post_trigger_id"] == trigger_id
    async with w.api.runtime.db.connect() as conn:
        stored = (await conn.execute(select(automation_trigger.c.token_hash).where(
            automation_trigger.c.trigger_id == trigger_id))).scalar_one()
    assert token not in stored and len(stored) == 64
    rotated = await update(w, w.owner, rule_id=rule["rule_id"],
                           rotate_http_post_trigger_token=True)
    assert rotated.data["http_post_token"] not in (None, token)
    off = await update(w, w.owner, rule_id=rule["rule_id"], http_post_trigger_enabled=False)
    assert off.data["http_post_trigger_enabled"] is False
    assert off.data["http_post_trigger_id"] == trigger_id


async def test_http_post_trigger_at_creation(w: World) -> None:
    rule = await create(w, http_post_trigger_enabled=True, schedule_trigger_enabled=False)
    assert rule["http_post_token"].startswith("dlat_")
    assert rule["schedule_trigger_enabled"] is False


async def test_oncall_incident_trigger(w: World) -> None:
    rule = await create(w)
    made = await update(w, w.owner, rule_id=rule["rule_id"], oncall_incident_trigger_enabled=True,
                        oncall_incident_channel_ids=[w.channel_id],
                        oncall_incident_severities=["Critical", "Warning"])
    data = made.data
    assert data["oncall_incident_trigger_enabled"] is True
    assert data["oncall_incident_trigger_id"].startswith("atrig_")
    assert data["oncall_incident_channel_ids"] == [w.channel_id]
    assert data["oncall_incident_severities"] == ["Critical", "Warning"]
    narrowed = await update(w, w.owner, rule_id=rule["rule_id"],
                            oncall_incident_severities=["Info"])
    assert narrowed.data["oncall_incident_severities"] == ["Info"]
    assert narrowed.data["oncall_incident_channel_ids"] == [w.channel_id]
    off = await update(w, w.owner, rule_id=rule["rule_id"], oncall_incident_trigger_enabled=False)
    assert off.data["oncall_incident_trigger_enabled"] is False
    on = await update(w, w.owner, rule_id=rule["rule_id"], oncall_incident_trigger_enabled=True)
    assert on.data["oncall_incident_trigger_enabled"] is True  # existing: filters kept


async def test_access_to_personal_and_team_rules(w: World) -> None:
    personal = await create(w, who=w.teammate)
    team_rule = await create(w, who=w.teammate, team_id=w.team_id)
    assert team_rule["run_scope"] == "team"
    # Personal: only its creator manages it; an admin sees it but may not change it.
    assert (await update(w, w.teammate, rule_id=personal["rule_id"], name="a")).status == 200
    denied = await update(w, w.admin, rule_id=personal["rule_id"], name="b")
    assert (denied.status, denied.code) == (403, "AccessDenied")
    hidden = await update(w, w.outsider, rule_id=personal["rule_id"], name="c")
    assert (hidden.status, hidden.code) == (400, "ResourceNotFound")
    # Team rule: owner, admin and the team's members manage it; others do not see it.
    for who in (w.owner, w.admin, w.teammate):
        assert (await update(w, who, rule_id=team_rule["rule_id"], name="ok")).status == 200
    other = await update(w, w.outsider, rule_id=team_rule["rule_id"], name="no")
    assert (other.status, other.code) == (400, "ResourceNotFound")
    foreign = await update(w, w.stranger, rule_id=team_rule["rule_id"], name="no")
    assert (foreign.status, foreign.code) == (400, "ResourceNotFound")
    got = await w.api.call("/safari/automation/rule/get", {"rule_id": personal["rule_id"]},
                           key=w.admin.key)
    assert got.data["can_edit"] is False
    # A member may create a rule of any team of the account, but not of another account's.
    made = await create(w, who=w.outsider, team_id=w.team_id)
    assert made["can_edit"] is False
    bad = await w.api.call("/safari/automation/rule/create", rule_body(team_id=12345),
                           key=w.owner.key)
    assert (bad.status, bad.code) == (400, "InvalidParameter")


async def test_list_visibility(w: World) -> None:
    mine = await create(w, who=w.outsider, name="outsider own")
    team_rule = await create(w, who=w.owner, team_id=w.team_id, name="team")
    owners = await create(w, who=w.owner, name="owner own")
    await create(w, who=w.stranger, name="foreign")

    async def names(who: Person, **body: Any) -> set[str]:
        reply = await w.api.call("/safari/automation/rule/list", body, key=who.key)
        assert reply.status == 200, reply.body
        for r in reply.data["rules"]:
            assert_record(r)
        assert reply.data["total"] == len(reply.data["rules"])
        return {r["name"] for r in reply.data["rules"]}

    assert await names(w.owner) == {"outsider own", "team", "owner own"}
    assert await names(w.admin) == {"outsider own", "team", "owner own"}
    assert await names(w.teammate) == {"team"}
    assert await names(w.outsider) == {"outsider own"}
    assert await names(w.owner, query="OWN") == {"outsider own", "owner own"}
    assert await names(w.owner, team_ids=[w.team_id]) == {"team"}
    assert mine["rule_id"] != team_rule["rule_id"] != owners["rule_id"]


async def test_delete(w: World) -> None:
    rule = await create(w, enabled=True)
    denied = await w.api.call("/safari/automation/rule/delete", {"rule_id": rule["rule_id"]},
                              key=w.admin.key)
    assert denied.status == 403
    gone = await w.api.call("/safari/automation/rule/delete", {"rule_id": rule["rule_id"]},
                            key=w.owner.key)
    assert gone.status == 200 and gone.body["data"] is None
    again = await w.api.call("/safari/automation/rule/get", {"rule_id": rule["rule_id"]},
                             key=w.owner.key)
    assert (again.status, again.code) == (400, "ResourceNotFound")
    async with w.api.runtime.db.connect() as conn:
        left = (await conn.execute(select(schedule).where(
            schedule.c.owner_id == rule["rule_id"]))).all()
    assert left == []


async def test_unauthenticated(w: World) -> None:
    reply = await w.api.call("/safari/automation/rule/update", {"rule_id": "arule_x"}, key="bad")
    assert (reply.status, reply.code) == (401, "Unauthorized")


async def test_enable_and_disable_answer_null(w: World) -> None:
    rule = await create(w)
    for path, enabled in (("enable", True), ("disable", False)):
        reply = await w.api.call(f"/safari/automation/rule/{path}", {"rule_id": rule["rule_id"]},
                                 key=w.owner.key)
        assert reply.status == 200 and reply.body["data"] is None
        got = await w.api.call("/safari/automation/rule/get", {"rule_id": rule["rule_id"]},
                               key=w.owner.key)
        assert got.data["enabled"] is enabled
        assert (got.data["schedule_next_fire_at_ms"] > 0) is enabled
    denied = await w.api.call("/safari/automation/rule/enable", {"rule_id": rule["rule_id"]},
                              key=w.admin.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")
