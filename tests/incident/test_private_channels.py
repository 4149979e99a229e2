"""Incidents and alerts of a private channel are as hidden as the channel: a member outside its
teams does not find them in lists (totals included), and reading or writing one by id answers
exactly as an unknown id would, with nothing changed. Members of the owning team, admins and
the owner see and act on them; public channels and channel-less incidents are unaffected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.incident import alert, incident, incident_event, incident_feed
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, Reply
from tests.incident.conftest import Wired, event, push, wire
from tests.incident.lifecycle_support import create, now, seed_field

pytestmark = pytest.mark.anyio

UNKNOWN = "0123456789abcdef01234567"  # a well-formed incident id that does not exist


@dataclass
class World:
    owner: Person
    admin: Person  # built-in admin, in no team
    insider: Person  # responder in the private channel's owning team
    helper: Person  # responder in a team that only manages the private channel
    outsider: Person  # responder (incident_manage too) in no team
    private: Wired
    public: Wired


async def _responder(api: Api, owner: Person, name: str) -> Person:
    """A member who may read and manage incidents, but is no admin."""
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    ids = [p["id"] for p in perms if p["permission_name"] in ("incident_manage", "channel_view")]
    role = await api.call("/role/upsert", {"role_name": f"Responders {name}",
                                           "permission_ids": ids}, key=owner.key)
    assert role.status == 200, role.body
    return await new_member(api, owner, name=name, builtin=None,
                            role_ids=[role.data["role_id"]])


async def _team(api: Api, owner: Person, name: str, people: list[Person]) -> int:
    reply = await api.call("/team/upsert", {"team_name": name,
                                            "person_ids": [p.person_id for p in people]},
                           key=owner.key)
    assert reply.status == 200, reply.body
    return int(reply.data["team_id"])


@pytest.fixture
async def world(api: Api, owner: Person) -> World:
    insider = await _responder(api, owner, "Ines")
    helper = await _responder(api, owner, "Hugo")
    outsider = await _responder(api, owner, "Otto")
    admin = await new_member(api, owner, name="Ada", builtin="admin")
    owning = await _team(api, owner, "Payments team", [insider])
    managing = await _team(api, owner, "Helpers", [helper])
    private = await wire(api, owner, name="Secret", team_id=owning,
                         managing_team_ids=[managing], is_private=True)
    public = await wire(api, owner, name="Open", team_id=owning)
    return World(owner, admin, insider, helper, outsider, private, public)


def window(api: Api, **extra: Any) -> dict[str, Any]:
    t = now(api)
    return {"start_time": t - 3600, "end_time": t + 3600, **extra}


def assert_like_unknown(hidden: Reply, unknown: Reply, hidden_id: str) -> None:
    """The same answer as for UNKNOWN: status, code, and message with the id swapped."""
    assert hidden.status == unknown.status == 400, (hidden.body, unknown.body)
    assert hidden.code == unknown.code == "ResourceNotFound"
    assert hidden.message.replace(hidden_id, UNKNOWN) == unknown.message


async def _listed(api: Api, who: Person, **filters: Any) -> tuple[set[str], int]:
    reply = await api.call("/incident/list", window(api, **filters), key=who.key)
    assert reply.status == 200, reply.body
    return {i["incident_id"] for i in reply.data["items"]}, int(reply.data["total"])


async def test_reads_leave_out_hidden_incidents(api: Api, world: World) -> None:
    w = world
    hidden = await create(api, w.owner, channel_id=w.private.channel_id, title="secret down")
    shown = await create(api, w.owner, channel_id=w.public.channel_id, title="open down")
    loose = await create(api, w.owner, title="no channel")  # channel_id 0

    assert await _listed(api, w.outsider) == ({shown, loose}, 2)
    assert await _listed(api, w.outsider, channel_ids=[w.private.channel_id]) == (set(), 0)
    assert await _listed(api, w.outsider, incident_ids=[hidden]) == (set(), 0)
    assert await _listed(api, w.outsider, is_my_channel=False, progress="Triggered") == (
        {shown, loose}, 2)
    by_ids = await api.call("/incident/list-by-ids",
                            {"incident_ids": [hidden, shown, loose]}, key=w.outsider.key)
    assert {i["incident_id"] for i in by_ids.data["items"]} == {shown, loose}
    assert by_ids.data["total"] == 2

    for path, body in [("/incident/info", {}), ("/incident/feed", {}),
                       ("/incident/alert/list", {})]:
        refused = await api.call(path, {"incident_id": hidden, **body}, key=w.outsider.key)
        unknown = await api.call(path, {"incident_id": UNKNOWN, **body}, key=w.outsider.key)
        assert_like_unknown(refused, unknown, hidden)
        for ok in (shown, loose):
            reply = await api.call(path, {"incident_id": ok, **body}, key=w.outsider.key)
            assert reply.status == 200, (path, reply.body)

    for who in (w.owner, w.admin, w.insider, w.helper):
        assert await _listed(api, who) == ({hidden, shown, loose}, 3)
        for path in ("/incident/info", "/incident/feed", "/incident/alert/list"):
            reply = await api.call(path, {"incident_id": hidden}, key=who.key)
            assert reply.status == 200, (path, reply.body)
        got = await api.call("/incident/list-by-ids", {"incident_ids": [hidden]}, key=who.key)
        assert [i["incident_id"] for i in got.data["items"]] == [hidden]


async def test_alerts_of_hidden_channel_are_left_out(api: Api, world: World) -> None:
    w = world
    assert (await push(api, w.private.key, event("secret cpu", key="s1"))).status == 200
    assert (await push(api, w.private.key, event("secret cpu", "Ok", key="s1"))).status == 200
    assert (await push(api, w.public.key, event("open cpu", key="o1"))).status == 200

    async def alerts(who: Person, **filters: Any) -> tuple[dict[str, dict[str, Any]], int]:
        reply = await api.call("/alert/list", window(api, **filters), key=who.key)
        assert reply.status == 200, reply.body
        return {a["alert_key"]: a for a in reply.data["items"]}, int(reply.data["total"])

    everything, total = await alerts(w.owner)
    assert (set(everything), total) == ({"s1", "o1"}, 2)
    secret_alert = everything["s1"]["alert_id"]
    secret_incident = everything["s1"]["incident"]["incident_id"]

    seen, total = await alerts(w.outsider)
    assert (set(seen), total) == ({"o1"}, 1)
    assert await alerts(w.outsider, channel_ids=[w.private.channel_id]) == ({}, 0)
    assert await alerts(w.outsider, alert_ids=[secret_alert]) == ({}, 0)
    for path in ("/alert/info", "/alert/event/list"):
        refused = await api.call(path, {"alert_id": secret_alert}, key=w.outsider.key)
        unknown = await api.call(path, {"alert_id": UNKNOWN}, key=w.outsider.key)
        assert_like_unknown(refused, unknown, secret_alert)
        public_alert = seen["o1"]["alert_id"]
        assert (await api.call(path, {"alert_id": public_alert}, key=w.outsider.key)).status \
            == 200
    # The incident ingestion opened is hidden with its channel.
    assert await _listed(api, w.outsider) == ({seen["o1"]["incident"]["incident_id"]}, 1)

    for who in (w.admin, w.insider, w.helper):
        found, total = await alerts(who)
        assert (set(found), total) == ({"s1", "o1"}, 2)
        info = await api.call("/alert/info", {"alert_id": secret_alert}, key=who.key)
        assert info.data["incident"]["incident_id"] == secret_incident
        events = await api.call("/alert/event/list", {"alert_id": secret_alert}, key=who.key)
        assert events.data["total"] == 2


async def test_alerts_merged_out_of_a_hidden_channel_stay_hidden(api: Api, world: World) -> None:
    """An insider merges the private incident into a public one: its alert moves, but is still
    the private channel's alert, so the outsider sees the public incident without it."""
    w = world
    await push(api, w.private.key, event("secret cpu", key="s1"))
    await push(api, w.public.key, event("open cpu", key="o1"))
    listed = (await api.call("/alert/list", window(api), key=w.owner.key)).data["items"]
    by_key = {a["alert_key"]: a for a in listed}
    source = by_key["s1"]["incident"]["incident_id"]
    target = by_key["o1"]["incident"]["incident_id"]
    merged = await api.call("/incident/merge", {"target_incident_id": target,
                                                "source_incident_ids": [source]},
                            key=w.insider.key)
    assert merged.status == 200, merged.body

    async def alert_keys(who: Person) -> tuple[list[str], int]:
        reply = await api.call("/incident/alert/list", {"incident_id": target}, key=who.key)
        assert reply.status == 200, reply.body
        return sorted(a["alert_key"] for a in reply.data["items"]), reply.data["total"]

    assert await alert_keys(w.insider) == (["o1", "s1"], 2)
    assert await alert_keys(w.outsider) == (["o1"], 1)
    # The merged-away source incident (Closed, private) stays hidden too.
    refused = await api.call("/alert/info", {"alert_id": by_key["s1"]["alert_id"]},
                             key=w.outsider.key)
    assert refused.code == "ResourceNotFound"


