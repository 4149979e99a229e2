"""A member without an e-mail address (the Owner made at first start, before their welcome
link) is answered without one: the reference's `format: email` refuses "", and a field it
does not require is left out rather than empty."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from dutyline.api import errors
from dutyline.platform.account.service import create_account
from tests.api.test_reference_schemas import reference_validator
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def _owner_without_email(api: Api) -> Person:
    async with api.runtime.db.transaction() as conn:
        made = await create_account(conn, account_name="Fresh", owner_name="Owner",
                                    now_s=int(api.runtime.clock.now()))
    return Person(made.account_id, made.person_id, made.app_key)


def _strict(path: str, body: dict[str, Any]) -> list[str]:
    """The reference's schema of the answer, formats checked too."""
    loose = reference_validator(path, 200)
    strict = Draft202012Validator(loose.schema,
                                  format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{list(e.absolute_path)}: {e.message}" for e in strict.iter_errors(body)]


async def test_member_answers_leave_the_unknown_address_out(api: Api) -> None:
    owner = await _owner_without_email(api)
    info = await api.call("/member/info", {}, key=owner.key)
    assert info.status == 200
    assert "email" not in info.data and "phone" not in info.data
    assert info.data["member_id"] == owner.person_id
    assert _strict("/member/info", info.body) == []
    persons = await api.call("/person/infos", {"person_ids": [owner.person_id]}, key=owner.key)
    [person] = persons.data["items"]
    assert "email" not in person and person["person_id"] == owner.person_id
    assert _strict("/person/infos", persons.body) == []
    # The member list's record requires the field (no format there): it stays, empty.
    listed = await api.call("/member/list", {}, key=owner.key)
    assert [m["email"] for m in listed.data["items"]] == [""]


async def test_an_incident_names_such_a_member_without_an_address(api: Api) -> None:
    owner = await _owner_without_email(api)
    made = await api.call("/incident/create", {
        "incident_severity": "Critical", "title": "Disk full",
        "assigned_to": {"person_ids": [owner.person_id]}}, key=owner.key)
    assert made.status == 200, made.body
    info = await api.call("/incident/info", {"incident_id": made.data["incident_id"]},
                          key=owner.key)
    assert info.status == 200, info.body
    assert info.data["creator"] == {"person_id": owner.person_id, "person_name": "Owner"}
    assert [r.get("email") for r in info.data["responders"]] == [None]
    assert _strict("/incident/info", info.body) == []


async def test_the_owner_s_address_is_checked_when_given(api: Api) -> None:
    async with api.runtime.db.transaction() as conn:
        with pytest.raises(errors.InvalidParameter):
            await create_account(conn, account_name="Bad", owner_name="Owner",
                                 owner_email="not an address", now_s=0)
        made = await create_account(conn, account_name="Good", owner_name="Owner",
                                    owner_email=" Boss@Example.COM ", now_s=0)
    info = await api.call("/member/info", {}, key=made.app_key)
    assert info.data["email"] == "boss@example.com"
    assert info.data["account_email"] == "boss@example.com"
