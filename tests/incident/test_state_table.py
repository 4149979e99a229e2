"""The incident state machine's transition table (incident/state): for each transition and
each state an incident can be in, whether it is accepted, and if so the progress it leaves,
the events it emits and the feed entries it writes, in order, and what it does to the
incident's active alert; a refusal changes nothing. Driven through the API, which calls the
transitions as every other way in does. Beside it: the guards on their own, and the
severity rule written twice (Python for the services, SQL for ingestion's one statement)
agreeing on every case."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.incident import alert, incident
from dutyline.incident import state
from dutyline.kit.vocabulary import PROGRESSES, SEVERITIES, worse
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.incident.lifecycle_support import (
    create,
    event_kinds,
    feed_types,
    info,
    seed_alert,
)

pytestmark = pytest.mark.anyio

STARTS = ("Triggered", "Processing", "Closed", "Snoozed")
# How each start is reached from a new (Triggered, Critical) incident with one active alert.
_REACH = {"Triggered": [], "Processing": [("ack", {})], "Closed": [("resolve", {})],
          "Snoozed": [("snooze", {"minutes": 30})]}

Outcome = tuple[str, list[str], list[str]] | None  # progress, events, feed types; None: refused
_CLOSE = ["resolved"]
TABLE: dict[str, dict[str, Outcome]] = {
    "ack": {
        "Triggered": ("Processing", ["acked"], ["i_ack"]),
        "Processing": None,
        "Closed": None,
        "Snoozed": ("Processing", ["acked"], ["i_ack"]),
    },
    "unack": {
        "Triggered": None,
        "Processing": ("Triggered", ["unacked"], ["i_unack"]),
        "Closed": None,
        "Snoozed": None,
    },
    "resolve": {
        "Triggered": ("Closed", _CLOSE, ["i_rslv"]),
        "Processing": ("Closed", _CLOSE, ["i_rslv"]),
        "Closed": None,
        "Snoozed": ("Closed", _CLOSE, ["i_rslv"]),
    },
    "reopen": {
        "Triggered": None,
        "Processing": None,
        "Closed": ("Triggered", ["reopened"], ["i_reopen"]),
        "Snoozed": None,
    },
    "snooze": {
        "Triggered": ("Triggered", ["snoozed"], ["i_snooze"]),
        "Processing": ("Processing", ["snoozed"], ["i_snooze"]),
        "Closed": None,
        "Snoozed": ("Triggered", ["snoozed"], ["i_snooze"]),
    },
    "wake": {
        "Triggered": None,
        "Processing": None,
        "Closed": None,
        "Snoozed": ("Triggered", ["woken"], ["i_wake"]),
    },
    # /incident/merge of the incident into an open one: its merge entry and event, and, when
    # it was open, the close's event (a close is heard as one, however it happens).
    "merge_away": {
        "Triggered": ("Closed", ["merged", *_CLOSE], ["i_merge"]),
        "Processing": ("Closed", ["merged", *_CLOSE], ["i_merge"]),
        "Closed": ("Closed", ["merged"], ["i_merge"]),
        "Snoozed": ("Closed", ["merged", *_CLOSE], ["i_merge"]),
    },
    # /alert/merge of its only alert into an open incident: emptied, an open one closes.
    "alerts_leave": {
        "Triggered": ("Closed", ["alerts_merged", *_CLOSE], ["a_merge"]),
        "Processing": ("Closed", ["alerts_merged", *_CLOSE], ["a_merge"]),
        "Closed": ("Closed", ["alerts_merged"], ["a_merge"]),
        "Snoozed": ("Closed", ["alerts_merged", *_CLOSE], ["a_merge"]),
    },
    # /incident/reset of the severity: an open incident's status follows it.
    "severity": {start: (start if start != "Snoozed" else "Triggered", ["updated"],
                         ["i_r_severity"]) for start in STARTS},
}
# The transitions that are one operation of their own, named like it.
_OPERATION = {"ack": ({}, "/incident/ack"), "unack": ({}, "/incident/unack"),
              "resolve": ({}, "/incident/resolve"),
              "reopen": ({"reason": "back"}, "/incident/reopen"),
              "snooze": ({"minutes": 30}, "/incident/snooze"), "wake": ({}, "/incident/wake")}


async def _call(api: Api, who: Person, transition: str, incident_id: str,
                alert_id: str) -> Any:
    if transition in _OPERATION:
        body, path = _OPERATION[transition]
        return await api.call(path, {"incident_ids": [incident_id], **body}, key=who.key)
    if transition == "severity":
        return await api.call("/incident/reset", {"incident_id": incident_id,
                                                  "incident_severity": "Info"}, key=who.key)
    target = await create(api, who, title="the outage")
    if transition == "merge_away":
        return await api.call("/incident/merge", {"source_incident_ids": [incident_id],
                                                  "target_incident_id": target}, key=who.key)
    return await api.call("/alert/merge", {"incident_id": target, "alert_ids": [alert_id]},
                          key=who.key)


async def _alert(api: Api, alert_id: str) -> Any:
    async with api.runtime.db.transaction(write=False) as conn:
        return (await conn.execute(select(alert).where(alert.c.alert_id == alert_id))).one()


@pytest.mark.parametrize("start", STARTS)
@pytest.mark.parametrize("transition", sorted(TABLE))
async def test_the_transition_table(api: Api, owner: Person, transition: str,
                                    start: str) -> None:
    incident_id = await create(api, owner)
    alert_id = await seed_alert(api, owner, incident_id)
    for path, body in _REACH[start]:
        reply = await api.call(f"/incident/{path}", {"incident_ids": [incident_id], **body},
                               key=owner.key)
        assert reply.status == 200, reply.body
    before, kinds, feeds = (await info(api, owner, incident_id),
                            await event_kinds(api, incident_id),
                            await feed_types(api, owner, incident_id))
    reply = await _call(api, owner, transition, incident_id, alert_id)
    expected = TABLE[transition][start]
    after = await info(api, owner, incident_id)
    if expected is None:
        assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
        assert incident_id in reply.message
        assert after == before
        assert await event_kinds(api, incident_id) == kinds
        return
    assert reply.status == 200, reply.body
    progress, new_kinds, new_feeds = expected
    assert after["progress"] == progress
    assert (await event_kinds(api, incident_id))[len(kinds):] == new_kinds
    assert (await feed_types(api, owner, incident_id))[len(feeds):] == new_feeds
    moved = transition in ("merge_away", "alerts_leave")
    the_alert = await _alert(api, alert_id)
    if progress == "Closed":
        # Closed: no snooze, status Ok, and no active alert of its own (ended with it, or
        # moved to the incident it merged into).
        assert (after["snoozed_before"], after["incident_status"]) == (0, "Ok")
        assert after["active_alert_cnt"] == 0
        assert after["close_time"] > 0
        if moved:
            assert the_alert.incident_id != incident_id
        else:
            assert the_alert.end_time > 0 and the_alert.alert_status == "Ok"
    else:
        assert after["incident_status"] == after["incident_severity"]
        assert (after["close_time"], after["closer_id"]) == (0, 0)
        assert after["active_alert_cnt"] == int(the_alert.end_time == 0)
    if "resolved" in new_kinds:
        assert after["closer_id"] == owner.person_id


def test_the_guards() -> None:
    """Each guard over every progress, snoozed or not, as the table above says."""
    now_s = 1_000
    guards = {"ack": state.ACKNOWLEDGE, "unack": state.UNACKNOWLEDGE,
              "resolve": state.RESOLVE, "reopen": state.REOPEN, "snooze": state.SNOOZE,
              "wake": state.WAKE}
    for name, guard in guards.items():
        for start in STARTS:
            progress = "Triggered" if start == "Snoozed" else start
            snoozed_before = now_s + 60 if start == "Snoozed" else 0
            accepted = guard.accepts(progress, snoozed_before, now_s)
            assert accepted == (TABLE[name][start] is not None), (name, start)
    # A snooze that has run out is no snooze: nothing to wake.
    assert not state.WAKE.accepts("Triggered", now_s, now_s)


async def test_the_severity_rule_reads_the_same_in_python_and_in_sql(
        api: Api, owner: Person) -> None:
    """Ingestion raises an incident's severity in its one UPDATE (repository.raised_severity);
    the services set it with values.severity_set: for every severity it had, every severity
    raised to and every progress, the two agree (status follows severity while open)."""
    incident_id = await create(api, owner)
    for progress in PROGRESSES:
        for had in SEVERITIES:
            for raised in SEVERITIES:
                start = {"progress": progress, "incident_severity": had,
                         "incident_status": "Ok" if progress == "Closed" else had}
                async with api.runtime.db.transaction() as conn:
                    by_id = incident.c.incident_id == incident_id
                    await conn.execute(update(incident).where(by_id).values(start))
                    await conn.execute(update(incident).where(by_id)
                                       .values(state.raised_severity(raised)))
                    got = (await conn.execute(select(
                        incident.c.incident_severity, incident.c.incident_status)
                        .where(by_id))).one()
                wanted = {**start, **state.severity_set(worse(raised, had), progress)}
                assert (got.incident_severity, got.incident_status) == (
                    wanted["incident_severity"], wanted["incident_status"]), (
                    progress, had, raised)
