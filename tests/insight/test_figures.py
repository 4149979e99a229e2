"""Exact figures on a hand-built set of incidents: made, acknowledged, escalated, reassigned
and resolved through the API at known times of the fake clock (the auto-resolve timeout and
the escalation engine's own escalation through the code paths they use), bucketed by local
day in Europe/Paris across the change to summer time (2026-03-29 01:00 UTC)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from dutyline.incident import events, state
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.lifecycle_support import seed_alert
from tests.insight.conftest import START, at, ok, utc

pytestmark = pytest.mark.anyio

END = START + 5 * 86_400


@dataclass
class World:
    channel_a: int
    channel_b: int
    team: int
    ids: dict[str, str]


async def _create(api: Api, who: Person, title: str, channel_id: int) -> str:
    reply = await ok(api, "/incident/create", {"incident_severity": "Critical", "title": title,
                                                "channel_id": channel_id}, who)
    return str(reply.data["incident_id"])


@pytest.fixture
async def world(capi: Api, acme: Person, clock: FakeClock) -> World:
    team = (await ok(capi, "/team/upsert", {"team_name": "SRE",
                                            "person_ids": [acme.person_id]}, acme)).data["team_id"]
    a = (await ok(capi, "/channel/create", {"channel_name": "Payments", "team_id": team},
                  acme)).data["channel_id"]
    b = (await ok(capi, "/channel/create", {"channel_name": "Search"}, acme)).data["channel_id"]
    ids: dict[str, str] = {}
    # A: Saturday 28 March 10:00 Paris (09:00Z). Acked after 600 s, resolved after 3600 s.
    t_a = utc(2026, 3, 28, 9, 0)
    at(clock, t_a)
    ids["A"] = await _create(capi, acme, "A", a)
    for _ in range(3):
        await seed_alert(capi, acme, ids["A"], channel_id=a, events=2)
    at(clock, t_a + 600)
    await ok(capi, "/incident/ack", {"incident_ids": [ids["A"]]}, acme)
    at(clock, t_a + 3600)
    await ok(capi, "/incident/resolve", {"incident_ids": [ids["A"]]}, acme)
    # B: 23:30Z on the 28th is already Sunday 29 March 00:30 in Paris. Acked after 120 s,
    # then assigned twice (assign, then a reassignment), never closed.
    t_b = utc(2026, 3, 28, 23, 30)
    at(clock, t_b)
    ids["B"] = await _create(capi, acme, "B", a)
    at(clock, t_b + 120)
    await ok(capi, "/incident/ack", {"incident_ids": [ids["B"]]}, acme)
    for _ in range(2):
        await ok(capi, "/incident/assign", {"incident_ids": [ids["B"]],
                                            "assigned_to": {"person_ids": [acme.person_id]}},
                 acme)
    # D: Sunday 29 March 23:30 Paris (21:30Z, summer time). Escalated by hand, then by the
    # escalation engine (an `assigned` event of the system, person 0).
    t_d = utc(2026, 3, 29, 21, 30)
    at(clock, t_d)
    ids["D"] = await _create(capi, acme, "D", b)
    await ok(capi, "/incident/assign", {"incident_ids": [ids["D"]], "assigned_to": {
        "person_ids": [acme.person_id], "type": "escalate"}}, acme)
    # C: 22:30Z on the 29th is Monday 30 March 00:30 in Paris. Escalated by the engine only,
    # closed by the auto-resolve timeout after 1800 s.
    t_c = utc(2026, 3, 29, 22, 30)
    at(clock, t_c)
    ids["C"] = await _create(capi, acme, "C", b)
    async with capi.runtime.db.transaction() as conn:
        for incident_id in (ids["C"], ids["D"]):
            await events.emit(conn, account_id=acme.account_id, incident_id=incident_id,
                              kind=events.ASSIGNED, now_s=t_c,
                              payload={"assignment": {"type": "escalate", "layer_idx": 1}})
    at(clock, t_c + 1800)
    async with capi.runtime.db.transaction() as conn:
        assert await conn.run_sync(
            state.close, incident_id=ids["C"], account_id=acme.account_id, channel_id=b,
            now_s=t_c + 1800, reason=state.TIMED_OUT, end_alerts=True)
    at(clock, END)
    return World(a, b, team, ids)


def _window(**extra: Any) -> dict[str, Any]:
    return {"start_time": START, "end_time": END, **extra}


async def test_account_figures_over_the_window(capi: Api, acme: Person, world: World) -> None:
    reply = await capi.raw("POST", "/insight/account", params={"app_key": acme.key},
                           json=_window())
    (item,) = check("/insight/account", reply)["data"]["items"]
    assert item == {
        "account_id": acme.account_id,
        "total_incident_cnt": 4, "total_incidents_acknowledged": 2,
        "total_incidents_closed": 2, "total_incidents_auto_closed": 0,
        "total_incidents_manually_closed": 1, "total_incidents_timeout_closed": 1,
        "total_incidents_escalated": 2, "total_incidents_manually_escalated": 1,
        "total_incidents_timeout_escalated": 2, "total_incidents_reassigned": 1,
        "total_interruptions": 0, "total_notifications": 0,
        "total_engaged_seconds": 3000,  # A: acknowledged at +600, closed at +3600
        "total_seconds_to_ack": 720, "mean_seconds_to_ack": 360.0,  # A 600, B 120
        "total_seconds_to_close": 5400, "mean_seconds_to_close": 2700.0,  # A 3600, C 1800
        "noise_reduction_pct": 66.67,  # 3 alerts made 1 incident
        "acknowledgement_pct": 50.0, "escalation_pct": 50.0,
        "total_alert_cnt": 3, "total_alert_event_cnt": 6,
    }


async def test_day_buckets_follow_the_account_time_zone_across_dst(
    capi: Api, acme: Person, world: World
) -> None:
    reply = await capi.raw("POST", "/insight/account", params={"app_key": acme.key},
                           json=_window(aggregate_unit="day"))
    items = check("/insight/account", reply)["data"]["items"]
    got = [(i["ts"], i["total_incident_cnt"]) for i in items]
    assert got == [
        (utc(2026, 3, 27, 23, 0), 1),  # Saturday 28 (winter time, UTC+1): A
        (utc(2026, 3, 28, 23, 0), 2),  # Sunday 29, a 23-hour day: B and D
        (utc(2026, 3, 29, 22, 0), 1),  # Monday 30 (summer time, UTC+2): C
    ]
    # The same incidents in UTC days: A and B on the 28th, D and C on the 29th.
    utc_days = await ok(capi, "/insight/account",
                        _window(aggregate_unit="day", time_zone="UTC"), acme)
    assert [(i["ts"], i["total_incident_cnt"]) for i in utc_days.data["items"]] == [
        (utc(2026, 3, 28), 2), (utc(2026, 3, 29), 2)]


async def test_week_and_month_buckets(capi: Api, acme: Person, world: World) -> None:
    weeks = await ok(capi, "/insight/account", _window(aggregate_unit="week"), acme)
    # Monday 23 March and Monday 30 March, local midnight.
    assert [(i["ts"], i["total_incident_cnt"]) for i in weeks.data["items"]] == [
        (utc(2026, 3, 22, 23), 3), (utc(2026, 3, 29, 22), 1)]
    months = await ok(capi, "/insight/account", _window(aggregate_unit="month"), acme)
    assert [(i["ts"], i["total_incident_cnt"]) for i in months.data["items"]] == [
        (utc(2026, 2, 28, 23), 4)]
    check("/insight/account", await capi.raw("POST", "/insight/account",
                                              params={"app_key": acme.key},
                                              json=_window(aggregate_unit="month")))


async def test_split_hours(capi: Api, acme: Person, world: World) -> None:
    reply = await ok(capi, "/insight/account", _window(split_hours=True), acme)
    # A: Saturday 10:00 (off: a weekend day); B, D, C: 00:30, 23:30, 00:30 (sleep).
    assert {i["hours"]: i["total_incident_cnt"] for i in reply.data["items"]} == {
        "off": 1, "sleep": 3}
    listed = await ok(capi, "/insight/incident/list", _window(asc=True), acme)
    assert [(i["title"], i["hours"]) for i in listed.data["items"]] == [
        ("A", "off"), ("B", "sleep"), ("D", "sleep"), ("C", "sleep")]


async def test_channel_and_team_figures(capi: Api, acme: Person, world: World) -> None:
    reply = await capi.raw("POST", "/insight/channel", params={"app_key": acme.key},
                           json=_window())
    items = check("/insight/channel", reply)["data"]["items"]
    by_channel = {i["channel_id"]: i for i in items}
    assert set(by_channel) == {world.channel_a, world.channel_b}
    pay = by_channel[world.channel_a]
    assert pay["channel_name"] == "Payments"
    assert (pay["total_incident_cnt"], pay["total_incidents_acknowledged"],
            pay["mean_seconds_to_ack"], pay["total_incidents_reassigned"]) == (2, 2, 360.0, 1)
    search = by_channel[world.channel_b]
    assert (search["total_incident_cnt"], search["total_incidents_timeout_closed"],
            search["total_incidents_escalated"], search["acknowledgement_pct"]) == (2, 1, 2, 0.0)

    teams = await capi.raw("POST", "/insight/team", params={"app_key": acme.key},
                           json=_window())
    by_team = {i["team_id"]: i for i in check("/insight/team", teams)["data"]["items"]}
    # Search belongs to no team (team 0).
    assert {k: v["total_incident_cnt"] for k, v in by_team.items()} == {world.team: 2, 0: 2}
    assert by_team[world.team]["team_name"] == "SRE"
    only = await ok(capi, "/insight/team", _window(team_ids=[world.team]), acme)
    assert [i["team_id"] for i in only.data["items"]] == [world.team]
    mine = await ok(capi, "/insight/account", _window(is_my_team=True), acme)
    assert mine.data["items"][0]["total_incident_cnt"] == 2


async def test_responder_figures(capi: Api, acme: Person, world: World) -> None:
    reply = await capi.raw("POST", "/insight/responder", params={"app_key": acme.key},
                           json=_window())
    (item,) = check("/insight/responder", reply)["data"]["items"]
    # The owner acknowledged A and B (joining them as responders) and was assigned D.
    assert item == {
        "responder_id": acme.person_id, "responder_name": "Acme Owner",
        "total_incident_cnt": 3, "total_incidents_acknowledged": 2,
        "total_incidents_reassigned": 1, "total_incidents_escalated": 1,
        "total_incidents_timeout_escalated": 1, "total_incidents_manually_escalated": 1,
        "total_interruptions": 0, "total_notifications": 0,
        "total_engaged_seconds": 3000, "total_seconds_to_ack": 0,
        "mean_seconds_to_ack": 0.0, "acknowledgement_pct": 66.67,
    }
    nobody = await ok(capi, "/insight/responder", _window(responder_ids=[1]), acme)
    assert nobody.data["items"] == []
    days = await ok(capi, "/insight/responder", _window(aggregate_unit="day"), acme)
    assert [(i["ts"], i["total_incident_cnt"]) for i in days.data["items"]] == [
        (utc(2026, 3, 27, 23), 1), (utc(2026, 3, 28, 23), 2)]


async def test_incident_list(capi: Api, acme: Person, world: World) -> None:
    reply = await capi.raw("POST", "/insight/incident/list", params={"app_key": acme.key},
                           json=_window(asc=True, limit=3))
    data = check("/insight/incident/list", reply)["data"]
    assert (data["total"], data["has_next_page"]) == (4, True)
    a, b, d = data["items"]
    assert (a["title"], a["closed_by"], a["seconds_to_ack"], a["seconds_to_close"],
            a["engaged_seconds"], a["acknowledgements"], a["channel_name"],
            a["team_name"]) == ("A", "manually", 600, 3600, 3000, 1, "Payments", "SRE")
    assert a["created_at"] == utc(2026, 3, 28, 9)
    assert a["responders"][0]["person_name"] == "Acme Owner"
    assert "closed_by" not in b
    assert (b["assignments"], b["reassignments"]) == (2, 1)
    assert (d["escalations"], d["manual_escalations"], d["timeout_escalations"]) == (2, 1, 1)
    page2 = await ok(capi, "/insight/incident/list", _window(asc=True, limit=3, p=2), acme)
    (c,) = page2.data["items"]
    assert (c["title"], c["closed_by"], c["seconds_to_close"]) == ("C", "timeout", 1800)
    assert page2.data["has_next_page"] is False

    slow = await ok(capi, "/insight/incident/list",
                    _window(seconds_to_ack_from=300, seconds_to_ack_to=900), acme)
    assert [i["title"] for i in slow.data["items"]] == ["A"]
    closing = await ok(capi, "/insight/incident/list", _window(seconds_to_close_to=2000), acme)
    assert [i["title"] for i in closing.data["items"]] == ["C"]
    found = await ok(capi, "/insight/incident/list", _window(query="b"), acme)
    assert [i["title"] for i in found.data["items"]] == ["B"]
    by_responder = await ok(capi, "/insight/incident/list",
                            _window(responder_ids=[acme.person_id]), acme)
    assert by_responder.data["total"] == 3


async def test_bucket_boundaries_to_the_second(capi: Api, acme: Person,
                                               clock: FakeClock) -> None:
    sunday, monday = utc(2026, 3, 28, 23), utc(2026, 3, 29, 22)  # Paris midnights
    for t in (sunday - 1, sunday, monday - 1, monday):
        at(clock, t)
        await _create(capi, acme, f"at {t}", 0)
    reply = await ok(capi, "/insight/account", _window(aggregate_unit="day"), acme)
    assert [(i["ts"], i["total_incident_cnt"]) for i in reply.data["items"]] == [
        (utc(2026, 3, 27, 23), 1), (sunday, 2), (monday, 1)]
    # The window's own bounds, in seconds: both included.
    inside = await ok(capi, "/insight/account",
                      {"start_time": sunday, "end_time": monday}, acme)
    assert inside.data["items"][0]["total_incident_cnt"] == 3
    before = await ok(capi, "/insight/account",
                      {"start_time": sunday, "end_time": monday - 1}, acme)
    assert before.data["items"][0]["total_incident_cnt"] == 2
