"""Responses that clients of the live service decode (status page changes with linked
changes, team upsert, member info, the malformed-body 400), held against the reference
schemas, and the permission ids existing tools write into roles."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from dutyline.api import permissions
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.status_page.admin_helpers import make_incident, make_page

pytestmark = pytest.mark.anyio


async def _post(api: Api, path: str, body: dict[str, Any], key: str | None) -> httpx.Response:
    return await api.raw("POST", path, params={"app_key": key} if key else {}, json=body)


async def test_roles_take_the_reference_permission_ids(api: Api, owner: Person) -> None:
    """501 is the reference's "Templates Read": a role written with it by an existing tool
    grants template viewing here, and the catalogue lists it under that id."""
    made = check("/role/upsert", await _post(api, "/role/upsert", {
        "role_name": "On-call Manager", "permission_ids": [501, 502]}, owner.key))
    role_id = made["data"]["role_id"]
    listed = check("/role/permission/list", await _post(api, "/role/permission/list", {
        "role_ids": [role_id], "with_all": True}, owner.key))
    granted = {i["id"]: i for i in listed["data"]["items"] if i.get("is_granted")}
    assert set(granted) == {501, 502}
    assert granted[501]["permission_type"] == "read"
    assert granted[501]["description"] == "View notification templates"
    assert permissions.expand({501}) == {permissions.TEMPLATE_VIEW}
    member = await new_member(api, owner, name="Tpl", builtin=None, role_ids=[role_id])
    async with api.runtime.db.connect() as conn:
        caller = await api.runtime.authenticator.authenticate(conn, member.key)
    assert caller is not None
    assert {permissions.TEMPLATE_VIEW, permissions.TEMPLATE_MANAGE} <= caller.permissions
    # The earlier ids mean nothing now (migration 0006 renumbered stored grants).
    old = await _post(api, "/role/upsert", {"role_name": "Old", "permission_ids": [206]},
                      owner.key)
    assert old.status_code == 400 and "permission_ids" in old.json()["error"]["message"]


async def test_touched_operations_conform(api: Api, owner: Person, other_owner: Person) -> None:
    page = await make_page(api, owner)
    first = await make_incident(api, owner, page)
    check("/status-page/change/create", await _post(api, "/status-page/change/create", {
        "page_id": page.page_id, "type": "incident", "title": "Linked", "status":
        "investigating", "linked_changes": [str(first)],
        "updates": [{"description": "x"}]}, owner.key))
    check("/status-page/change/update", await _post(api, "/status-page/change/update", {
        "page_id": page.page_id, "change_id": first, "linked_changes": []}, owner.key))
    theirs = await make_incident(api, other_owner, await make_page(api, other_owner))
    refused = await _post(api, "/status-page/change/update", {
        "page_id": page.page_id, "change_id": first, "linked_changes": [str(theirs)]},
        owner.key)
    assert refused.status_code == 400
    check("/status-page/change/update", refused)
    check("/team/upsert", await _post(api, "/team/upsert", {
        "team_name": "Ghosts", "emails": ["nobody@nowhere.example"]}, owner.key))
    check("/member/info", await _post(api, "/member/info", {}, owner.key))
    # The malformed-body answers are the reference's 400 envelope.
    bad = await api.raw("POST", "/incident/list", params={"app_key": owner.key},
                        content=b'{"query":"\xff\xfe"}',
                        headers={"content-type": "application/json"})
    assert bad.status_code == 400
    check("/incident/list", bad)
