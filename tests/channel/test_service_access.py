"""The channel domain's services check the permission and note the audit entry themselves, so
a caller other than the API (the console, a job) is refused or audited alike: called here
directly, not through HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW, INTEGRATION_MANAGE
from dutyline.channel import service as channels
from dutyline.channel.noise import service as noise
from dutyline.channel.pipeline import service as pipelines
from dutyline.db.tables.channel import channel
from dutyline.db.tables.channel_noise import noise_rule
from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def member_holding(api: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def make_channel(api: Api, owner: Person) -> int:
    made = await api.call("/channel/create", {"channel_name": "Payments"}, key=owner.key)
    assert made.status == 200, made.body
    return int(made.data["channel_id"])


async def channel_status(api: Api, channel_id: int) -> str:
    async with api.runtime.db.connect() as conn:
        return str((await conn.execute(select(channel.c.status).where(
            channel.c.channel_id == channel_id))).scalar_one())


async def test_deleting_a_channel_needs_channel_management_and_is_audited_as_dangerous(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    before = len(await audit_rows(api, owner.account_id))
    viewer = member_holding(api, owner, CHANNEL_VIEW)
    async with api.runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await channels.delete_channel(conn, viewer, channel_id=channel_id)
    assert viewer.audit_entries == []
    assert await channel_status(api, channel_id) == "enabled"

    manager = member_holding(api, owner, CHANNEL_MANAGE)
    async with api.runtime.db.transaction(write=True) as conn:
        await channels.delete_channel(conn, manager, channel_id=channel_id)
        assert await api.runtime.audit.flush(conn, manager, request_id="console-1") == 1
    assert await channel_status(api, channel_id) == "deleted"
    rows = await audit_rows(api, owner.account_id)
    assert len(rows) == before + 1
    last = rows[-1]
    assert (last.operation, last.credential, last.member_id) == (
        "channel.delete", "session", owner.person_id)
    assert last.target_ids == f'["{channel_id}"]'
    assert last.is_write and last.is_dangerous


async def test_each_kind_of_noise_rule_is_audited_under_its_own_operation(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    manager = member_holding(api, owner, CHANNEL_MANAGE)
    config = noise.drop_config(filters=[[{"key": "labels.env", "oper": "IN",
                                          "vals": ["test"]}]])
    async with api.runtime.db.transaction(write=True) as conn:
        rule_id, _ = await noise.DROP_RULES.create(
            conn, manager, channel_id=channel_id, rule_name="No tests", description="",
            priority=0, config=config)
        await api.runtime.audit.flush(conn, manager)
    async with api.runtime.db.transaction(write=True) as conn:
        await noise.DROP_RULES.disable(conn, manager, channel_id=channel_id, rule_id=rule_id)
        await api.runtime.audit.flush(conn, manager)
    rows = (await audit_rows(api, owner.account_id))[-2:]
    assert [(r.operation, r.target_ids) for r in rows] == [
        ("channel.unsubscribe.rule.create", f'["{rule_id}"]'),
        ("channel.unsubscribe.rule.disable", f'["{rule_id}"]'),
    ]


async def test_every_noise_rule_write_refuses_a_member_without_channel_management(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    viewer = member_holding(api, owner, CHANNEL_VIEW)
    config = noise.drop_config(filters=[[{"key": "title", "oper": "IN", "vals": ["x"]}]])
    async with api.runtime.db.transaction(write=True) as conn:
        for rules in noise.WRITES.values():
            with pytest.raises(errors.AccessDenied):
                await rules.create(conn, viewer, channel_id=channel_id, rule_name="r",
                                   description="", priority=0, config=config)
            with pytest.raises(errors.AccessDenied):
                await rules.update(conn, viewer, channel_id=channel_id, rule_id="0" * 24,
                                   rule_name="r", description="", priority=0,
                                   config=lambda stored: stored)
            for action in (rules.delete, rules.enable, rules.disable):
                with pytest.raises(errors.AccessDenied):
                    await action(conn, viewer, channel_id=channel_id, rule_id="0" * 24)
    assert viewer.audit_entries == []
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(noise_rule))).first() is None


async def test_a_pipeline_written_directly_still_needs_a_live_integration_the_actor_sees(
        api: Api, owner: Person, other_owner: Person) -> None:
    """The integration check is the service's, not only the endpoint's."""
    channel_id = await make_channel(api, owner)
    made = await api.call("/integration/create", {"channel_id": channel_id,
                                                  "integration_name": "std"}, key=owner.key)
    integration_id = int(made.data["integration_id"])
    stranger = member_holding(api, other_owner, INTEGRATION_MANAGE)
    async with api.runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.ResourceNotFound):
            await pipelines.upsert(conn, stranger, integration_id=integration_id, rules=[])
    assert stranger.audit_entries == []
