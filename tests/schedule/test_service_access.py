"""The schedule services check and audit whoever calls them, not only the API: deleting
needs schedule management (viewing is not enough, and nothing is deleted), a permitted
delete is one audit row naming the schedules, and the calendar feed's audit row names the
member, never the secret URL the service returns."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import SCHEDULE_MANAGE, SCHEDULE_VIEW
from dutyline.db.tables.platform import audit_log
from dutyline.schedule import feed, service
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.schedule.helpers import ok

pytestmark = pytest.mark.anyio


def member(owner: Person, api: Api, *permissions: str) -> Actor:
    return Actor(account_id=owner.account_id, person_id=owner.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id,
                                    audit_log.c.credential == "session")
            .order_by(audit_log.c.id)))


async def test_deleting_a_schedule_needs_management_and_is_audited_by_the_service(
        api: Api, owner: Person) -> None:
    schedule_id = int((await ok(api, "/schedule/create", {"schedule_name": "Primary"},
                                owner.key))["schedule_id"])
    runtime = api.runtime

    viewer = member(owner, api, SCHEDULE_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await service.delete_schedules(conn, viewer, schedule_ids=[schedule_id])
        assert await runtime.audit.flush(conn, viewer) == 0
    still = await api.call("/schedule/info", {"schedule_id": schedule_id}, key=owner.key)
    assert still.status == 200, still.body

    manager = member(owner, api, SCHEDULE_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        assert await service.delete_schedules(
            conn, manager, schedule_ids=[schedule_id]) == [schedule_id]
        assert await runtime.audit.flush(conn, manager) == 1
    gone = await api.call("/schedule/info", {"schedule_id": schedule_id}, key=owner.key)
    assert gone.code == "ResourceNotFound"
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.member_id, row.is_write) == (
        "schedule.delete", owner.person_id, True)
    assert row.target_ids == f'["{schedule_id}"]'


async def test_the_feed_s_audit_row_names_the_member_not_the_secret_url(
        api: Api, owner: Person) -> None:
    runtime = api.runtime
    anyone = member(owner, api)  # any member may manage their own feed
    async with runtime.db.transaction(write=True) as conn:
        url, _ = await feed.create_feed(conn, anyone, deps=runtime.deps)
        await feed.revoke_feed(conn, anyone)
        assert await runtime.audit.flush(conn, anyone) == 1
    (row,) = await audit_rows(api, owner.account_id)
    # One transaction, one row: named after its first write, with every write's targets.
    assert (row.operation, row.target_ids) == ("schedule.feed.create", f'["{owner.person_id}"]')
    assert url.rsplit("/", 1)[-1].removesuffix(".ics") not in row.target_ids + row.body
