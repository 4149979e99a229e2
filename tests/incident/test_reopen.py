"""POST /incident/reopen: 1 to 100 ids, reason up to 1,024 chars,
every id Closed in the caller's account or nothing changes; back to Triggered with the close
fields cleared, an i_reopen feed entry with the reason, a `reopened` event carrying an
assignment of type `reopen`."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.incident.lifecycle_support import (
    assert_invalid,
    create,
    event_total,
    events_of,
    feed_items,
    info,
    seed_alert,
)

pytestmark = pytest.mark.anyio


async def _closed(api: Api, who: Person, **body: object) -> str:
    incident_id = await create(api, who, **body)
    reply = await api.call("/incident/resolve", {"incident_ids": [incident_id]}, key=who.key)
    assert reply.status == 200, reply.body
    return incident_id


async def test_reopen_clears_close_fields_and_dispatches_again(api: Api, owner: Person) -> None:
    ann = await new_member(api, owner, name="Ann", builtin="admin")
    incident_id = await create(api, owner, incident_severity="Warning",
                               assigned_to={"person_ids": [ann.person_id]})
    await seed_alert(api, owner, incident_id)
    assert (await api.call("/incident/ack", {"incident_ids": [incident_id]},
                           key=ann.key)).status == 200
    assert (await api.call("/incident/resolve", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    closed = await info(api, owner, incident_id)
    assert closed["incident_status"] == "Ok" and closed["closer_id"] == owner.person_id

    reply = await api.call("/incident/reopen", {"incident_ids": [incident_id],
                                                "reason": "it came back"}, key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data == {}
    got = await info(api, owner, incident_id)
    assert got["progress"] == "Triggered"
    assert got["incident_status"] == got["incident_severity"] == "Warning"
    assert (got["close_time"], got["end_time"], got["closer_id"]) == (0, 0, 0)
    assert got["ack_time"] == closed["ack_time"]  # the first acknowledgement stays history
    assert all(r["acknowledged_at"] == 0 for r in got["responders"])
    assert got["assigned_to"]["type"] == "reopen"
    assert got["assigned_to"]["person_ids"] == [ann.person_id]

    last = (await feed_items(api, owner, incident_id))[-1]
    assert last["type"] == "i_reopen"
    assert last["detail"] == {"reason": "it came back"}
    assert last["creator_id"] == owner.person_id
    event = (await events_of(api, incident_id))[-1]
    assert event["kind"] == "reopened"
    assert event["person_id"] == owner.person_id
    assert event["payload"]["reason"] == "it came back"
    assert event["payload"]["assignment"]["type"] == "reopen"
    assert event["payload"]["assignment"]["person_ids"] == [ann.person_id]

    # Reopened, it can be worked again.
    assert (await api.call("/incident/ack", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200


async def test_reopen_of_an_unassigned_incident_still_says_reopen(api: Api,
                                                                 owner: Person) -> None:
    incident_id = await _closed(api, owner)
    assert (await api.call("/incident/reopen", {"incident_ids": [incident_id]},
                           key=owner.key)).status == 200
    event = (await events_of(api, incident_id))[-1]
    assert event["payload"]["assignment"]["type"] == "reopen"
    assert (await feed_items(api, owner, incident_id))[-1]["detail"] == {"reason": ""}


async def test_reopen_many_at_once(api: Api, owner: Person) -> None:
    ids = [await _closed(api, owner) for _ in range(3)]
    reply = await api.call("/incident/reopen", {"incident_ids": ids, "reason": "batch"},
                           key=owner.key)
    assert reply.status == 200
    for incident_id in ids:
        assert (await info(api, owner, incident_id))["progress"] == "Triggered"


@pytest.mark.parametrize("state", ["Triggered", "Processing"])
async def test_reopen_of_an_open_incident_changes_nothing(api: Api, owner: Person,
                                                          state: str) -> None:
    closed = await _closed(api, owner)
    still_open = await create(api, owner)
    if state == "Processing":
        await api.call("/incident/ack", {"incident_ids": [still_open]}, key=owner.key)
    before = [await info(api, owner, i) for i in (closed, still_open)]
    events_before = await event_total(api)
    reply = await api.call("/incident/reopen", {"incident_ids": [closed, still_open],
                                                "reason": "x"}, key=owner.key)
    assert_invalid(reply, "InvalidParameter", "incident_ids", still_open)
    assert closed not in reply.message
    assert [await info(api, owner, i) for i in (closed, still_open)] == before
    assert await event_total(api) == events_before
    assert (await feed_items(api, owner, closed))[-1]["type"] == "i_rslv"


async def test_reopen_with_unknown_or_foreign_ids_changes_nothing(
        api: Api, owner: Person, other_owner: Person) -> None:
    mine = await _closed(api, owner)
    theirs = await _closed(api, other_owner)
    unknown = "ab" * 12
    before = await info(api, owner, mine)
    for ids, named in [([mine, theirs], theirs), ([unknown, mine], unknown)]:
        reply = await api.call("/incident/reopen", {"incident_ids": ids}, key=owner.key)
        assert_invalid(reply, "ResourceNotFound", named)
        assert mine not in reply.message
    assert await info(api, owner, mine) == before
    assert (await info(api, other_owner, theirs))["progress"] == "Closed"


async def test_reopen_limits(api: Api, owner: Person) -> None:
    closed = await _closed(api, owner)
    too_many = [f"{i:024x}" for i in range(101)]
    for body, name in [
        ({}, "incident_ids"),
        ({"incident_ids": []}, "incident_ids"),
        ({"incident_ids": too_many}, "incident_ids"),
        ({"incident_ids": "not a list"}, "incident_ids"),
        ({"incident_ids": [closed], "reason": "r" * 1025}, "reason"),
        ({"incident_ids": [closed], "reason": 5}, "reason"),
        ({"incident_ids": ["xyz"]}, "incident_ids"),
    ]:
        assert_invalid(await api.call("/incident/reopen", body, key=owner.key),
                       "InvalidParameter", name)
    assert (await info(api, owner, closed))["progress"] == "Closed"
    # The bounds themselves are accepted: 100 ids (all must exist), a 1,024-char reason.
    ids = [await _closed(api, owner) for _ in range(99)] + [closed]
    reply = await api.call("/incident/reopen", {"incident_ids": ids, "reason": "r" * 1024},
                           key=owner.key)
    assert reply.status == 200, reply.body
    assert (await feed_items(api, owner, closed))[-1]["detail"]["reason"] == "r" * 1024


async def test_reopen_needs_incident_manage(api: Api, owner: Person) -> None:
    closed = await _closed(api, owner)
    viewer = await new_member(api, owner, name="Viewer", builtin="member")
    reply = await api.call("/incident/reopen", {"incident_ids": [closed]}, key=viewer.key)
    assert reply.status == 403 and reply.code == "AccessDenied"
    assert (await info(api, owner, closed))["progress"] == "Closed"


async def test_reopen_message_is_localized(api: Api, owner: Person) -> None:
    still_open = await create(api, owner)
    reply = await api.call("/incident/reopen", {"incident_ids": [still_open]}, key=owner.key,
                           headers={"Accept-Language": "zh-CN"})
    assert reply.status == 400
    assert still_open in reply.message
    assert "只有" in reply.message
