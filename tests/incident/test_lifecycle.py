"""Incident creation and progress transitions through the HTTP API: stored effects re-read
through /incident/info and /incident/feed, events, all-or-nothing batches, permissions."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.lifecycle_support import (
    assert_invalid,
    create,
    event_kinds,
    event_total,
    events_of,
    feed_items,
    feed_types,
    info,
    now,
    seed_alert,
    seed_channel,
)

pytestmark = pytest.mark.anyio


async def test_create_and_info_record(api: Api, owner: Person) -> None:
    channel_id = await seed_channel(api, owner, "Payments")
    helper = await new_member(api, owner, name="Helper", builtin="admin")
    reply = await api.call("/incident/create", {
        "incident_severity": "Warning", "title": "  checkout slow ", "description": "p99 up",
        "channel_id": channel_id, "assigned_to": {"person_ids": [helper.person_id]},
    }, key=owner.key)
    assert reply.status == 200, reply.body
    incident_id = reply.data["incident_id"]
    assert reply.data["title"] == "checkout slow"
    assert len(incident_id) == 24
    got = await info(api, owner, incident_id)
    assert got["incident_id"] == incident_id
    assert got["account_id"] == owner.account_id
    assert got["progress"] == "Triggered"
    assert got["incident_severity"] == got["incident_status"] == "Warning"
    assert got["channel_id"] == channel_id
    assert (got["channel_name"], got["channel_status"]) == ("Payments", "enabled")
    assert got["account_name"] == "Acme"
    assert got["account_time_zone"] and got["account_locale"]
    assert got["creator_id"] == owner.person_id
    assert got["description"] == "p99 up"
    assert got["start_time"] == got["created_at"] == now(api) or got["start_time"] > 0
    for zero in ("end_time", "ack_time", "close_time", "closer_id", "snoozed_before",
                 "alert_cnt", "active_alert_cnt", "alert_event_cnt", "deleted_at"):
        assert got[zero] == 0, zero
    assert got["detail_url"].endswith(f"/console/incidents/{incident_id}")
    assert got["assigned_to"]["person_ids"] == [helper.person_id]
    assert got["assigned_to"]["type"] == "assign"
    assert [r["person_id"] for r in got["responders"]] == [helper.person_id]
    assert got["responders"][0]["person_name"] == "Helper"
    assert got["responders"][0]["acknowledged_at"] == 0
    assert got["integration_ids"] == [] and got["labels"] == {} and got["fields"] == {}
    assert await feed_types(api, owner, incident_id) == ["i_new", "i_assign"]
    assert await event_kinds(api, incident_id) == ["created", "assigned"]
    items = await feed_items(api, owner, incident_id)
    assert items[0]["detail"] == {"severity": "Warning", "title": "checkout slow"}
    assert items[0]["creator_id"] == owner.person_id
    assert items[0]["creator_name"] == "Acme Owner"
    assert items[0]["ref_id"] == incident_id


async def test_create_rejects_bad_input(api: Api, owner: Person, other_owner: Person) -> None:
    foreign_channel = await seed_channel(api, other_owner, "Theirs")
    stranger = await new_member(api, other_owner, name="Stranger")
    cases = [
        ({"title": "x"}, "InvalidParameter", "incident_severity"),
        ({"incident_severity": "Ok", "title": "x"}, "InvalidParameter", "incident_severity"),
        ({"incident_severity": "Info", "title": "   "}, "InvalidParameter", "title"),
        ({"incident_severity": "Info", "title": "x" * 513}, "InvalidParameter", "title"),
        ({"incident_severity": "Info", "title": "x", "channel_id": foreign_channel},
         "ResourceNotFound", str(foreign_channel)),
        ({"incident_severity": "Info", "title": "x", "channel_id": 2**70},
         "InvalidParameter", "channel_id"),
        ({"incident_severity": "Info", "title": "x",
          "assigned_to": {"person_ids": [stranger.person_id]}},
         "InvalidParameter", "assigned_to.person_ids"),
        # Addresses alone name no member nor rule (`{}` names no one: no assignment).
        ({"incident_severity": "Info", "title": "x",
          "assigned_to": {"emails": ["ops@example.com"]}}, "InvalidParameter", "assigned_to"),
    ]
    before = await event_total(api)
    for body, code, name in cases:
        assert_invalid(await api.call("/incident/create", body, key=owner.key), code, name)
    assert await event_total(api) == before


async def test_ack_unack_resolve_cycle(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    alert_id = await seed_alert(api, owner, incident_id, events=3)
    await seed_alert(api, owner, incident_id, active=False)

    assert (await api.call("/incident/ack", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    got = await info(api, owner, incident_id)
    assert got["progress"] == "Processing"
    assert got["ack_time"] > 0
    assert got["responders"][0]["person_id"] == owner.person_id
    assert got["responders"][0]["acknowledged_at"] == got["ack_time"]

    assert (await api.call("/incident/unack", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    got = await info(api, owner, incident_id)
    assert got["progress"] == "Triggered"
    assert got["responders"][0]["acknowledged_at"] == 0
    assert got["ack_time"] == 0  # the acknowledgement it had is gone with the unack
    assert (await api.call("/incident/ack", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    again = await info(api, owner, incident_id)
    assert again["ack_time"] > 0 and again["ack_time"] == again["responders"][0]["acknowledged_at"]
    assert (await api.call("/incident/unack", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200

    reply = await api.call("/incident/resolve", {"incident_ids": [incident_id],
                                                 "root_cause": "full disk"}, key=owner.key)
    assert reply.status == 200, reply.body
    got = await info(api, owner, incident_id)
    assert got["progress"] == "Closed"
    assert got["incident_status"] == "Ok"
    assert got["incident_severity"] == "Critical"
    assert got["close_time"] > 0 and got["end_time"] == got["close_time"]
    assert got["closer_id"] == owner.person_id
    assert got["root_cause"] == "full disk"
    assert (got["alert_cnt"], got["active_alert_cnt"], got["alert_event_cnt"]) == (2, 0, 4)
    alerts = await api.call("/incident/alert/list", {"incident_id": incident_id}, key=owner.key)
    assert alerts.data["total"] == 2
    recovered = {a["alert_id"]: a for a in alerts.data["items"]}[alert_id]
    assert recovered["alert_status"] == "Ok" and recovered["end_time"] > 0
    assert recovered["incident"]["progress"] == "Closed"

    assert await feed_types(api, owner, incident_id) == [
        "i_new", "i_ack", "i_unack", "i_ack", "i_unack", "i_rslv"]
    assert await event_kinds(api, incident_id) == [
        "created", "acked", "unacked", "acked", "unacked", "resolved"]
    items = await feed_items(api, owner, incident_id)
    assert items[-1]["detail"] == {"from": "console"}
    assert all(i["creator_id"] == owner.person_id for i in items)


async def test_invalid_transitions_change_nothing(api: Api, owner: Person) -> None:
    closed = await create(api, owner)
    open_one = await create(api, owner)
    assert (await api.call("/incident/resolve", {"incident_ids": [closed]},
                           key=owner.key)).status == 200
    before_closed = await info(api, owner, closed)
    before_open = await info(api, owner, open_one)
    events_before = await event_total(api)
    cases = [
        ("/incident/ack", {"incident_ids": [open_one, closed]}, closed),
        ("/incident/unack", {"incident_ids": [open_one]}, open_one),
        ("/incident/resolve", {"incident_ids": [open_one, closed]}, closed),
        ("/incident/snooze", {"incident_ids": [open_one, closed], "minutes": 5}, closed),
        ("/incident/wake", {"incident_ids": [open_one]}, open_one),
        ("/incident/assign", {"incident_ids": [closed],
                              "assigned_to": {"person_ids": [owner.person_id]}}, closed),
    ]
    for path, body, named in cases:
        reply = await api.call(path, body, key=owner.key)
        assert_invalid(reply, "InvalidParameter", "incident_ids", named)
        if path in ("/incident/ack", "/incident/resolve", "/incident/snooze"):
            assert open_one not in reply.message  # only the offending ids are named
    assert await info(api, owner, closed) == before_closed
    assert await info(api, owner, open_one) == before_open
    assert await event_total(api) == events_before
    assert await feed_types(api, owner, open_one) == ["i_new"]


async def test_ack_twice_in_one_batch_counts_once(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    reply = await api.call("/incident/ack", {"incident_ids": [incident_id, incident_id.upper()]},
                           key=owner.key)
    assert reply.status == 200, reply.body
    assert await feed_types(api, owner, incident_id) == ["i_new", "i_ack"]


async def test_other_accounts_incidents_are_not_found(api: Api, owner: Person,
                                                      other_owner: Person) -> None:
    mine = await create(api, owner)
    theirs = await create(api, other_owner)
    before = await info(api, other_owner, theirs)
    events_before = await event_total(api)
    calls = [
        ("/incident/info", {"incident_id": theirs}),
        ("/incident/feed", {"incident_id": theirs}),
        ("/incident/alert/list", {"incident_id": theirs}),
        ("/incident/ack", {"incident_ids": [mine, theirs]}),
        ("/incident/resolve", {"incident_ids": [theirs]}),
        ("/incident/snooze", {"incident_ids": [theirs], "minutes": 10}),
        ("/incident/comment", {"incident_ids": [theirs], "comment": "hi"}),
        ("/incident/remove", {"incident_ids": [theirs]}),
        ("/incident/reset", {"incident_id": theirs, "title": "stolen"}),
        ("/incident/assign", {"incident_id": theirs,
                              "assigned_to": {"person_ids": [owner.person_id]}}),
        ("/incident/merge", {"target_incident_id": mine, "source_incident_ids": [theirs]}),
        ("/incident/merge", {"target_incident_id": theirs, "source_incident_ids": [mine]}),
        ("/incident/field/reset", {"incident_id": theirs, "field_name": "x",
                                   "field_value": "y"}),
    ]
    for path, body in calls:
        reply = await api.call(path, body, key=owner.key)
        assert_invalid(reply, "ResourceNotFound", theirs)
    assert await info(api, other_owner, theirs) == before
    assert await feed_types(api, owner, mine) == ["i_new"]
    assert await event_total(api) == events_before
    by_ids = await api.call("/incident/list-by-ids", {"incident_ids": [mine, theirs]},
                            key=owner.key)
    assert [i["incident_id"] for i in by_ids.data["items"]] == [mine]


async def test_member_without_incident_manage_reads_but_cannot_write(
        api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    viewer = await new_member(api, owner, name="Viewer", builtin="member")
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    assert (await info(api, viewer, incident_id))["incident_id"] == incident_id
    for path, body in [
        ("/incident/create", {"incident_severity": "Info", "title": "x"}),
        ("/incident/ack", {"incident_ids": [incident_id]}),
        ("/incident/resolve", {"incident_ids": [incident_id]}),
        ("/incident/reopen", {"incident_ids": [incident_id]}),
        ("/incident/field/reset", {"incident_id": incident_id, "field_name": "x"}),
        ("/incident/remove", {"incident_ids": [incident_id]}),
    ]:
        reply = await api.call(path, body, key=viewer.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path
    reply = await api.call("/incident/info", {"incident_id": incident_id}, key=nobody.key)
    assert reply.status == 403
    assert (await info(api, owner, incident_id))["progress"] == "Triggered"


async def test_snooze_and_wake(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    for minutes in (0, 1441, -1, 2**64):
        reply = await api.call("/incident/snooze", {"incident_ids": [incident_id],
                                                    "minutes": minutes}, key=owner.key)
        assert_invalid(reply, "InvalidParameter", "minutes")
    reply = await api.call("/incident/snooze", {"incident_ids": [incident_id], "minutes": 30},
                           key=owner.key)
    assert reply.status == 200
    got = await info(api, owner, incident_id)
    assert got["snoozed_before"] == got["updated_at"] + 1800
    assert (await api.call("/incident/wake", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    assert (await info(api, owner, incident_id))["snoozed_before"] == 0
    items = await feed_items(api, owner, incident_id)
    assert [i["type"] for i in items] == ["i_new", "i_snooze", "i_wake"]
    assert items[1]["detail"] == {"minutes": 30}
    assert items[2]["detail"] == {"snoozedBefore": got["snoozed_before"]}
    assert await event_kinds(api, incident_id) == ["created", "snoozed", "woken"]


async def test_reset_edits_fields_with_one_feed_entry_each(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner, description="db down")
    reply = await api.call("/incident/reset", {
        "incident_id": incident_id, "title": "db down in eu", "incident_severity": "Info",
        "impact": "checkout", "root_cause": "disk", "resolution": "grew disk",
        "description": "db down",
    }, key=owner.key)
    assert reply.status == 200, reply.body
    got = await info(api, owner, incident_id)
    assert got["title"] == "db down in eu"
    assert got["incident_severity"] == got["incident_status"] == "Info"
    assert (got["impact"], got["root_cause"], got["resolution"]) == (
        "checkout", "disk", "grew disk")
    items = await feed_items(api, owner, incident_id)
    by_type = {i["type"]: i["detail"] for i in items}
    assert by_type["i_r_title"] == {"from": "db down", "to": "db down in eu"}
    assert by_type["i_r_severity"] == {"from": "Critical", "to": "Info"}
    assert {"i_r_impact", "i_r_rc", "i_r_rsltn"} <= by_type.keys()
    assert "i_r_desc" not in by_type  # unchanged: no entry
    assert await event_kinds(api, incident_id) == ["created", "updated"]
    assert_invalid(await api.call("/incident/reset", {"incident_id": incident_id,
                                                      "title": "ab"}, key=owner.key),
                   "InvalidParameter", "title")


async def test_comment_and_remove(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    other = await create(api, owner)
    reply = await api.call("/incident/comment", {"incident_ids": [incident_id, other],
                                                 "comment": "looking"}, key=owner.key)
    assert reply.status == 200
    items = await feed_items(api, owner, incident_id)
    assert items[-1]["type"] == "i_comm"
    assert items[-1]["detail"] == {"comment": "looking", "mute_reply": False}
    assert_invalid(await api.call("/incident/comment", {"incident_ids": [incident_id],
                                                        "comment": "x" * 1025}, key=owner.key),
                   "InvalidParameter", "comment")
    assert (await api.call("/incident/remove", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    assert_invalid(await api.call("/incident/info", {"incident_id": incident_id},
                                  key=owner.key), "ResourceNotFound", incident_id)
    t = now(api)
    listed = await api.call("/incident/list", {"start_time": t - 3600, "end_time": t + 60},
                            key=owner.key)
    assert [i["incident_id"] for i in listed.data["items"]] == [other]
    assert (await event_kinds(api, incident_id))[-1] == "removed"
    assert_invalid(await api.call("/incident/remove", {"incident_ids": [incident_id]},
                                  key=owner.key), "ResourceNotFound", incident_id)


async def test_assign_adds_responders_and_checks_members(api: Api, owner: Person,
                                                         other_owner: Person) -> None:
    incident_id = await create(api, owner)
    ann = await new_member(api, owner, name="Ann", builtin="admin")
    reply = await api.call("/incident/assign", {
        "incident_id": incident_id, "assigned_to": {"person_ids": [ann.person_id]}},
        key=owner.key)
    assert reply.status == 200, reply.body
    got = await info(api, owner, incident_id)
    assert got["assigned_to"]["type"] == "assign"
    assert got["assigned_to"]["person_ids"] == [ann.person_id]
    assert [r["person_id"] for r in got["responders"]] == [ann.person_id]
    reply = await api.call("/incident/assign", {
        "incident_ids": [incident_id], "assigned_to": {"person_ids": [owner.person_id]}},
        key=owner.key)
    assert reply.status == 200
    got = await info(api, owner, incident_id)
    assert got["assigned_to"]["type"] == "reassign"
    assert [r["person_id"] for r in got["responders"]] == [ann.person_id, owner.person_id]
    assert await feed_types(api, owner, incident_id) == ["i_new", "i_assign", "i_assign"]
    events = await events_of(api, incident_id)
    assert events[-1]["kind"] == "assigned"
    assert events[-1]["payload"]["assignment"]["person_ids"] == [owner.person_id]
    assert_invalid(await api.call("/incident/assign", {
        "incident_id": incident_id, "assigned_to": {"person_ids": [other_owner.person_id]}},
        key=owner.key), "InvalidParameter", str(other_owner.person_id))
    assert_invalid(await api.call("/incident/assign", {
        "assigned_to": {"person_ids": [owner.person_id]}}, key=owner.key),
        "InvalidParameter", "incident_ids")


async def test_merge_moves_alerts_and_closes_sources(api: Api, owner: Person) -> None:
    target = await create(api, owner, title="api errors")
    source = await create(api, owner, title="api 500s")
    closed_source = await create(api, owner, title="old")
    await seed_alert(api, owner, target, events=2)
    await seed_alert(api, owner, source, events=5)
    await seed_alert(api, owner, source, active=False)
    assert (await api.call("/incident/ack", {"incident_ids": [source]},
                           key=owner.key)).status == 200
    assert (await api.call("/incident/resolve", {"incident_ids": [closed_source]},
                           key=owner.key)).status == 200
    reply = await api.call("/incident/merge", {
        "target_incident_id": target, "source_incident_ids": [source, closed_source, target],
        "title": "api outage", "comment": "same cause"}, key=owner.key)
    assert reply.status == 200, reply.body
    got = await info(api, owner, target)
    assert got["title"] == "api outage"
    assert (got["alert_cnt"], got["active_alert_cnt"], got["alert_event_cnt"]) == (3, 2, 8)
    assert owner.person_id in [r["person_id"] for r in got["responders"]]
    alerts = await api.call("/incident/alert/list", {"incident_id": target, "is_active": True},
                            key=owner.key)
    assert alerts.data["total"] == 2
    src = await info(api, owner, source)
    assert src["progress"] == "Closed" and src["merged_into"] == target
    assert src["close_time"] > 0 and src["closer_id"] == owner.person_id
    assert (src["alert_cnt"], src["active_alert_cnt"]) == (0, 0)
    assert (await info(api, owner, closed_source))["merged_into"] == target
    target_feed = await feed_items(api, owner, target)
    assert target_feed[-1]["type"] == "i_merge"
    assert [s["incident_id"] for s in target_feed[-1]["detail"]["source_incidents"]] == [
        source, closed_source]
    assert (await feed_types(api, owner, source))[-1] == "i_merge"
    # The open source closed: its merge's event, then the close's own (whoever listens for
    # a close hears it); the source that was closed already only merged.
    assert (await event_kinds(api, source))[-2:] == ["merged", "resolved"]
    (closed,) = [e for e in await events_of(api, source) if e["kind"] == "resolved"]
    assert closed["payload"] == {"channel_id": 0, "progress": "Closed", "reason": "merged",
                                 "recovered_alerts": 0, "merged_into": target}
    assert (await event_kinds(api, closed_source)).count("resolved") == 1
    assert (await event_kinds(api, closed_source))[-1] == "merged"
    assert (await event_kinds(api, target))[-1] == "merged"
    # A Closed target, or only the target itself, is refused.
    assert_invalid(await api.call("/incident/merge", {
        "target_incident_id": source, "source_incident_ids": [target]}, key=owner.key),
        "InvalidParameter", "target_incident_id")
    assert_invalid(await api.call("/incident/merge", {
        "target_incident_id": target, "source_incident_ids": [target]}, key=owner.key),
        "InvalidParameter", "source_incident_ids")


async def test_merge_can_remove_sources(api: Api, owner: Person) -> None:
    target = await create(api, owner)
    source = await create(api, owner)
    reply = await api.call("/incident/merge", {
        "target_incident_id": target, "source_incident_ids": [source],
        "remove_source_incidents": True}, key=owner.key)
    assert reply.status == 200
    assert_invalid(await api.call("/incident/info", {"incident_id": source}, key=owner.key),
                   "ResourceNotFound", source)


async def test_bad_ids_are_refused_by_name(api: Api, owner: Person) -> None:
    for path, body, name in [
        ("/incident/ack", {"incident_ids": []}, "incident_ids"),
        ("/incident/ack", {"incident_ids": ["zz" * 12]}, "incident_ids"),
        ("/incident/ack", {"incident_ids": ["a" * 24] * 101}, "incident_ids"),
        ("/incident/info", {"incident_id": "nothex"}, "incident_id"),
        ("/incident/info", {}, "incident_id"),
        ("/incident/feed", {"incident_id": "a" * 24, "types": ["bogus"]}, "types"),
    ]:
        assert_invalid(await api.call(path, body, key=owner.key), "InvalidParameter", name)
    assert_invalid(await api.call("/incident/info", {"incident_id": "a" * 24}, key=owner.key),
                   "ResourceNotFound", "a" * 24)


async def test_feed_paging_order_and_type_filter(api: Api, owner: Person) -> None:
    incident_id = await create(api, owner)
    for i in range(4):
        await api.call("/incident/comment", {"incident_ids": [incident_id],
                                             "comment": f"note {i}"}, key=owner.key)
    page = await api.call("/incident/feed", {"incident_id": incident_id, "limit": 2},
                          key=owner.key)
    assert page.data["has_next_page"] is True
    assert [i["detail"]["comment"] for i in page.data["items"]] == ["note 3", "note 2"]
    last = await api.call("/incident/feed", {"incident_id": incident_id, "limit": 2, "p": 3},
                          key=owner.key)
    assert last.data["has_next_page"] is False
    assert [i["type"] for i in last.data["items"]] == ["i_new"]
    only = await api.call("/incident/feed", {"incident_id": incident_id, "types": ["i_new"]},
                          key=owner.key)
    assert [i["type"] for i in only.data["items"]] == ["i_new"]
