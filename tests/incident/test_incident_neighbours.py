"""/incident/responder/add, /incident/disable-merge and /incident/past/list: status codes,
permissions, other accounts' and hidden (private channel) ids, what changes and what is
stored, and the reference's response schemas."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.incident.query import repository as query_repo
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push, wire
from tests.incident.ingest_support import incident_row, incidents_of
from tests.incident.lifecycle_support import assert_invalid, events_of, feed_items, info
from tests.incident.neighbours_support import (
    audited,
    incident_of_push,
    private_channel,
    responder,
)

pytestmark = pytest.mark.anyio
UNKNOWN = "0123456789abcdef01234567"


# --- /incident/responder/add ------------------------------------------------------------

async def test_responders_join_with_a_feed_entry_an_event_and_an_audit_record(
    capi: Api, acme: Person
) -> None:
    w = await wire(capi, acme)
    incident_id, _ = await incident_of_push(capi, w)
    ann = await new_member(capi, acme, name="Ann")
    bob = await new_member(capi, acme, name="Bob")
    reply = await capi.raw("POST", "/incident/responder/add", params={"app_key": acme.key},
                           json={"incident_id": incident_id.upper(),
                                 "person_ids": [ann.person_id, bob.person_id, ann.person_id],
                                 "notify": {"follow_preference": False,
                                            "personal_channels": ["sms", "email"]}})
    assert check("/incident/responder/add", reply)["data"] == {}

    record = await info(capi, acme, incident_id)
    responders = {r["person_id"]: r for r in record["responders"]}
    assert set(responders) == {ann.person_id, bob.person_id}
    assert all(r["acknowledged_at"] == 0 and r["assigned_at"] > 0
               for r in responders.values())
    added = [i for i in await feed_items(capi, acme, incident_id) if i["type"] == "i_a_rspd"]
    assert [(i["detail"], i["creator_id"]) for i in added] == [
        ({"to": [ann.person_id, bob.person_id]}, acme.person_id)]
    (ev,) = [e for e in await events_of(capi, incident_id) if e["kind"] == "responders_added"]
    assert ev["payload"]["person_ids"] == [ann.person_id, bob.person_id]
    assert ev["payload"]["notify"]["personal_channels"] == ["sms", "email"]
    assert ev["person_id"] == acme.person_id
    assert await audited(capi, "incident.responder.add") == [
        {"outcome": "OK", "targets": [incident_id], "member_id": acme.person_id}]

    # Adding people who respond already changes nothing and records nothing.
    again = await capi.call("/incident/responder/add", {
        "incident_id": incident_id, "person_ids": [bob.person_id]}, key=acme.key)
    assert again.status == 200
    assert len([i for i in await feed_items(capi, acme, incident_id)
                if i["type"] == "i_a_rspd"]) == 1
    assert len((await info(capi, acme, incident_id))["responders"]) == 2


async def test_responder_add_refuses_strangers_closed_incidents_and_bad_input(
    capi: Api, acme: Person
) -> None:
    w = await wire(capi, acme)
    incident_id, _ = await incident_of_push(capi, w)
    other = await new_account(capi, "Other")
    stranger = await new_member(capi, other, name="Stranger")
    body: dict[str, Any] = {"incident_id": incident_id, "person_ids": [stranger.person_id]}
    reply = await capi.call("/incident/responder/add", body, key=acme.key)
    assert_invalid(reply, "InvalidParameter", "person_ids", str(stranger.person_id))
    assert (await info(capi, acme, incident_id))["responders"] == []

    for bad in ({"incident_id": incident_id, "person_ids": []},
                {"incident_id": "nope", "person_ids": [acme.person_id]},
                {"incident_id": incident_id, "person_ids": [acme.person_id],
                 "notify": {"personal_channels": ["pigeon"]}}):
        assert (await capi.call("/incident/responder/add", bad, key=acme.key)).status == 400

    theirs = await capi.call("/incident/responder/add", {
        "incident_id": incident_id, "person_ids": [stranger.person_id]}, key=other.key)
    assert_invalid(theirs, "ResourceNotFound", incident_id)

    await capi.call("/incident/resolve", {"incident_ids": [incident_id]}, key=acme.key)
    closed = await capi.call("/incident/responder/add", {
        "incident_id": incident_id, "person_ids": [acme.person_id]}, key=acme.key)
    assert_invalid(closed, "InvalidParameter", incident_id)


async def test_responder_add_notifies_with_a_preset_or_the_accounts_template(
    capi: Api, acme: Person
) -> None:
    w = await wire(capi, acme)
    incident_id, _ = await incident_of_push(capi, w)
    other = await new_account(capi, "Other")
    theirs = (await capi.call("/template/create", {"template_name": "Theirs", "sms": "x"},
                              key=other.key)).data["template_id"]
    mine = (await capi.call("/template/create", {"template_name": "Mine", "sms": "x"},
                            key=acme.key)).data["template_id"]
    ann = await new_member(capi, acme, name="Ann")
    for unknown in (theirs, UNKNOWN):
        reply = await capi.call("/incident/responder/add", {
            "incident_id": incident_id, "person_ids": [ann.person_id],
            "notify": {"template_id": unknown}}, key=acme.key)
        assert_invalid(reply, "ResourceNotFound", unknown)
    assert (await info(capi, acme, incident_id))["responders"] == []
    for template_id in ("6321aad26c12104586a88916", "000000000000000000000001", mine):
        person = await new_member(capi, acme, name=f"P{template_id[-4:]}")
        reply = await capi.call("/incident/responder/add", {
            "incident_id": incident_id, "person_ids": [person.person_id],
            "notify": {"template_id": template_id}}, key=acme.key)
        assert reply.status == 200, reply.body
    assert len((await info(capi, acme, incident_id))["responders"]) == 3


async def test_responder_add_needs_incident_management_and_sight_of_the_channel(
    capi: Api, acme: Person
) -> None:
    p = await private_channel(capi, acme)
    incident_id, _ = await incident_of_push(capi, p.wired)
    viewer = await new_member(capi, acme, name="Viewer", builtin="member")
    body = {"incident_id": incident_id, "person_ids": [viewer.person_id]}
    denied = await capi.call("/incident/responder/add", body, key=viewer.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")
    hidden = await capi.call("/incident/responder/add", body, key=p.outsider.key)
    assert_invalid(hidden, "ResourceNotFound", incident_id)
    assert (await capi.call("/incident/responder/add", body, key=p.insider.key)).status == 200


# --- /incident/disable-merge ------------------------------------------------------------

async def test_disable_merge_stops_grouping_into_the_incident(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    w = await wire(capi, acme, group={"method": "p", "equals": [["labels.service"]]})
    first_id, _ = await incident_of_push(capi, w, key="a1", labels={"service": "api"})
    await incident_of_push(capi, w, key="a2", labels={"service": "api"})
    assert (await incident_row(capi, first_id)).alert_cnt == 2

    reply = await capi.raw("POST", "/incident/disable-merge", params={"app_key": acme.key},
                           json={"incident_ids": [first_id]})
    assert check("/incident/disable-merge", reply)["data"] == {}
    assert (await incident_row(capi, first_id)).merge_disabled
    assert [e["payload"]["fields"] for e in await events_of(capi, first_id)
            if e["kind"] == "updated"] == [["merge_disabled"]]
    assert await audited(capi, "incident.disable-merge") == [
        {"outcome": "OK", "targets": [first_id], "member_id": acme.person_id}]

    clock.advance(5)
    second_id, _ = await incident_of_push(capi, w, key="a3", labels={"service": "api"})
    third_id, _ = await incident_of_push(capi, w, key="a4", labels={"service": "api"})
    assert second_id != first_id and third_id == second_id  # a new incident takes the group
    assert (await incident_row(capi, first_id)).alert_cnt == 2
    assert (await incident_row(capi, second_id)).alert_cnt == 2
    # Events of alerts already in the incident still count there.
    await push(capi, w.key, event("again", key="a1", labels={"service": "api"}))
    assert (await incident_row(capi, first_id)).alert_event_cnt == 3
    assert len(await incidents_of(capi, w.channel_id)) == 2

    # Idempotent: disabling again emits nothing new.
    assert (await capi.call("/incident/disable-merge", {"incident_ids": [first_id]},
                            key=acme.key)).status == 200
    assert len([e for e in await events_of(capi, first_id) if e["kind"] == "updated"]) == 1


async def test_disable_merge_is_all_or_nothing_and_scoped(capi: Api, acme: Person) -> None:
    p = await private_channel(capi, acme)
    hidden_id, _ = await incident_of_push(capi, p.wired)
    w = await wire(capi, acme)
    open_id, _ = await incident_of_push(capi, w)
    mixed = await capi.call("/incident/disable-merge", {"incident_ids": [open_id, UNKNOWN]},
                            key=acme.key)
    assert_invalid(mixed, "ResourceNotFound", UNKNOWN)
    assert not (await incident_row(capi, open_id)).merge_disabled
    hidden = await capi.call("/incident/disable-merge", {"incident_ids": [hidden_id]},
                             key=p.outsider.key)
    assert_invalid(hidden, "ResourceNotFound", hidden_id)
    other = await new_account(capi, "Other")
    assert_invalid(await capi.call("/incident/disable-merge", {"incident_ids": [open_id]},
                                   key=other.key), "ResourceNotFound", open_id)
    viewer = await new_member(capi, acme, name="Viewer", builtin="member")
    denied = await capi.call("/incident/disable-merge", {"incident_ids": [open_id]},
                             key=viewer.key)
    assert denied.status == 403
    assert (await capi.call("/incident/disable-merge", {"incident_ids": []},
                            key=acme.key)).status == 400
    assert not (await incident_row(capi, open_id)).merge_disabled
    assert not (await incident_row(capi, hidden_id)).merge_disabled


# --- /incident/past/list ----------------------------------------------------------------

_keys = iter(range(1_000_000))


async def _history(capi: Api, w: Wired, clock: FakeClock,
                   titles: list[tuple[str, dict[str, str]]]) -> list[str]:
    """An incident per title, a minute apart (each alert its own key)."""
    ids = []
    for title, labels in titles:
        clock.advance(60)
        incident_id, _ = await incident_of_push(capi, w, title, key=f"h{next(_keys)}",
                                                labels=labels)
        ids.append(incident_id)
    return ids


async def test_past_incidents_are_earlier_ones_of_the_channel_ranked_by_similarity(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    other_channel = await wire(capi, acme, name="Other", group={"method": "n"})
    await incident_of_push(capi, other_channel, "disk full on db-7", key="o1",
                           labels={"host": "db-7"})
    same_title, near, unrelated, labels_only = await _history(capi, w, clock, [
        ("disk full on db-7", {"host": "db-7", "service": "mysql"}),
        ("Disk full on db-12", {"host": "db-12", "service": "mysql"}),
        ("certificate expires soon", {"host": "web-1"}),
        ("latency high", {"host": "db-7", "service": "mysql"}),
    ])
    (current,) = await _history(capi, w, clock, [
        ("disk full on db-7", {"host": "db-7", "service": "mysql"})])
    clock.advance(60)
    later, _ = await incident_of_push(capi, w, "disk full on db-7", key="later",
                                      labels={"host": "db-7", "service": "mysql"})

    reply = await capi.raw("POST", "/incident/past/list", params={"app_key": acme.key},
                           json={"incident_id": current, "limit": 10})
    items = check("/incident/past/list", reply)["data"]["items"]
    ids = [i["incident_id"] for i in items]
    assert ids[:2] == [same_title, near]
    assert current not in ids and later not in ids  # not itself, nothing after it
    assert unrelated not in ids  # nothing in common: below the threshold
    assert labels_only in ids
    scores = [i["score"] for i in items]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == 1.0 and all(0 < s <= 1 for s in scores)
    assert all(i["channel_id"] == w.channel_id for i in items)

    top = await capi.call("/incident/past/list", {"incident_id": current, "limit": 1},
                          key=acme.key)
    assert [i["incident_id"] for i in top.data["items"]] == [same_title]
    # `total` counts every similar one, over the pages a published client asks with `p`.
    assert type(top.data["total"]) is int and top.data["total"] == len(items) == 3
    second = await capi.call("/incident/past/list", {"incident_id": current, "limit": 1,
                                                     "p": 2}, key=acme.key)
    assert [i["incident_id"] for i in second.data["items"]] == [near]
    assert second.data["total"] == 3
    beyond = await capi.call("/incident/past/list", {"incident_id": current, "p": 9},
                             key=acme.key)
    assert (beyond.data["items"], beyond.data["total"]) == ([], 3)
    default = await capi.call("/incident/past/list", {"incident_id": current}, key=acme.key)
    assert len(default.data["items"]) == 3
    assert (await capi.call("/incident/past/list", {"incident_id": current, "limit": 101},
                            key=acme.key)).status == 400


async def test_past_incidents_score_a_bounded_candidate_set(
    capi: Api, acme: Person, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    old, *_ = await _history(capi, w, clock, [
        ("queue backlog growing", {}), ("a", {}), ("b", {}), ("c", {})])
    (current,) = await _history(capi, w, clock, [("queue backlog growing", {})])
    full = await capi.call("/incident/past/list", {"incident_id": current}, key=acme.key)
    assert [i["incident_id"] for i in full.data["items"]] == [old]
    # Only the most recent candidates are scored: the old twin falls outside.
    monkeypatch.setattr(query_repo, "PAST_RECENT", 3)
    bounded = await capi.call("/incident/past/list", {"incident_id": current}, key=acme.key)
    assert bounded.data["items"] == []


async def test_past_incidents_follow_the_grouping_key_beyond_the_recent_ones(
    capi: Api, acme: Person, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = await wire(capi, acme, group={"method": "p", "equals": [["labels.service"]]})
    old, _ = await incident_of_push(capi, w, "queue backlog", key="q0",
                                    labels={"service": "queue"})
    await capi.call("/incident/resolve", {"incident_ids": [old]}, key=acme.key)
    for n in range(3):
        clock.advance(60)
        await incident_of_push(capi, w, f"other {n}", key=f"x{n}", labels={"service": f"s{n}"})
    clock.advance(60)
    current, _ = await incident_of_push(capi, w, "queue backlog", key="q1",
                                        labels={"service": "queue"})
    assert current != old
    monkeypatch.setattr(query_repo, "PAST_RECENT", 1)
    reply = await capi.call("/incident/past/list", {"incident_id": current}, key=acme.key)
    assert [i["incident_id"] for i in reply.data["items"]] == [old]


async def test_past_incidents_hide_what_the_caller_may_not_see(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    p = await private_channel(capi, acme)
    await _history(capi, p.wired, clock, [("disk full", {})])
    (current,) = await _history(capi, p.wired, clock, [("disk full", {})])
    seen = await capi.call("/incident/past/list", {"incident_id": current}, key=p.insider.key)
    assert len(seen.data["items"]) == 1
    assert_invalid(await capi.call("/incident/past/list", {"incident_id": current},
                                   key=p.outsider.key), "ResourceNotFound", current)
    other = await new_account(capi, "Other")
    assert_invalid(await capi.call("/incident/past/list", {"incident_id": current},
                                   key=other.key), "ResourceNotFound", current)
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    assert (await capi.call("/incident/past/list", {"incident_id": current},
                            key=nobody.key)).status == 403
    # A plain responder (incident management) may read them too.
    manager = await responder(capi, acme, "Mia")
    public = await wire(capi, acme, name="Public")
    public_id, _ = await incident_of_push(capi, public)
    assert (await capi.call("/incident/past/list", {"incident_id": public_id},
                            key=manager.key)).status == 200
