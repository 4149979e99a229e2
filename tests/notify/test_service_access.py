"""The template services check and audit whoever calls them, not only the API: viewing
templates does not let a member delete one (and nothing changes), and a permitted delete is
one audit row naming the template."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import TEMPLATE_MANAGE, TEMPLATE_VIEW
from dutyline.db.tables.platform import audit_log
from dutyline.notify.template import service as templates
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def member(owner: Person, api: Api, *permissions: str) -> Actor:
    return Actor(account_id=owner.account_id, person_id=owner.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id,
                                    audit_log.c.credential == "session")))


async def test_deleting_a_template_needs_management_and_is_audited_by_the_service(
        api: Api, owner: Person) -> None:
    made = await api.call("/template/create", {"template_name": "Prod", "sms": "{{.Title}}"},
                          key=owner.key)
    template_id = str(made.data["template_id"])
    runtime = api.runtime

    viewer = member(owner, api, TEMPLATE_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await templates.delete_template(conn, viewer, template_id=template_id)
        assert await runtime.audit.flush(conn, viewer) == 0
    kept = await api.call("/template/info", {"template_id": template_id}, key=owner.key)
    assert kept.status == 200 and kept.data["status"] == "enabled"

    manager = member(owner, api, TEMPLATE_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        await templates.delete_template(conn, manager, template_id=template_id.upper())
        assert await runtime.audit.flush(conn, manager) == 1
    gone = await api.call("/template/info", {"template_id": template_id}, key=owner.key)
    assert gone.code == "ResourceNotFound"
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.member_id, row.is_write) == (
        "template.delete", owner.person_id, True)
    assert row.target_ids == f'["{template_id}"]'