async def _snapshot(api: Api, *incident_ids: str) -> list[Any]:
    """Everything a write could leave behind on these incidents."""
    async with api.runtime.db.transaction(write=False) as conn:
        found: list[Any] = []
        for table, order in ((incident, incident.c.incident_id), (alert, alert.c.alert_id),
                             (incident_feed, incident_feed.c.id),
                             (incident_event, incident_event.c.id)):
            rows = await conn.execute(select(table).where(
                table.c.incident_id.in_(incident_ids)).order_by(order))
            found.append([tuple(r) for r in rows])
        return found


Setup = Callable[[Api, Person, str], Awaitable[None]]


async def _as_is(api: Api, owner: Person, incident_id: str) -> None:
    return None


def _then(path: str, **body: Any) -> Setup:
    async def setup(api: Api, owner: Person, incident_id: str) -> None:
        reply = await api.call(path, {"incident_ids": [incident_id], **body}, key=owner.key)
        assert reply.status == 200, reply.body
    return setup


async def _with_field(api: Api, owner: Person, incident_id: str) -> None:
    await seed_field(api, owner, "service", "text")


# name -> (state the owner brings the incident to, path, body for an incident id and the
# public incident beside it)
Body = Callable[[str, str, Person], dict[str, Any]]
WRITES: dict[str, tuple[Setup, str, Body]] = {
    "ack": (_as_is, "/incident/ack", lambda i, _, __: {"incident_ids": [i]}),
    "unack": (_then("/incident/ack"), "/incident/unack", lambda i, _, __: {"incident_ids": [i]}),
    "resolve": (_as_is, "/incident/resolve",
                lambda i, _, __: {"incident_ids": [i], "resolution": "fixed"}),
    "reopen": (_then("/incident/resolve"), "/incident/reopen",
               lambda i, _, __: {"incident_ids": [i], "reason": "again"}),
    "snooze": (_as_is, "/incident/snooze",
               lambda i, _, __: {"incident_ids": [i], "minutes": 30}),
    "wake": (_then("/incident/snooze", minutes=30), "/incident/wake",
             lambda i, _, __: {"incident_ids": [i]}),
    "reset": (_as_is, "/incident/reset",
              lambda i, _, __: {"incident_id": i, "title": "renamed", "impact": "all"}),
    "remove": (_as_is, "/incident/remove", lambda i, _, __: {"incident_ids": [i]}),
    "comment": (_as_is, "/incident/comment",
                lambda i, _, __: {"incident_ids": [i], "comment": "looking"}),
    "assign": (_as_is, "/incident/assign",
               lambda i, _, who: {"incident_ids": [i],
                                  "assigned_to": {"person_ids": [who.person_id]}}),
    "merge into it": (_as_is, "/incident/merge",
                      lambda i, other, _: {"target_incident_id": i,
                                           "source_incident_ids": [other]}),
    "merge it away": (_as_is, "/incident/merge",
                      lambda i, other, _: {"target_incident_id": other,
                                           "source_incident_ids": [i]}),
    "field reset": (_with_field, "/incident/field/reset",
                    lambda i, _, __: {"incident_id": i, "field_name": "service",
                                      "field_value": "checkout"}),
}


