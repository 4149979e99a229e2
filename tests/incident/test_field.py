"""/field/* through the HTTP API, and the value validator /incident/field/reset calls."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from sqlalchemy import text, update

from dutyline.api.actor import Actor
from dutyline.api.errors import InvalidParameter
from dutyline.db.tables.incident import incident
from dutyline.incident.creation import NewIncident, open_incident
from dutyline.incident.field.service import validate_value
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

OPTIONS = ["low", "medium", "high"]


async def _field(api: Api, who: Person, name: str, field_type: str, **extra: Any) -> str:
    reply = await api.call("/field/create", {"field_name": name, "field_type": field_type,
                                             **extra}, key=who.key)
    assert reply.status == 200, reply.body
    assert reply.data["field_name"] == name
    field_id: str = reply.data["field_id"]
    return field_id


async def _validate(api: Api, account_id: int, name: str, value: Any) -> Any:
    async with api.runtime.db.transaction() as conn:
        definition, normalized = await validate_value(
            conn, Actor.system(account_id, api.runtime.clock), field_name=name, value=value)
    assert definition.field_name == name
    return normalized


async def _invalid(api: Api, account_id: int, name: str, value: Any) -> str:
    with pytest.raises(InvalidParameter) as caught:
        await _validate(api, account_id, name, value)
    return str(caught.value)


async def _incident_with_fields(api: Api, who: Person, fields_json: str) -> str:
    async with api.runtime.db.transaction() as conn:
        incident_id = await open_incident(
            conn, NewIncident(account_id=who.account_id, title="Disk full", severity="Warning"),
            now_s=int(api.runtime.clock.now()))
        await conn.execute(update(incident).where(incident.c.incident_id == incident_id)
                           .values(fields=fields_json))
    return incident_id


async def test_create_info_list_round_trip(api: Api, owner: Person) -> None:
    field_id = await _field(api, owner, "impact_level", "single_select", options=OPTIONS,
                            default_value="low", display_name="Impact",
                            description="How bad")
    assert len(field_id) == 24
    info = await api.call("/field/info", {"field_id": field_id}, key=owner.key)
    assert info.status == 200
    assert info.data == {
        "field_id": field_id, "field_name": "impact_level", "display_name": "Impact",
        "description": "How bad", "field_type": "single_select", "options": OPTIONS,
        "default_value": "low", "status": "enabled", "creator_id": owner.person_id,
        "created_at": info.data["created_at"], "updated_at": info.data["created_at"],
        "value_type": "string",
    }
    by_name = await api.call("/field/info", {"field_name": "impact_level"}, key=owner.key)
    assert by_name.data == info.data
    await _field(api, owner, "customer", "text")
    listed = await api.call("/field/list", {}, key=owner.key)
    assert listed.status == 200
    assert listed.data["total"] == 2
    # By name: a stable order people can scan.
    assert [f["field_name"] for f in listed.data["items"]] == ["customer", "impact_level"]
    text = listed.data["items"][0]
    assert (text["display_name"], text["options"], text["default_value"]) == ("customer", [],
                                                                              None)
    # value_type beside field_type, which clients of the live service read: the type of each
    # value.
    await _field(api, owner, "is_vip", "checkbox")
    await _field(api, owner, "regions", "multi_select", options=["eu", "us"])
    listed = await api.call("/field/list", {}, key=owner.key)
    assert {f["field_name"]: f["value_type"] for f in listed.data["items"]} == {
        "customer": "string", "impact_level": "string", "is_vip": "bool", "regions": "string"}


@pytest.mark.parametrize("name", ["a", "_", "_x9", "Z" * 40, "snake_Case_1"])
async def test_names_that_fit_the_rule(api: Api, owner: Person, name: str) -> None:
    await _field(api, owner, name, "checkbox")


@pytest.mark.parametrize("name", ["", "9lives", "with-dash", "has space", "é", "a" * 41,
                                  "a.b", "x\n"])
async def test_names_that_break_the_rule(api: Api, owner: Person, name: str) -> None:
    reply = await api.call("/field/create", {"field_name": name, "field_type": "text"},
                           key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert "field_name" in reply.message


@pytest.mark.parametrize(("body", "field"), [
    ({"field_name": "f"}, "field_type"),
    ({"field_name": "f", "field_type": "number"}, "field_type"),
    ({"field_name": "f", "field_type": "single_select"}, "options"),
    ({"field_name": "f", "field_type": "multi_select", "options": []}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": ["a", "a"]}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": ["a", " a "]}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": ["a", "  "]}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": [""]}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": [1]}, "options"),
    ({"field_name": "f", "field_type": "text", "options": ["a"]}, "options"),
    ({"field_name": "f", "field_type": "single_select", "options": ["a"],
      "default_value": "b"}, "default_value"),
    ({"field_name": "f", "field_type": "multi_select", "options": ["a"],
      "default_value": ["a", "b"]}, "default_value"),
    ({"field_name": "f", "field_type": "checkbox", "default_value": "maybe"}, "default_value"),
    ({"field_name": "f", "field_type": "text", "default_value": 5}, "default_value"),
    ({"field_name": "f", "field_type": "text", "display_name": "x" * 129}, "display_name"),
])
async def test_create_validation_names_the_field(api: Api, owner: Person, body: dict[str, Any],
                                                 field: str) -> None:
    reply = await api.call("/field/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.message
    assert (await api.call("/field/list", {}, key=owner.key)).data["total"] == 0


async def test_names_are_unique_per_account_in_any_case(api: Api, owner: Person,
                                                        other_owner: Person) -> None:
    await _field(api, owner, "region", "text")
    for name in ["region", "REGION", "Region"]:
        dup = await api.call("/field/create", {"field_name": name, "field_type": "text"},
                             key=owner.key)
        assert (dup.status, dup.code) == (400, "InvalidParameter")
        assert "field_name" in dup.message
    await _field(api, other_owner, "region", "checkbox")  # another account: its own names


async def test_defaults_are_normalized(api: Api, owner: Person) -> None:
    multi = await _field(api, owner, "teams", "multi_select", options=["a", "b", "c"],
                         default_value="b, a")
    check = await _field(api, owner, "urgent", "checkbox", default_value="TRUE")
    m = await api.call("/field/info", {"field_id": multi}, key=owner.key)
    c = await api.call("/field/info", {"field_id": check}, key=owner.key)
    assert m.data["default_value"] == ["b", "a"]
    assert c.data["default_value"] is True


async def test_validate_value_text(api: Api, owner: Person) -> None:
    await _field(api, owner, "customer", "text")
    acct = owner.account_id
    assert await _validate(api, acct, "customer", "ACME Corp") == "ACME Corp"
    assert await _validate(api, acct, "customer", "") == ""
    assert await _validate(api, acct, "customer", None) is None
    for bad in [5, 1.5, True, ["x"], {"a": 1}, "x" * 4097]:
        assert "field_value" in await _invalid(api, acct, "customer", bad)


async def test_validate_value_single_select(api: Api, owner: Person) -> None:
    await _field(api, owner, "impact", "single_select", options=OPTIONS)
    acct = owner.account_id
    assert await _validate(api, acct, "impact", "high") == "high"
    for bad in ["HIGH", "", "critical", ["high"], 1, True]:
        assert "field_value" in await _invalid(api, acct, "impact", bad)


async def test_validate_value_multi_select(api: Api, owner: Person) -> None:
    await _field(api, owner, "regions", "multi_select", options=["eu", "us", "ap, south"])
    acct = owner.account_id
    assert await _validate(api, acct, "regions", ["us", "eu", "us"]) == ["us", "eu"]
    assert await _validate(api, acct, "regions", []) == []
    assert await _validate(api, acct, "regions", "eu") == ["eu"]
    assert await _validate(api, acct, "regions", "eu,us") == ["eu", "us"]
    assert await _validate(api, acct, "regions", "ap, south") == ["ap, south"]
    assert await _validate(api, acct, "regions", '["us", "ap, south"]') == ["us", "ap, south"]
    assert await _validate(api, acct, "regions", "") == []
    for bad in [["eu", "mars"], "mars", "eu,mars", [1], True, {"eu": 1}, "[oops", '["x"]']:
        assert "field_value" in await _invalid(api, acct, "regions", bad)


async def test_validate_value_checkbox(api: Api, owner: Person) -> None:
    await _field(api, owner, "urgent", "checkbox")
    acct = owner.account_id
    for value, expected in [(True, True), (False, False), ("true", True), ("False", False),
                            ("1", True), ("0", False), (" yes ", True)]:
        assert await _validate(api, acct, "urgent", value) is expected
    for bad in ["maybe", 2, ["true"], {}]:
        assert "field_value" in await _invalid(api, acct, "urgent", bad)


async def test_validate_value_unknown_field_names_field_name(api: Api, owner: Person,
                                                             other_owner: Person) -> None:
    await _field(api, owner, "customer", "text")
    for name in ["nope", "", "Customer"]:
        with pytest.raises(InvalidParameter) as caught:
            async with api.runtime.db.transaction() as conn:
                await validate_value(conn, Actor.system(owner.account_id, api.runtime.clock),
                                     field_name=name, value="x")
        assert "field_name" in str(caught.value)
    # Another account's field is unknown here.
    with pytest.raises(InvalidParameter):
        async with api.runtime.db.transaction() as conn:
            await validate_value(conn, Actor.system(other_owner.account_id, api.runtime.clock),
                                 field_name="customer", value="x")


async def test_update_changes_only_given_fields(api: Api, owner: Person) -> None:
    fid = await _field(api, owner, "impact", "single_select", options=OPTIONS,
                       default_value="low", description="keep me")
    upd = await api.call("/field/update", {"field_id": fid, "display_name": "Impact",
                                           "options": ["low", "severe"]}, key=owner.key)
    assert (upd.status, upd.data) == (200, {})
    info = (await api.call("/field/info", {"field_id": fid}, key=owner.key)).data
    assert (info["display_name"], info["options"], info["default_value"],
            info["description"], info["field_type"]) == ("Impact", ["low", "severe"], "low",
                                                         "keep me", "single_select")
    assert await _validate(api, owner.account_id, "impact", "severe") == "severe"
    assert "field_value" in await _invalid(api, owner.account_id, "impact", "high")

    cleared = await api.call("/field/update", {"field_id": fid, "default_value": None},
                             key=owner.key)
    assert cleared.status == 200
    assert (await api.call("/field/info", {"field_id": fid}, key=owner.key)).data[
        "default_value"] is None


async def test_update_validation(api: Api, owner: Person) -> None:
    fid = await _field(api, owner, "impact", "single_select", options=OPTIONS,
                       default_value="low")
    for body, field in [
        ({"field_id": fid, "options": ["medium"]}, "options"),  # drops the kept default
        ({"field_id": fid, "options": []}, "options"),
        ({"field_id": fid, "default_value": "nope"}, "default_value"),
        ({"field_id": "xyz"}, "field_id"),
        ({}, "field_id"),
    ]:
        reply = await api.call("/field/update", body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), body
        assert field in reply.message
    info = (await api.call("/field/info", {"field_id": fid}, key=owner.key)).data
    assert (info["options"], info["default_value"]) == (OPTIONS, "low")
    missing = await api.call("/field/update", {"field_id": "0" * 24}, key=owner.key)
    assert missing.code == "ResourceNotFound"


async def test_delete_unused_field_frees_its_name(api: Api, owner: Person) -> None:
    fid = await _field(api, owner, "region", "text")
    # An incident holding a null for the field, and one holding another field whose
    # value is this field's name, do not count as using it.
    await _incident_with_fields(api, owner, '{"region":null}')
    await _incident_with_fields(api, owner, '{"other": "region", "x": ["region"]}')
    gone = await api.call("/field/delete", {"field_id": fid}, key=owner.key)
    assert (gone.status, gone.data) == (200, {})
    assert (await api.call("/field/info", {"field_id": fid}, key=owner.key)).code \
        == "ResourceNotFound"
    assert (await api.call("/field/delete", {"field_id": fid}, key=owner.key)).code \
        == "ResourceNotFound"
    await _field(api, owner, "region", "checkbox")


@pytest.mark.parametrize("stored", ['{"region":"eu"}', '{"a": 1, "region": ["eu"]}',
                                    '{"region":false}'])
async def test_delete_field_in_use_is_refused(api: Api, owner: Person, stored: str) -> None:
    fid = await _field(api, owner, "region", "text")
    await _incident_with_fields(api, owner, stored)
    refused = await api.call("/field/delete", {"field_name": "region"}, key=owner.key)
    assert (refused.status, refused.code) == (400, "ReferenceExist")
    assert "region" in refused.message
    assert (await api.call("/field/info", {"field_id": fid}, key=owner.key)).status == 200


async def test_like_wildcards_in_names_are_literal(api: Api, owner: Person) -> None:
    """`_` is a LIKE wildcard: a value under `aXb` must not block deleting `a_b`."""
    fid = await _field(api, owner, "a_b", "text")
    await _incident_with_fields(api, owner, '{"aXb":"v"}')
    assert (await api.call("/field/delete", {"field_id": fid}, key=owner.key)).status == 200
    assert (await api.call("/field/info", {"field_id": fid}, key=owner.key)).code \
        == "ResourceNotFound"


async def test_other_accounts_incidents_do_not_block_delete(api: Api, owner: Person,
                                                            other_owner: Person) -> None:
    fid = await _field(api, owner, "region", "text")
    await _incident_with_fields(api, other_owner, '{"region":"eu"}')
    assert (await api.call("/field/delete", {"field_id": fid}, key=owner.key)).status == 200
    assert (await api.call("/field/info", {"field_id": fid}, key=owner.key)).code \
        == "ResourceNotFound"


async def test_other_account_fields_are_not_found(api: Api, owner: Person,
                                                  other_owner: Person) -> None:
    fid = await _field(api, owner, "region", "text")
    for path, body in [("/field/info", {"field_id": fid}),
                       ("/field/info", {"field_name": "region"}),
                       ("/field/update", {"field_id": fid, "display_name": "Stolen"}),
                       ("/field/delete", {"field_id": fid})]:
        reply = await api.call(path, body, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    assert (await api.call("/field/list", {}, key=other_owner.key)).data["total"] == 0
    info = (await api.call("/field/info", {"field_id": fid}, key=owner.key)).data
    assert info["display_name"] == "region"


async def test_permissions(api: Api, owner: Person) -> None:
    fid = await _field(api, owner, "region", "text")
    member = await new_member(api, owner, builtin="member")
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    for who in (member, nobody):
        assert (await api.call("/field/list", {}, key=who.key)).data["total"] == 1
        assert (await api.call("/field/info", {"field_id": fid}, key=who.key)).status == 200
        for path, body in [("/field/create", {"field_name": "x", "field_type": "text"}),
                           ("/field/update", {"field_id": fid, "display_name": "y"}),
                           ("/field/delete", {"field_id": fid})]:
            reply = await api.call(path, body, key=who.key)
            assert (reply.status, reply.code) == (403, "AccessDenied"), path
    await _field(api, admin, "by_admin", "text")
    assert (await api.call("/field/delete", {"field_id": fid}, key=admin.key)).status == 200
    listed = await api.call("/field/list", {}, key=owner.key)
    assert [f["field_name"] for f in listed.data["items"]] == ["by_admin"]


async def test_lookup_needs_an_id_or_name(api: Api, owner: Person) -> None:
    reply = await api.call("/field/info", {}, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert "field_id" in reply.message
    reply = await api.call("/field/info", {"field_name": "ghost"}, key=owner.key)
    assert reply.code == "ResourceNotFound"


async def _until_a_writer_waits(api: Api) -> None:
    """Until a transaction waits behind the one holding the lock: on SQLite in the process's
    writer queue, on PostgreSQL on a row lock."""
    db = api.runtime.db
    with anyio.fail_after(10):
        while True:
            if db.is_sqlite:
                waiting = bool(getattr(db._writer_lock()._local, "_waiters", None))
            else:
                async with db.connect() as conn:
                    waiting = bool((await conn.execute(text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND wait_event_type = 'Lock'"))).scalar_one())
            if waiting:
                return
            await asyncio.sleep(0.01)


async def test_delete_waits_for_a_value_being_set(api: Api, owner: Person) -> None:
    """A delete that starts while another transaction is setting the field's value sees
    that value once it commits, whichever reaches the database first."""
    await _field(api, owner, "region", "text")
    incident_id = await _incident_with_fields(api, owner, "{}")
    async with api.runtime.db.transaction() as conn:
        _, value = await validate_value(conn, Actor.system(owner.account_id, api.runtime.clock),
                                        field_name="region", value="eu")
        deleting = asyncio.create_task(
            api.call("/field/delete", {"field_name": "region"}, key=owner.key))
        await _until_a_writer_waits(api)  # the delete has reached the database
        await conn.execute(update(incident).where(incident.c.incident_id == incident_id)
                           .values(fields=f'{{"region":"{value}"}}'))
    refused = await deleting
    assert (refused.status, refused.code) == (400, "ReferenceExist")
    assert (await api.call("/field/info", {"field_name": "region"}, key=owner.key)).status \
        == 200
