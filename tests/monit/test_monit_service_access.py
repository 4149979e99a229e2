"""The monit services check the permission and note the audit entry themselves, so a caller
other than the API (the console, a job) is refused or audited exactly as an app key is."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import ALERT_RULE_MANAGE, INCIDENT_MANAGE
from dutyline.db.tables.platform import audit_log
from dutyline.monit import repository, service
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.monit.support import channel, create_rule, datasource, rule_body

pytestmark = pytest.mark.anyio


def person(owner: Person, api: Api, *permissions: str) -> Actor:
    """The owner's person signed in to the console, holding only `permissions`."""
    return Actor(account_id=owner.account_id, person_id=owner.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), person_name="Console user",
                 credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def rule_exists(api: Api, owner: Person, rule_id: int) -> bool:
    async with api.runtime.db.connect() as conn:
        return await repository.get_rule(conn, owner.account_id, rule_id) is not None


async def test_deleting_a_rule_directly_takes_the_permission_and_is_audited_once(
        api: Api, owner: Person) -> None:
    ds_id = await datasource(api, owner, "http://127.0.0.1:9")
    rule_id = await create_rule(api, owner, rule_body(ds_id, await channel(api, owner)))
    logged = len(await audit_rows(api, owner.account_id))
    runtime = api.runtime

    refused = person(owner, api, INCIDENT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await service.delete_rule(conn, refused, rule_id=rule_id)
    assert refused.audit_entries == []
    assert await rule_exists(api, owner, rule_id)

    allowed = person(owner, api, ALERT_RULE_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        # One rule's delete runs the batch delete inside it: still one entry, its own.
        await service.delete_rule(conn, allowed, rule_id=rule_id)
        assert await runtime.audit.flush(conn, allowed, request_id="console-1") == 1
    assert not await rule_exists(api, owner, rule_id)
    rows = await audit_rows(api, owner.account_id)
    assert len(rows) == logged + 1
    last = rows[-1]
    assert (last.operation, last.credential, last.member_id) == (
        "monit.rule.delete", "session", owner.person_id)
    assert last.target_ids == f'["{rule_id}"]'
    assert last.request_id == "console-1" and last.is_write