@pytest.mark.parametrize("name", list(WRITES))
async def test_writes_on_hidden_incidents_are_not_found(
    api: Api, world: World, name: str
) -> None:
    w = world
    setup, path, body = WRITES[name]
    hidden = await create(api, w.owner, channel_id=w.private.channel_id, title="secret down")
    shown = await create(api, w.owner, channel_id=w.public.channel_id, title="open down")
    await setup(api, w.owner, hidden)
    before = await _snapshot(api, hidden, shown)

    refused = await api.call(path, body(hidden, shown, w.outsider), key=w.outsider.key)
    unknown = await api.call(path, body(UNKNOWN, shown, w.outsider), key=w.outsider.key)
    assert_like_unknown(refused, unknown, hidden)
    assert await _snapshot(api, hidden, shown) == before

    done = await api.call(path, body(hidden, shown, w.insider), key=w.insider.key)
    assert done.status == 200, done.body
    assert await _snapshot(api, hidden, shown) != before


async def test_batch_with_a_hidden_id_changes_nothing(api: Api, world: World) -> None:
    """All or nothing, as with an unknown id: the hidden id is named, the visible one stays."""
    w = world
    hidden = await create(api, w.owner, channel_id=w.private.channel_id, title="secret down")
    shown = await create(api, w.owner, channel_id=w.public.channel_id, title="open down")
    before = await _snapshot(api, hidden, shown)
    for path, extra in [("/incident/ack", {}), ("/incident/resolve", {}),
                        ("/incident/comment", {"comment": "x"})]:
        refused = await api.call(path, {"incident_ids": [shown, hidden], **extra},
                                 key=w.outsider.key)
        unknown = await api.call(path, {"incident_ids": [shown, UNKNOWN], **extra},
                                 key=w.outsider.key)
        assert_like_unknown(refused, unknown, hidden)
        assert shown not in refused.message
    assert await _snapshot(api, hidden, shown) == before
    reply = await api.call("/incident/ack", {"incident_ids": [shown, hidden]}, key=w.admin.key)
    assert reply.status == 200, reply.body
    for who in (w.owner, w.insider):
        got = await api.call("/incident/info", {"incident_id": hidden}, key=who.key)
        assert got.data["progress"] == "Processing"


