"""/calendar/* through the API: records in the reference's shapes, defaults, limits,
validation naming the field, events and the weekdays off they list, permissions (reads: any
member; writes: calendar management), other accounts' ids, and deleting a calendar a rule
uses (refused, naming the rule)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.config import Settings
from dutyline.db.tables.platform_calendar import calendar, calendar_event
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.platform.calendar_support import add_event, make_calendar, ok

pytestmark = pytest.mark.anyio

PRESET_TEMPLATE = "6321aad26c12104586a88916"


async def _post(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    return await api.raw("POST", path, params={"app_key": key}, json=body)


async def _count(api: Api, table: Any) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


async def test_lifecycle_in_the_reference_shapes(api: Api, owner: Person) -> None:
    created = check("/calendar/create", await _post(api, "/calendar/create", {
        "cal_name": "Stock Exchange", "description": "Trading days",
        "timezone": "Europe/Berlin", "workdays": [5, 1, 2, 3, 4, 1]}, owner.key))["data"]
    cal_id = created["cal_id"]
    assert created == {"cal_id": cal_id, "cal_name": "Stock Exchange"}
    assert cal_id.startswith("cal.") and len(cal_id) == 26

    info = check("/calendar/info", await _post(api, "/calendar/info", {"cal_id": cal_id},
                                               owner.key))["data"]
    assert info["created_at"] > 1_700_000_000
    assert info == {
        "account_id": owner.account_id, "team_id": 0, "cal_id": cal_id,
        "cal_name": "Stock Exchange", "description": "Trading days",
        "timezone": "Europe/Berlin", "kind": "personal", "workdays": [1, 2, 3, 4, 5],
        "extra_cal_ids": [], "created_at": info["created_at"],
        "updated_at": info["created_at"], "creator_id": owner.person_id,
        "updated_by": owner.person_id, "status": "enabled"}

    # Only the fields given change.
    check("/calendar/update", await _post(api, "/calendar/update", {
        "cal_id": cal_id, "cal_name": "Exchange", "workdays": [0, 6], "description": None},
        owner.key))
    listed = check("/calendar/list", await _post(api, "/calendar/list", {}, owner.key))["data"]
    assert listed["total"] == 1
    (item,) = listed["items"]
    assert (item["cal_name"], item["workdays"], item["description"], item["timezone"]) == (
        "Exchange", [0, 6], "Trading days", "Europe/Berlin")
    # No public-holiday calendar is shipped.
    public = await ok(api, "/calendar/list", {"kind": "region.official.holiday"}, owner.key)
    assert public == {"items": [], "total": 0}

    check("/calendar/delete", await _post(api, "/calendar/delete", {"cal_id": cal_id},
                                          owner.key))
    gone = await api.call("/calendar/info", {"cal_id": cal_id}, key=owner.key)
    assert gone.status == 400 and gone.code == "ResourceNotFound" and cal_id in gone.message


async def test_defaults_and_team(api: Api, owner: Person) -> None:
    team = await ok(api, "/team/upsert", {"team_name": "SRE"}, owner.key)
    cal_id = await make_calendar(api, owner, team_id=team["team_id"])
    info = await ok(api, "/calendar/info", {"cal_id": cal_id}, owner.key)
    # The reference's default time zone; Monday to Friday worked.
    assert info["timezone"] == "Asia/Shanghai" and info["workdays"] == [1, 2, 3, 4, 5]
    assert info["team_id"] == team["team_id"]


async def test_at_most_five_calendars_an_account(api: Api, owner: Person,
                                                 other_owner: Person) -> None:
    for n in range(5):
        await make_calendar(api, owner, f"Calendar {n}")
    sixth = await api.call("/calendar/create", {"cal_name": "Sixth"}, key=owner.key)
    assert sixth.status == 400 and sixth.code == "InvalidParameter"
    assert "5 calendars" in sixth.message
    assert await _count(api, calendar) == 5
    await make_calendar(api, other_owner, "Theirs")  # the limit is per account


@pytest.mark.parametrize(("body", "field"), [
    ({"cal_name": ""}, "cal_name"),
    ({"cal_name": "   "}, "cal_name"),
    ({"cal_name": "x" * 40}, "cal_name"),
    ({"cal_name": "ok", "description": "d" * 500}, "description"),
    ({"cal_name": "ok", "workdays": [7]}, "workdays"),
    ({"cal_name": "ok", "workdays": [-1]}, "workdays"),
    ({"cal_name": "ok", "timezone": "Mars/Olympus"}, "timezone"),
    ({"cal_name": "ok", "extra_cal_ids": ["zh-cn.china.official"]}, "extra_cal_ids"),
    ({"cal_name": "ok", "team_id": "x"}, "team_id"),
    ({}, "cal_name"),
])
async def test_create_validation_names_the_field(api: Api, owner: Person, body: dict[str, Any],
                                                 field: str) -> None:
    reply = await api.call("/calendar/create", body, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message
    assert await _count(api, calendar) == 0


async def test_unknown_team_is_not_found(api: Api, owner: Person, other_owner: Person) -> None:
    theirs = await ok(api, "/team/upsert", {"team_name": "Theirs"}, other_owner.key)
    for team_id in (theirs["team_id"], 12345):
        reply = await api.call("/calendar/create", {"cal_name": "x", "team_id": team_id},
                               key=owner.key)
        assert reply.code == "ResourceNotFound", reply.body
    assert await _count(api, calendar) == 0


async def test_events_upsert_list_delete(api: Api, owner: Person) -> None:
    cal_id = await make_calendar(api, owner)
    done = check("/calendar/event/upsert", await _post(api, "/calendar/event/upsert", {
        "cal_id": cal_id, "summary": "Test Holiday", "description": "A test holiday event",
        "start_at": "2026-05-01", "end_at": "2026-05-02", "is_off": True}, owner.key))["data"]
    event_id = done["event_id"]
    assert done == {"cal_id": cal_id, "event_id": event_id, "summary": "Test Holiday"}
    assert event_id.startswith("cale.")

    # The reference's example: May 2026 with a holiday on Friday the 1st lists it and the ten
    # weekend days as generated `non_work.YYYYMMDD` entries, sorted by date.
    listed = check("/calendar/event/list", await _post(api, "/calendar/event/list", {
        "cal_id": cal_id, "year": 2026, "month": 5}, owner.key))["data"]
    assert listed["total"] == 11 == len(listed["items"])
    first, second = listed["items"][:2]
    assert first["event_id"] == event_id and first["is_off"] is True
    assert (first["start_at"], first["end_at"], first["creator_id"]) == (
        "2026-05-01", "2026-05-02", owner.person_id)
    assert second == {
        "account_id": owner.account_id, "creator_id": owner.person_id, "cal_id": cal_id,
        "event_id": "non_work.20260502", "summary": "non-working day (Saturday)",
        "description": "", "start_at": "2026-05-02", "end_at": "2026-05-03", "is_off": True,
        "created_at": 0, "updated_at": 0}
    assert [i["start_at"] for i in listed["items"]] == sorted(
        i["start_at"] for i in listed["items"])

    # A make-up working Saturday replaces that day's generated entry; the update keeps the id.
    await add_event(api, owner, cal_id, "2026-05-09", "2026-05-10", is_off=False,
                    summary="Make-up day")
    day = await ok(api, "/calendar/event/list", {"cal_id": cal_id, "year": 2026, "month": 5,
                                                 "day": 9}, owner.key)
    assert [(i["summary"], i["is_off"]) for i in day["items"]] == [("Make-up day", False)]
    again = await ok(api, "/calendar/event/upsert", {
        "cal_id": cal_id, "event_id": event_id, "summary": "Labour Day",
        "start_at": "2026-05-01", "end_at": "2026-05-06", "is_off": True}, owner.key)
    assert again["event_id"] == event_id
    may = await ok(api, "/calendar/event/list", {"cal_id": cal_id, "year": 2026, "month": 5},
                   owner.key)
    # Labour Day now covers 1-5 May (the weekend of 2-3 included): 11 - 2 + 1 (make-up) - 1.
    assert may["total"] == 9
    assert may["items"][0]["summary"] == "Labour Day"
    # The whole year: the events and the year's weekend days that no event covers.
    year = await ok(api, "/calendar/event/list", {"cal_id": cal_id, "year": 2026}, owner.key)
    assert year["total"] == 104 - 3 + 2

    check("/calendar/event/delete", await _post(api, "/calendar/event/delete", {
        "cal_id": cal_id, "event_id": event_id}, owner.key))
    missing = await api.call("/calendar/event/delete", {"cal_id": cal_id,
                                                        "event_id": event_id}, key=owner.key)
    assert missing.code == "ResourceNotFound"
    generated = await api.call("/calendar/event/delete", {
        "cal_id": cal_id, "event_id": "non_work.20260502"}, key=owner.key)
    assert generated.code == "ResourceNotFound"
    unknown = await api.call("/calendar/event/upsert", {
        "cal_id": cal_id, "event_id": "cale.nope", "summary": "x", "start_at": "2026-01-01",
        "end_at": "2026-01-02", "is_off": True}, key=owner.key)
    assert unknown.code == "ResourceNotFound"
    assert await _count(api, calendar_event) == 1


@pytest.fixture
async def capi(settings: Settings) -> AsyncIterator[Api]:
    # 2023-12-31 20:00 UTC: already 2024 in Shanghai, still 2023 in New York.
    async with make_api(settings, clock=FakeClock(1_704_052_800.0)) as client:
        yield client


async def test_event_list_defaults_to_the_current_year_in_the_calendar_s_zone(
        capi: Api) -> None:
    owner = await new_account(capi)
    east = await make_calendar(capi, owner, "East", workdays=[0, 1, 2, 3, 4, 5, 6])
    west = await make_calendar(capi, owner, "West", workdays=[0, 1, 2, 3, 4, 5, 6],
                               timezone="America/New_York")
    for cal_id in (east, west):
        await add_event(capi, owner, cal_id, "2023-12-25", "2023-12-26")
        await add_event(capi, owner, cal_id, "2024-01-01", "2024-01-02")
    for cal_id, expected in ((east, "2024-01-01"), (west, "2023-12-25")):
        listed = await ok(capi, "/calendar/event/list", {"cal_id": cal_id}, owner.key)
        assert [i["start_at"] for i in listed["items"]] == [expected]


@pytest.mark.parametrize(("body", "field"), [
    ({"start_at": "2026-5-1"}, "start_at"),
    ({"start_at": "2026-02-30"}, "start_at"),
    ({"start_at": "2026-W18-5"}, "start_at"),
    ({"start_at": "\uff12\uff10\uff12\uff16-05-01"}, "start_at"),  # full-width digits
    ({"end_at": "tomorrow"}, "end_at"),
    ({"end_at": "2026-05-01"}, "end_at"),  # not after the start (the end is exclusive)
    ({"end_at": "2027-05-03"}, "end_at"),  # over a year
    ({"start_at": "1999-12-31"}, "start_at"),
    ({"summary": ""}, "summary"),
    ({"summary": " "}, "summary"),
    ({"summary": "s" * 40}, "summary"),
    ({"description": "d" * 500}, "description"),
    ({"is_off": "yes"}, "is_off"),
    ({"event_id": "e" * 64}, "event_id"),
])
async def test_event_validation_names_the_field(api: Api, owner: Person,
                                                body: dict[str, Any], field: str) -> None:
    cal_id = await make_calendar(api, owner)
    reply = await api.call("/calendar/event/upsert", {
        "cal_id": cal_id, "summary": "Holiday", "start_at": "2026-05-01",
        "end_at": "2026-05-02", "is_off": True, **body}, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message
    assert await _count(api, calendar_event) == 0


@pytest.mark.parametrize(("body", "field"), [
    ({"year": 2022}, "year"),
    ({"year": 2101}, "year"),
    ({"year": 2026, "month": 13}, "month"),
    ({"year": 2026, "day": 3}, "month"),  # a day needs its month
    ({"year": 2026, "month": 2, "day": 29}, "day"),
    ({"year": 2026, "month": 2, "day": 32}, "day"),
])
async def test_event_list_validation(api: Api, owner: Person, body: dict[str, Any],
                                     field: str) -> None:
    cal_id = await make_calendar(api, owner)
    reply = await api.call("/calendar/event/list", {"cal_id": cal_id, **body}, key=owner.key)
    assert reply.status == 400 and reply.code == "InvalidParameter", reply.body
    assert field in reply.message


async def test_members_read_and_only_calendar_managers_write(api: Api, owner: Person) -> None:
    cal_id = await make_calendar(api, owner)
    event_id = await add_event(api, owner, cal_id, "2026-05-01", "2026-05-02")
    reader = await new_member(api, owner, name="Reader")  # the built-in Member role
    for path, body in (("/calendar/info", {"cal_id": cal_id}), ("/calendar/list", {}),
                       ("/calendar/event/list", {"cal_id": cal_id, "year": 2026})):
        assert (await api.call(path, body, key=reader.key)).status == 200, path
    before = await ok(api, "/calendar/info", {"cal_id": cal_id}, owner.key)
    writes: list[tuple[str, dict[str, Any]]] = [
        ("/calendar/create", {"cal_name": "Mine"}),
        ("/calendar/update", {"cal_id": cal_id, "cal_name": "Renamed"}),
        ("/calendar/event/upsert", {"cal_id": cal_id, "summary": "x",
                                    "start_at": "2026-06-01", "end_at": "2026-06-02",
                                    "is_off": True}),
        ("/calendar/event/delete", {"cal_id": cal_id, "event_id": event_id}),
        ("/calendar/delete", {"cal_id": cal_id}),
    ]
    for path, body in writes:
        reply = await api.call(path, body, key=reader.key)
        assert reply.status == 403 and reply.code == "AccessDenied", (path, reply.body)
    assert await ok(api, "/calendar/info", {"cal_id": cal_id}, owner.key) == before
    assert (await _count(api, calendar), await _count(api, calendar_event)) == (1, 1)

    # A custom role with "Calendars Manage" (222) may write.
    perms = await ok(api, "/role/permission/list", {}, owner.key)
    (perm,) = [p for p in perms["items"] if p["permission_name"] == "calendar_manage"]
    assert (perm["id"], perm["scope"]) == (222, "on-call")
    role = await ok(api, "/role/upsert", {"role_name": "Calendars",
                                          "permission_ids": [222]}, owner.key)
    keeper = await new_member(api, owner, name="Keeper", builtin=None,
                              role_ids=[role["role_id"]])
    for path, body in writes:
        reply = await api.call(path, body, key=keeper.key)
        assert reply.status == 200, (path, reply.body)


async def test_other_accounts_calendars_are_not_found(api: Api, owner: Person,
                                                      other_owner: Person) -> None:
    cal_id = await make_calendar(api, owner)
    event_id = await add_event(api, owner, cal_id, "2026-05-01", "2026-05-02")
    for path, body in (
        ("/calendar/info", {"cal_id": cal_id}),
        ("/calendar/update", {"cal_id": cal_id, "cal_name": "Mine now"}),
        ("/calendar/delete", {"cal_id": cal_id}),
        ("/calendar/event/list", {"cal_id": cal_id, "year": 2026}),
        ("/calendar/event/upsert", {"cal_id": cal_id, "summary": "x", "start_at": "2026-06-01",
                                    "end_at": "2026-06-02", "is_off": True}),
        ("/calendar/event/upsert", {"cal_id": cal_id, "event_id": event_id, "summary": "x",
                                    "start_at": "2026-06-01", "end_at": "2026-06-02",
                                    "is_off": True}),
        ("/calendar/event/delete", {"cal_id": cal_id, "event_id": event_id}),
    ):
        reply = await api.call(path, body, key=other_owner.key)
        assert reply.code == "ResourceNotFound", (path, reply.body)
    assert (await ok(api, "/calendar/list", {}, other_owner.key))["total"] == 0
    info = await ok(api, "/calendar/info", {"cal_id": cal_id}, owner.key)
    assert info["cal_name"] == "Office days"
    # Another calendar of the same account does not hold the event either.
    mine = await make_calendar(api, owner, "Second")
    reply = await api.call("/calendar/event/delete", {"cal_id": mine, "event_id": event_id},
                           key=owner.key)
    assert reply.code == "ResourceNotFound"
    assert await _count(api, calendar_event) == 1


async def _channel(api: Api, who: Person) -> int:
    return int((await ok(api, "/channel/create", {"channel_name": "Payments"},
                         who.key))["channel_id"])


def _window(cal_id: str, is_off: bool = False) -> dict[str, Any]:
    return {"start": "00:00", "end": "24:00", "repeat": [], "cal_id": cal_id, "is_off": is_off}


async def test_rules_name_only_their_account_s_calendars(api: Api, owner: Person,
                                                         other_owner: Person) -> None:
    theirs = await make_calendar(api, other_owner)
    channel_id = await _channel(api, owner)
    for cal_id in (theirs, "cal.unknown"):
        silence = await api.call("/channel/silence/rule/create", {
            "channel_id": channel_id, "rule_name": "Quiet",
            "filters": [[{"key": "severity", "oper": "IN", "vals": ["Info"]}]],
            "time_filters": [_window(cal_id)]}, key=owner.key)
        assert silence.code == "ResourceNotFound" and cal_id in silence.message
        escalation = await api.call("/channel/escalate/rule/create", {
            "channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Page",
            "layers": [{"target": {"emails": ["a@example.com"],
                                   "by": {"follow_preference": True}}}],
            "time_filters": [_window(cal_id)]}, key=owner.key)
        assert escalation.code == "ResourceNotFound" and cal_id in escalation.message
    bad = await api.call("/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Quiet",
        "filters": [[{"key": "severity", "oper": "IN", "vals": ["Info"]}]],
        "time_filters": [{"start": "00:00", "end": "24:00", "is_off": True}]}, key=owner.key)
    assert bad.code == "InvalidParameter" and "time_filters[0].is_off" in bad.message


async def test_a_calendar_a_rule_uses_cannot_be_deleted(api: Api, owner: Person) -> None:
    cal_id = await make_calendar(api, owner)
    await add_event(api, owner, cal_id, "2026-05-01", "2026-05-02")
    channel_id = await _channel(api, owner)
    silence = await ok(api, "/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Quiet on holidays",
        "filters": [[{"key": "severity", "oper": "IN", "vals": ["Info"]}]],
        "time_filters": [_window(cal_id, is_off=True)]}, owner.key)
    escalation = await ok(api, "/channel/escalate/rule/create", {
        "channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Office hours",
        "layers": [{"target": {"emails": ["a@example.com"], "by": {"follow_preference": True}}}],
        "time_filters": [{"start": "09:00", "end": "18:00", "cal_id": cal_id}]}, owner.key)

    refused = await api.call("/calendar/delete", {"cal_id": cal_id}, key=owner.key)
    assert refused.status == 400 and refused.code == "ReferenceExist", refused.body
    assert "Quiet on holidays" in refused.message and "Office hours" in refused.message
    assert (await _count(api, calendar), await _count(api, calendar_event)) == (1, 1)

    # The rules read back with their calendar condition.
    info = await ok(api, "/channel/silence/rule/info", {
        "channel_id": channel_id, "rule_id": silence["rule_id"]}, owner.key)
    assert info["time_filters"] == [_window(cal_id, is_off=True)]

    await ok(api, "/channel/silence/rule/delete", {"channel_id": channel_id,
                                                   "rule_id": silence["rule_id"]}, owner.key)
    still = await api.call("/calendar/delete", {"cal_id": cal_id}, key=owner.key)
    assert still.code == "ReferenceExist" and "Office hours" in still.message
    assert "Quiet on holidays" not in still.message
    await ok(api, "/channel/escalate/rule/delete", {"channel_id": channel_id,
                                                    "rule_id": escalation["rule_id"]}, owner.key)
    await ok(api, "/calendar/delete", {"cal_id": cal_id}, owner.key)
    assert (await _count(api, calendar), await _count(api, calendar_event)) == (0, 0)


async def test_the_refusal_is_localized(api: Api, owner: Person) -> None:
    cal_id = await make_calendar(api, owner)
    channel_id = await _channel(api, owner)
    await ok(api, "/channel/silence/rule/create", {
        "channel_id": channel_id, "rule_name": "Quiet",
        "filters": [[{"key": "severity", "oper": "IN", "vals": ["Info"]}]],
        "time_filters": [_window(cal_id)]}, owner.key)
    reply = await api.raw("POST", "/calendar/delete", params={"app_key": owner.key},
                          json={"cal_id": cal_id}, headers={"Accept-Language": "zh-CN"})
    body = reply.json()
    assert body["error"]["code"] == "ReferenceExist"
    assert body["error"]["message"].startswith(f"服务日历 {cal_id} 正被使用")


async def test_writes_are_audited_with_their_targets(api: Api, owner: Person) -> None:
    from dutyline.db.tables.platform import audit_log

    cal_id = await make_calendar(api, owner)
    event_id = await add_event(api, owner, cal_id, "2026-05-01", "2026-05-02")
    await ok(api, "/calendar/event/delete", {"cal_id": cal_id, "event_id": event_id},
             owner.key)
    await ok(api, "/calendar/delete", {"cal_id": cal_id}, owner.key)
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log.c.operation, audit_log.c.target_ids)
                                   .where(audit_log.c.account_id == owner.account_id)
                                   .order_by(audit_log.c.id))).all()
    assert [(r.operation, r.target_ids) for r in rows] == [
        ("calendar.create", f'["{cal_id}"]'),
        ("calendar.event.upsert", f'["{event_id}"]'),
        ("calendar.event.delete", f'["{event_id}"]'),
        ("calendar.delete", f'["{cal_id}"]'),
    ]
