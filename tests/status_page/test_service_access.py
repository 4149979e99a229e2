"""The status page services check and audit whoever calls them, not only the API: a member
without the permission is refused before anything changes, and a permitted one's write is
one audit row, named after the operation, with the page as its target and never the login
token the update returns."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE, STATUS_PAGE_MANAGE
from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.status_page import status_page
from dutyline.status_page.page import service as pages
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.status_page.admin_helpers import make_page

pytestmark = pytest.mark.anyio


def member(owner: Person, api: Api, *permissions: str) -> Actor:
    return Actor(account_id=owner.account_id, person_id=owner.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def page_row(api: Api, page_id: int) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(
            select(status_page).where(status_page.c.page_id == page_id))).one()


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id,
                                    audit_log.c.credential == "session")))


async def test_rotating_a_login_token_needs_page_management_and_audits_the_page_only(
        api: Api, owner: Person) -> None:
    page = await make_page(api, owner, components=0, page_type="internal")
    before = await page_row(api, page.page_id)
    runtime = api.runtime

    events_only = member(owner, api, STATUS_PAGE_EVENT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await pages.update_page(conn, events_only, page_id=page.page_id,
                                    page_name="Renamed", rotate_access_token=True)
        assert await runtime.audit.flush(conn, events_only) == 0
    after_refusal = await page_row(api, page.page_id)
    assert (after_refusal.page_name, after_refusal.access_token_hash) == (
        before.page_name, before.access_token_hash)

    manager = member(owner, api, STATUS_PAGE_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        token = await pages.update_page(conn, manager, page_id=page.page_id,
                                        page_name="Renamed", rotate_access_token=True)
        assert await runtime.audit.flush(conn, manager, request_id="console-1") == 1
    assert token and (await page_row(api, page.page_id)).page_name == "Renamed"
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.member_id, row.request_id) == (
        "status-page.update", owner.person_id, "console-1")
    assert row.target_ids == f'["{page.page_id}"]'
    assert token not in row.target_ids
    assert row.is_write and not row.is_dangerous
