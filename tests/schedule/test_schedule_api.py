"""/schedule/create|update|delete|info|infos|list|preview|self through the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.schedule import schedule, schedule_person
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.schedule.helpers import DAY, MONDAY_SHANGHAI, ok, override, rotation

pytestmark = pytest.mark.anyio
NOW = MONDAY_SHANGHAI + 10 * 3600  # Monday 10:00 in Shanghai


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings, clock=FakeClock(NOW)) as client:
        yield client


async def post(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    return await api.raw("POST", path, params={"app_key": key}, json=body)


async def make_schedule(api: Api, owner: Person, mate: Person, **more: Any) -> int:
    body = {"schedule_name": "Primary", "description": "prod", "time_zone": "Asia/Shanghai",
            "layers": [rotation([owner.person_id], [mate.person_id], enable=MONDAY_SHANGHAI)],
            **more}
    return int((await ok(api, "/schedule/create", body, owner.key))["schedule_id"])


async def test_create_then_read_back_everywhere_against_the_reference(
        api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    created = check("/schedule/create", await post(api, "/schedule/create", {
        "schedule_name": "Primary", "description": "prod", "time_zone": "Asia/Shanghai",
        "layers": [rotation([owner.person_id], [mate.person_id], enable=MONDAY_SHANGHAI,
                            day_mask={"repeat": [1, 2, 3, 4, 5]})],
        "notify": {"advance_in_time": 300, "by": {"follow_preference": True}},
    }, owner.key))
    sid = created["data"]["schedule_id"]
    window = {"start": MONDAY_SHANGHAI, "end": MONDAY_SHANGHAI + 7 * DAY}
    info = check("/schedule/info", await post(api, "/schedule/info",
                                              {"schedule_id": sid, **window}, owner.key))["data"]
    assert (info["id"], info["schedule_id"], info["name"], info["schedule_name"]) == (
        sid, sid, "Primary", "Primary")
    assert info["time_zone"] == "Asia/Shanghai"
    assert info["notify"]["advance_in_time"] == 300
    assert info["notify"]["by"]["follow_preference"] is True
    layer = info["layers"][0]
    assert (layer["rotation_unit"], layer["rotation_value"], layer["rotation_duration"]) == (
        "day", 1, DAY)
    assert layer["schedule_id"] == sid and layer["account_id"] == owner.account_id
    final = info["final_schedule"]["schedules"]
    # Weekdays only: A Mon, B Tue, A Wed, B Thu, A Fri; nothing at the weekend.
    assert [(s["start"], s["group"]["group_name"]) for s in final] == [
        (MONDAY_SHANGHAI + i * DAY, "AB"[i % 2]) for i in range(5)]
    assert all(s["end"] - s["start"] == DAY and s["index"] == 0 for s in final)
    assert info["layer_schedules"] == info["schedule_layers"]
    assert info["cur_oncall"]["group"]["members"][0]["person_ids"] == [owner.person_id]
    assert info["cur_oncall"]["start"] == NOW
    assert info["next_oncall"]["start"] == MONDAY_SHANGHAI + DAY
    listed = check("/schedule/list", await post(api, "/schedule/list", {}, owner.key))["data"]
    assert listed["total"] == 1 and listed["items"][0]["schedule_layers"] == []
    check("/schedule/list", await post(api, "/schedule/list", window, owner.key))
    infos = check("/schedule/infos", await post(api, "/schedule/infos",
                                                {"schedule_ids": [sid, 12345]}, owner.key))
    assert [i["schedule_id"] for i in infos["data"]["items"]] == [sid]
    mine = check("/schedule/self", await post(api, "/schedule/self", window,
                                              owner.key))["data"]["items"]
    assert [s["start"] for s in mine[0]["final_schedule"]["schedules"]] == [
        MONDAY_SHANGHAI, MONDAY_SHANGHAI + 2 * DAY, MONDAY_SHANGHAI + 4 * DAY]
    check("/schedule/update", await post(api, "/schedule/update",
                                         {"schedule_id": sid, "description": "x"}, owner.key))
    check("/schedule/delete", await post(api, "/schedule/delete",
                                         {"schedule_ids": [sid]}, owner.key))
    gone = await api.call("/schedule/info", {"schedule_id": sid}, key=owner.key)
    assert (gone.status, gone.code) == (400, "ResourceNotFound")


async def test_preview_stores_nothing_and_answers_null_identity(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    reply = check("/schedule/preview", await post(api, "/schedule/preview", {
        "time_zone": "Asia/Shanghai", "start": MONDAY_SHANGHAI,
        "end": MONDAY_SHANGHAI + DAY,
        "layers": [rotation([owner.person_id], [mate.person_id], enable=MONDAY_SHANGHAI),
                   override([owner.person_id], MONDAY_SHANGHAI + 3600,
                            MONDAY_SHANGHAI + 7200)],
    }, owner.key))["data"]
    assert reply["id"] is None and reply["schedule_name"] is None and reply["schedule_id"] == 0
    assert [(s["start"] - MONDAY_SHANGHAI, s["index"])
            for s in reply["final_schedule"]["schedules"]] == [(0, 0), (3600, 1), (7200, 0)]
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(schedule))).first() is None


async def test_defaults_the_time_zone_to_the_accounts_and_update_keeps_what_is_left_out(
        api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate, time_zone=None)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert info["time_zone"] == "UTC"
    await ok(api, "/schedule/update", {"schedule_id": sid, "schedule_name": "Renamed",
                                       "time_zone": "Europe/Berlin"}, owner.key)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert (info["schedule_name"], info["description"], info["time_zone"]) == (
        "Renamed", "prod", "Europe/Berlin")
    assert len(info["layers"]) == 1 and info["layers"][0]["groups"][1]["members"][0][
        "person_ids"] == [mate.person_id]
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        rotation([mate.person_id], enable=MONDAY_SHANGHAI)]}, owner.key)
    async with api.runtime.db.connect() as conn:
        people = (await conn.execute(select(schedule_person.c.person_id).where(
            schedule_person.c.schedule_id == sid))).scalars().all()
    assert people == [mate.person_id]


async def test_webhook_secrets_are_sealed_masked_and_kept_by_the_mask(
        api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    hook = {"type": "feishu_app", "settings": {"token": "t0ps3cret", "chat_ids": ["oc_1"],
                                                "sign_secret": "s1gn"}}
    sid = await make_schedule(api, owner, mate, notify={"webhooks": [hook]})
    async with api.runtime.db.connect() as conn:
        raw = (await conn.execute(select(schedule.c.notify))).scalar_one()
    assert "t0ps3cret" not in raw and "s1gn" not in raw
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    settings = info["notify"]["webhooks"][0]["settings"]
    assert (settings["token"], settings["sign_secret"], settings["verify_token"]) == (
        "******", "******", "")
    masked = {"type": "feishu_app", "settings": {**settings, "alias": "ops"}}
    await ok(api, "/schedule/update", {"schedule_id": sid, "notify": {"webhooks": [masked]}},
             owner.key)
    async with api.runtime.db.connect() as conn:
        stored = (await conn.execute(select(schedule.c.notify))).scalar_one()
    assert '"******"' not in stored and '"alias":"ops"' in stored
    bad = await api.call("/schedule/update", {"schedule_id": sid, "notify": {"webhooks": [
        {"type": "x", "settings": {"verify_token": "******"}}]}}, key=owner.key)
    assert bad.status == 400 and "notify.webhooks[0].settings.verify_token" in bad.message


async def test_the_reference_examples_nulls_in_notify_are_empty(api: Api, owner: Person) -> None:
    """The reference's /schedule/create example sends `fixed_time`, `by.personal_channels` and
    `webhooks` as null; they read back empty."""
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate, notify={
        "advance_in_time": 300, "fixed_time": None,
        "by": {"follow_preference": True, "personal_channels": None}, "webhooks": None})
    notify = (await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key))["notify"]
    assert notify == {"advance_in_time": 300, "fixed_time": {"cycle": "", "start": ""},
                      "by": {"follow_preference": True, "personal_channels": []},
                      "webhooks": []}
    await ok(api, "/schedule/update", {"schedule_id": sid, "notify": {
        "by": {"personal_channels": ["email"]}}}, owner.key)
    notify = (await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key))["notify"]
    assert notify["by"] == {"follow_preference": False, "personal_channels": ["email"]}


@pytest.mark.parametrize(("change", "field"), [
    ({"schedule_name": ""}, "schedule_name"),
    ({"schedule_name": "x" * 41}, "schedule_name"),
    ({"description": "x" * 501}, "description"),
    ({"time_zone": "Mars/Olympus"}, "time_zone"),
    ({"team_id": 77}, "team_id"),
    ({"layers": [{"mode": 2}]}, "layers[0].mode"),
    ({"layers": [{"groups": []}]}, "layers[0].groups"),
    ({"layers": [{"rotation_unit": "year", "groups": "G"}]}, "layers[0].rotation_unit"),
    ({"layers": [{"rotation_value": 400, "groups": "G"}]}, "layers[0].rotation_value"),
    ({"layers": [{"rotation_duration": 5000, "groups": "G"}]}, "layers[0].rotation_duration"),
    ({"layers": [{"handoff_time": DAY, "groups": "G"}]}, "layers[0].handoff_time"),
    ({"layers": [{"restrict_mode": 3, "groups": "G"}]}, "layers[0].restrict_mode"),
    ({"layers": [{"restrict_mode": 1, "groups": "G"}]}, "layers[0].restrict_periods"),
    ({"layers": [{"restrict_mode": 1, "groups": "G", "restrict_periods": [
        {"restrict_start": 0, "restrict_end": DAY + 1}]}]}, "layers[0].restrict_periods[0]"),
    ({"layers": [{"day_mask": {"repeat": [7]}, "groups": "G"}]}, "layers[0].day_mask.repeat"),
    ({"layers": [{"rotation_unit": "hour", "fair_rotation": True, "groups": "G"}]},
     "layers[0].fair_rotation"),
    ({"layers": [{"enable_time": 100, "expire_time": 50, "groups": "G"}]},
     "layers[0].expire_time"),
    ({"layers": [{"mode": 1, "groups": "O"}]}, "layers[0].groups[0].end"),
    ({"layers": [{"groups": [{"members": []}]}]}, "layers[0].groups[0].members"),
    ({"layers": [{"groups": [{"members": [{"role_id": -1, "person_ids": [1]}]}]}]},
     "layers[0].groups[0].members[0].role_id"),
    ({"layers": [{"groups": [{"members": [{"person_ids": [424242]}]}]}]},
     "layers[0].groups[0].members[0].person_ids"),
    ({"layers": [{"groups": [{"members": [{"person_ids": ["x"]}]}]}]}, "person_ids"),
    ({"layers": "nope"}, "layers"),
])
async def test_bad_input_is_400_naming_the_field(api: Api, owner: Person, change: dict[str, Any],
                                                 field: str) -> None:
    body: dict[str, Any] = {"schedule_name": "S", **change}
    for layer in body.get("layers") or []:
        if isinstance(layer, dict) and layer.get("groups") in ("G", "O"):
            mode_one = layer["groups"] == "O"
            layer["groups"] = [{"members": [{"person_ids": [owner.person_id]}],
                                **({"start": 10, "end": 5} if mode_one else {})}]
    reply = await api.call("/schedule/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.message
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(schedule))).first() is None


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/schedule/info", {"start": 100, "end": 100 + 46 * DAY}, "end"),
    ("/schedule/info", {"start": 200, "end": 100}, "end"),
    ("/schedule/preview", {"start": 0, "end": 0}, "start"),
    ("/schedule/self", {"start": 100, "end": 100 + 31 * DAY}, "end"),
    ("/schedule/list", {"limit": 101}, "limit"),
    ("/schedule/list", {"p": 0}, "p"),
    ("/schedule/list", {"is_my_team": True, "is_my_manage": True}, "is_my_manage"),
    ("/schedule/delete", {"schedule_ids": []}, "schedule_ids"),
])
async def test_bad_windows_and_pages_are_400(api: Api, owner: Person, path: str,
                                             body: dict[str, Any], field: str) -> None:
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate)
    reply = await api.call(path, {"schedule_id": sid, **body}, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.message


async def test_permissions_view_and_manage(api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain")
    sid = await make_schedule(api, owner, plain)
    role = await ok(api, "/role/upsert", {"role_name": "Viewer", "permission_ids": [220]},
                    owner.key)
    viewer = await new_member(api, owner, name="Viewer", builtin=None,
                              role_ids=[role["role_id"]])
    manager_role = await ok(api, "/role/upsert", {"role_name": "Planner",
                                                  "permission_ids": [221]}, owner.key)
    manager = await new_member(api, owner, name="Planner", builtin=None,
                               role_ids=[manager_role["role_id"]])
    create = {"schedule_name": "S2", "layers": [rotation([plain.person_id], enable=NOW)]}
    for path, body in [("/schedule/create", create), ("/schedule/update", {"schedule_id": sid}),
                       ("/schedule/delete", {"schedule_ids": [sid]}),
                       ("/schedule/info", {"schedule_id": sid}),
                       ("/schedule/infos", {"schedule_ids": [sid]}),
                       ("/schedule/preview", {"start": NOW, "end": NOW + DAY}),
                       ("/schedule/self", {})]:
        reply = await api.call(path, body, key=plain.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    assert (await api.call("/schedule/list", {}, key=plain.key)).data["total"] == 1
    assert (await api.call("/schedule/info", {"schedule_id": sid}, key=viewer.key)).status == 200
    assert (await api.call("/schedule/create", create, key=viewer.key)).status == 403
    # Manage implies view.
    assert (await api.call("/schedule/create", create, key=manager.key)).status == 200
    assert (await api.call("/schedule/info", {"schedule_id": sid}, key=manager.key)).status == 200


async def test_another_accounts_schedules_are_not_found(
        api: Api, owner: Person, other_owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate)
    for path, body in [("/schedule/info", {"schedule_id": sid}),
                       ("/schedule/update", {"schedule_id": sid, "schedule_name": "mine"}),
                       ("/schedule/delete", {"schedule_ids": [sid]})]:
        reply = await api.call(path, body, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    infos = await ok(api, "/schedule/infos", {"schedule_ids": [sid]}, other_owner.key)
    assert infos["items"] == []
    assert (await ok(api, "/schedule/list", {}, other_owner.key))["total"] == 0
    # Nor can a schedule name another account's members.
    reply = await api.call("/schedule/create", {"schedule_name": "x", "layers": [
        rotation([owner.person_id], enable=NOW)]}, key=other_owner.key)
    assert reply.status == 400 and "layers[0].groups[0].members[0].person_ids" in reply.message


async def test_delete_is_all_or_nothing(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate)
    reply = await api.call("/schedule/delete", {"schedule_ids": [sid, 99]}, key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound") and "99" in reply.message
    assert (await api.call("/schedule/info", {"schedule_id": sid}, key=owner.key)).status == 200
    await ok(api, "/schedule/delete", {"schedule_ids": [sid]}, owner.key)
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(schedule_person))).first() is None


async def test_list_filters_and_pages(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    team = await ok(api, "/team/upsert", {"team_name": "SRE", "person_ids": [mate.person_id]},
                    owner.key)
    for name in ("Payments primary", "Payments backup", "Search"):
        await make_schedule(api, owner, mate, schedule_name=name)
    await make_schedule(api, owner, mate, schedule_name="Team one", team_id=team["team_id"])
    role = await ok(api, "/role/upsert", {"role_name": "Planner", "permission_ids": [221]},
                    owner.key)
    planner = await new_member(api, owner, name="Planner", builtin=None,
                               role_ids=[role["role_id"]])
    await ok(api, "/schedule/create", {"schedule_name": "Planned", "layers": []}, planner.key)

    async def names(body: dict[str, Any], key: str = owner.key) -> list[str]:
        return [i["schedule_name"] for i in (await ok(api, "/schedule/list", body, key))["items"]]

    assert sorted(await names({"query": "PAYMENTS"})) == ["Payments backup", "Payments primary"]
    assert await names({"team_ids": [team["team_id"]]}) == ["Team one"]
    assert await names({"is_my_team": True}, mate.key) == ["Team one"]
    assert await names({"is_my_team": True}) == []
    assert await names({"is_my_manage": True}, planner.key) == ["Planned"]
    page = await ok(api, "/schedule/list", {"p": 2, "limit": 2}, owner.key)
    assert page["total"] == 5 and len(page["items"]) == 2


async def test_self_lists_only_the_callers_schedules_and_shifts(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    other = await new_member(api, owner, name="Other")
    await make_schedule(api, owner, mate)
    await ok(api, "/schedule/create", {"schedule_name": "Not mine", "layers": [
        rotation([other.person_id], enable=NOW)]}, owner.key)
    role = await ok(api, "/role/upsert", {"role_name": "Viewer", "permission_ids": [220]},
                    owner.key)
    await ok(api, "/member/role/grant", {"member_id": mate.person_id,
                                         "role_ids": [role["role_id"]]}, owner.key)
    mine = (await ok(api, "/schedule/self", {}, mate.key))["items"]
    assert [i["schedule_name"] for i in mine] == ["Primary"]
    shifts = mine[0]["final_schedule"]["schedules"]
    # Default window: the next 7 days; the mate has every other day from Tuesday, up to the
    # window's end next Monday at 10:00.
    assert [s["start"] for s in shifts] == [MONDAY_SHANGHAI + d * DAY for d in (1, 3, 5, 7)]
    assert shifts[-1]["end"] == NOW + 7 * DAY
    assert all(mate.person_id in s["group"]["members"][0]["person_ids"] for s in shifts)


async def test_nobody_on_call_now_or_next_is_null(api: Api, owner: Person) -> None:
    # The reference describes cur_oncall / next_oncall as null when nobody is on call.
    sid = int((await ok(api, "/schedule/create", {"schedule_name": "Over", "layers": [
        rotation([owner.person_id], enable=NOW - 10 * DAY, expire_time=NOW - DAY)]},
        owner.key))["schedule_id"])
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    assert info["cur_oncall"] is None and info["next_oncall"] is None
    later = int((await ok(api, "/schedule/create", {"schedule_name": "Later", "layers": [
        rotation([owner.person_id], enable=NOW + 30 * DAY)]}, owner.key))["schedule_id"])
    info = await ok(api, "/schedule/info", {"schedule_id": later}, owner.key)
    assert info["cur_oncall"] is None and info["next_oncall"]["start"] == NOW + 30 * DAY


async def test_replacing_layers_keeps_each_positions_creation_and_stamps_the_update(
        api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    sid = await make_schedule(api, owner, mate)
    api.runtime.clock.advance(3600)
    await ok(api, "/schedule/update", {"schedule_id": sid, "layers": [
        rotation([mate.person_id], enable=MONDAY_SHANGHAI),
        rotation([owner.person_id], enable=MONDAY_SHANGHAI, layer_name="Second")]}, owner.key)
    info = await ok(api, "/schedule/info", {"schedule_id": sid}, owner.key)
    first, second = info["layers"]
    assert (first["create_at"], first["update_at"]) == (NOW, NOW + 3600)
    assert second["create_at"] == NOW + 3600
    assert (info["create_at"], info["update_at"]) == (NOW, NOW + 3600)
