"""Enabling, disabling, editing and deleting a role follow the rule of granting and revoking
it: whoever does it holds every permission the role grants."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.platform.test_role_grants import (
    ACCOUNT_MANAGE_ID,
    INCIDENT_MANAGE_ID,
    custom_role,
    ok,
)

pytestmark = pytest.mark.anyio


async def _status(api: Api, owner: Person, role_id: int) -> str:
    return str((await ok(api, "/role/info", {"role_id": role_id}, owner))["status"])


async def test_a_lesser_member_cannot_re_enable_a_role_to_rise(api: Api,
                                                               owner: Person) -> None:
    """The issue's case: a member held a disabled role granting incident_manage and
    enabled it again."""
    managers = await custom_role(api, owner, "Managers", [ACCOUNT_MANAGE_ID])
    responders = await custom_role(api, owner, "Responders",
                                   [ACCOUNT_MANAGE_ID, INCIDENT_MANAGE_ID])
    manager = await new_member(api, owner, name="Manager", builtin=None,
                               role_ids=[managers, responders])
    await ok(api, "/role/disable", {"role_id": responders}, owner)
    reply = await api.call("/role/enable", {"role_id": responders}, key=manager.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    assert "incident_manage" in reply.message
    assert await _status(api, owner, responders) == "disabled"


async def test_a_lesser_member_cannot_disable_delete_or_edit_a_role_beyond_them(
        api: Api, owner: Person) -> None:
    managers = await custom_role(api, owner, "Managers", [ACCOUNT_MANAGE_ID])
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managers])
    beyond = await custom_role(api, owner, "Responders", [INCIDENT_MANAGE_ID])
    for path in ("/role/disable", "/role/delete"):
        reply = await api.call(path, {"role_id": beyond}, key=manager.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    # Taking incident_manage out of it is revoking it from its holders.
    reply = await api.call("/role/upsert", {"role_id": beyond, "role_name": "Responders",
                                            "permission_ids": []}, key=manager.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    info = await ok(api, "/role/info", {"role_id": beyond}, owner)
    assert (info["status"], info["permission_ids"]) == ("enabled", [INCIDENT_MANAGE_ID])


async def test_roles_within_one_s_rights_are_one_s_to_manage(api: Api, owner: Person) -> None:
    managers = await custom_role(api, owner, "Managers",
                                 [ACCOUNT_MANAGE_ID, INCIDENT_MANAGE_ID])
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managers])
    within = await custom_role(api, owner, "Responders", [INCIDENT_MANAGE_ID])
    await ok(api, "/role/disable", {"role_id": within}, manager)
    assert await _status(api, owner, within) == "disabled"
    await ok(api, "/role/enable", {"role_id": within}, manager)
    await ok(api, "/role/upsert", {"role_id": within, "role_name": "Incident responders"},
             manager)
    await ok(api, "/role/delete", {"role_id": within}, manager)
    # The Owner and Admins manage any custom role.
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    await ok(api, "/role/disable", {"role_id": managers}, admin)
    await ok(api, "/role/enable", {"role_id": managers}, owner)
    spare = await custom_role(api, owner, "Spare", [ACCOUNT_MANAGE_ID, INCIDENT_MANAGE_ID])
    await ok(api, "/role/delete", {"role_id": spare}, admin)
