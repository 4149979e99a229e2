"""Escalation rule services check channel management and note the audit entry themselves:
called here directly, as the console or a job would, not through HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW
from dutyline.db.tables.platform import audit_log
from dutyline.dispatch import service as rules
from tests.dispatch.support import create_rule, layer, make_channel, rule_body
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def member_holding(api: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def last_audit_row(api: Api, account_id: int) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id.desc()).limit(1))).first()


async def status_of(api: Api, who: Person, channel_id: int, rule_id: str) -> str:
    info = await api.call("/channel/escalate/rule/info",
                          {"channel_id": channel_id, "rule_id": rule_id}, key=who.key)
    return str(info.data["status"])


async def test_a_rule_disabled_directly_is_refused_without_management_and_audited_with_it(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])]))
    viewer = member_holding(api, owner, CHANNEL_VIEW)
    async with api.runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await rules.disable_rule(conn, viewer, channel_id=channel_id, rule_id=rule_id)
    assert viewer.audit_entries == []
    assert await status_of(api, owner, channel_id, rule_id) == "enabled"

    manager = member_holding(api, owner, CHANNEL_MANAGE)
    async with api.runtime.db.transaction(write=True) as conn:
        await rules.disable_rule(conn, manager, channel_id=channel_id,
                                 rule_id=rule_id.upper())
        assert await api.runtime.audit.flush(conn, manager, request_id="console-2") == 1
    assert await status_of(api, owner, channel_id, rule_id) == "disabled"
    last = await last_audit_row(api, owner.account_id)
    assert (last.operation, last.credential, last.request_id) == (
        "channel.escalate.rule.disable", "session", "console-2")
    assert last.target_ids == f'["{rule_id}"]'  # the stored id, whatever case was given
    assert last.is_write and not last.is_dangerous