async def test_owner_and_admin_act_on_hidden_incidents(api: Api, world: World) -> None:
    w = world
    for who in (w.owner, w.admin, w.helper):
        hidden = await create(api, w.owner, channel_id=w.private.channel_id)
        reply = await api.call("/incident/resolve", {"incident_ids": [hidden]}, key=who.key)
        assert reply.status == 200, reply.body
        got = await api.call("/incident/info", {"incident_id": hidden}, key=w.insider.key)
        assert got.data["progress"] == "Closed"


async def test_channel_less_and_public_incidents_are_for_everyone(
    api: Api, world: World
) -> None:
    w = world
    plain = await new_member(api, w.owner, name="Reader")  # built-in member: reads only
    loose = await create(api, w.owner, title="no channel")
    shown = await create(api, w.owner, channel_id=w.public.channel_id, title="open down")
    for who in (plain, w.outsider, w.insider):
        assert await _listed(api, who) == ({loose, shown}, 2)
    for incident_id in (loose, shown):
        reply = await api.call("/incident/ack", {"incident_ids": [incident_id]},
                               key=w.outsider.key)
        assert reply.status == 200, reply.body
    got = await api.call("/incident/list-by-ids", {"incident_ids": [loose, shown]},
                         key=plain.key)
    assert {i["progress"] for i in got.data["items"]} == {"Processing"}


async def test_hidden_private_channel_cannot_take_new_incidents(
    api: Api, world: World
) -> None:
    """Creating in a private channel one cannot see answers as for an unknown channel."""
    w = world
    refused = await api.call("/incident/create", {
        "incident_severity": "Info", "title": "sneaky", "channel_id": w.private.channel_id,
    }, key=w.outsider.key)
    unknown = await api.call("/incident/create", {
        "incident_severity": "Info", "title": "sneaky", "channel_id": 777,
    }, key=w.outsider.key)
    assert (refused.status, refused.code) == (unknown.status, unknown.code) == (
        400, "ResourceNotFound")
    assert refused.message.replace(str(w.private.channel_id), "777") == unknown.message
    assert await _listed(api, w.owner) == (set(), 0)
    made = await create(api, w.insider, channel_id=w.private.channel_id)
    assert await _listed(api, w.insider) == ({made}, 1)
