"""POST /incident/field/reset: the field must be defined on the account, the value must fit
its definition; stored in the incident's fields, with an i_r_field feed entry and an
`updated` event."""

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
    seed_field,
)

pytestmark = pytest.mark.anyio


async def _fields(api: Api, who: Person) -> None:
    await seed_field(api, who, "service", "text")
    await seed_field(api, who, "region", "single_select", ["eu", "us"])
    await seed_field(api, who, "teams", "multi_select", ["db", "web", "net"])
    await seed_field(api, who, "customer_facing", "checkbox")


async def test_field_values_of_every_type(api: Api, owner: Person) -> None:
    await _fields(api, owner)
    incident_id = await create(api, owner)
    for name, value, stored in [
        ("service", "checkout", "checkout"),
        ("region", "eu", "eu"),
        ("teams", ["web", "db", "web"], ["web", "db"]),
        ("customer_facing", True, True),
        ("customer_facing", "false", False),
    ]:
        reply = await api.call("/incident/field/reset", {
            "incident_id": incident_id, "field_name": name, "field_value": value},
            key=owner.key)
        assert reply.status == 200, (name, reply.body)
        assert reply.data == {}
        assert (await info(api, owner, incident_id))["fields"][name] == stored
    got = await info(api, owner, incident_id)
    assert got["fields"] == {"service": "checkout", "region": "eu", "teams": ["web", "db"],
                             "customer_facing": False}
    items = [i for i in await feed_items(api, owner, incident_id) if i["type"] == "i_r_field"]
    assert len(items) == 5
    assert items[0]["detail"] == {"field_name": "service", "to": "checkout"}
    assert items[0]["creator_id"] == owner.person_id
    events = await events_of(api, incident_id)
    assert [e["kind"] for e in events][1:] == ["updated"] * 5
    assert events[1]["payload"]["fields"] == ["fields.service"]

    # null clears the value; a Closed incident's fields can still be filled in.
    await api.call("/incident/resolve", {"incident_ids": [incident_id]}, key=owner.key)
    reply = await api.call("/incident/field/reset", {
        "incident_id": incident_id, "field_name": "service", "field_value": None},
        key=owner.key)
    assert reply.status == 200
    reply = await api.call("/incident/field/reset", {
        "incident_id": incident_id, "field_name": "region", "field_value": "us"},
        key=owner.key)
    assert reply.status == 200
    fields = (await info(api, owner, incident_id))["fields"]
    assert "service" not in fields and fields["region"] == "us"


async def test_unknown_field_or_bad_value_changes_nothing(api: Api, owner: Person,
                                                          other_owner: Person) -> None:
    await _fields(api, owner)
    await seed_field(api, other_owner, "theirs", "text")
    incident_id = await create(api, owner)
    before = await info(api, owner, incident_id)
    events_before = await event_total(api)
    for name, value, named in [
        ("nope", "x", "field_name"),
        ("theirs", "x", "field_name"),  # defined on another account only
        ("region", "mars", "field_value"),
        ("region", ["eu"], "field_value"),
        ("teams", ["db", "ops"], "field_value"),
        ("customer_facing", "maybe", "field_value"),
        ("service", 42, "field_value"),
        ("service", {"a": 1}, "field_value"),
    ]:
        reply = await api.call("/incident/field/reset", {
            "incident_id": incident_id, "field_name": name, "field_value": value},
            key=owner.key)
        assert_invalid(reply, "InvalidParameter", named)
    for body, named in [
        ({"field_name": "service", "field_value": "x"}, "incident_id"),
        ({"incident_id": incident_id, "field_value": "x"}, "field_name"),
        ({"incident_id": incident_id, "field_name": "x" * 41}, "field_name"),
        ({"incident_id": "12", "field_name": "service"}, "incident_id"),
    ]:
        assert_invalid(await api.call("/incident/field/reset", body, key=owner.key),
                       "InvalidParameter", named)
    assert await info(api, owner, incident_id) == before
    assert await event_total(api) == events_before


async def test_field_reset_of_foreign_or_unknown_incident(api: Api, owner: Person,
                                                         other_owner: Person) -> None:
    await _fields(api, owner)
    theirs = await create(api, other_owner)
    for incident_id in (theirs, "cd" * 12):
        reply = await api.call("/incident/field/reset", {
            "incident_id": incident_id, "field_name": "service", "field_value": "x"},
            key=owner.key)
        assert_invalid(reply, "ResourceNotFound", incident_id)
    assert (await info(api, other_owner, theirs))["fields"] == {}


async def test_field_reset_needs_incident_manage(api: Api, owner: Person) -> None:
    await _fields(api, owner)
    incident_id = await create(api, owner)
    viewer = await new_member(api, owner, name="Viewer", builtin="member")
    reply = await api.call("/incident/field/reset", {
        "incident_id": incident_id, "field_name": "service", "field_value": "x"},
        key=viewer.key)
    assert reply.status == 403 and reply.code == "AccessDenied"
    assert (await info(api, owner, incident_id))["fields"] == {}
