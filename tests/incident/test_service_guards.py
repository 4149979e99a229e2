"""Custom fields and incident reads check whoever calls them, not only the API: called
directly (as the console or a job would) without the permission they refuse; a permitted
write notes one audit entry that the caller's flush logs. An incident is read through one
guarded function per read, whoever reads it (a template preview, an automation, a job): there
is no unguarded twin, and the system path is the system actor."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE, CHANNEL_VIEW, TEMPLATE_VIEW
from dutyline.db.tables.incident import custom_field
from dutyline.db.tables.platform import audit_log
from dutyline.incident.field import service as fields
from dutyline.incident.service import query
from dutyline.notify.template import service as templates
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def acting(api: Api, person: Person, *permissions: str) -> Actor:
    return Actor(account_id=person.account_id, person_id=person.person_id,
                 clock=api.runtime.clock, permissions=frozenset(permissions),
                 credential="session")


async def field_count(api: Api, account_id: int) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(custom_field).where(
            custom_field.c.account_id == account_id))).scalar_one())


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def test_field_create_refuses_without_account_manage_and_audits_with_it(
        api: Api, owner: Person) -> None:
    runtime = api.runtime
    viewer = acting(api, owner, CHANNEL_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await fields.create_field(conn, viewer, field_name="region", field_type="text")
        assert await runtime.audit.flush(conn, viewer) == 0
    assert await field_count(api, owner.account_id) == 0

    manager = acting(api, owner, ACCOUNT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        created = await fields.create_field(conn, manager, field_name="region",
                                            field_type="text")
        assert await runtime.audit.flush(conn, manager) == 1
    assert await field_count(api, owner.account_id) == 1
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.credential, row.member_id) == (
        "field.create", "session", owner.person_id)
    assert row.target_ids == f'["{created.field_id}"]'


async def test_viewing_an_incident_needs_a_view_permission_whoever_reads_it(
        api: Api, owner: Person) -> None:
    made = await api.call("/incident/create", {"title": "disk full",
                                               "incident_severity": "Critical"},
                          key=owner.key)
    incident_id = made.data["incident_id"]
    previewer = acting(api, owner, TEMPLATE_VIEW)
    async with api.runtime.db.connect() as conn:
        with pytest.raises(errors.AccessDenied):
            await query.incident_info(conn, previewer, incident_id=incident_id,
                                      deps=api.runtime.deps)
        # A template preview of a real incident reads it through the same guarded read.
        with pytest.raises(errors.AccessDenied):
            await templates.preview(conn, previewer, channel="sms", content="{{.Title}}",
                                    incident_id=incident_id, deps=api.runtime.deps)
        sample = await templates.preview(conn, previewer, channel="sms", content="{{.Title}}",
                                         incident_id=None, deps=api.runtime.deps)
        assert sample.success
        seen = await query.incident_info(conn, acting(api, owner, CHANNEL_VIEW),
                                         incident_id=incident_id, deps=api.runtime.deps)
        assert seen.incident_id == incident_id
        system = Actor.system(owner.account_id, api.runtime.clock)
        found = await query.incident_info(conn, system, incident_id=incident_id,
                                          deps=api.runtime.deps)
        assert found.title == "disk full"
    assert not hasattr(query, "find_incident")
