"""The platform's write services check and audit whoever calls them, not only the API: called
directly (as the console or a job would) by a member without the permission they refuse and
change nothing; called by one with it, they note one entry that the caller's flush logs."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE, CHANNEL_VIEW
from dutyline.db.tables.platform import app_key, audit_log, role, team
from dutyline.platform.app_key import service as app_keys
from dutyline.platform.member import service as members
from dutyline.platform.role import service as roles
from dutyline.platform.team import service as teams
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def acting(api: Api, person: Person, *permissions: str) -> Actor:
    return Actor(account_id=person.account_id, person_id=person.person_id,
                 clock=api.runtime.clock, permissions=frozenset(permissions),
                 person_name="Someone", credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def count(api: Api, table: Any, account_id: int) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(table).where(
            table.c.account_id == account_id))).scalar_one())


async def test_team_upsert_refuses_a_member_without_account_manage_and_audits_one_with_it(
        api: Api, owner: Person) -> None:
    runtime = api.runtime
    viewer = acting(api, owner, CHANNEL_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await teams.upsert_team(conn, viewer, team=teams.TeamChanges(team_name="SRE"))
        assert await runtime.audit.flush(conn, viewer) == 0
    assert await count(api, team, owner.account_id) == 0

    manager = acting(api, owner, ACCOUNT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        team_id = await teams.upsert_team(conn, manager, team=teams.TeamChanges(
            team_name="SRE", person_ids=[owner.person_id]))
        assert await runtime.audit.flush(conn, manager, request_id="console-1") == 1
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.credential, row.member_id, row.request_id) == (
        "team.upsert", "session", owner.person_id, "console-1")
    assert row.target_ids == f'["{team_id}"]'
    assert row.is_write and not row.is_dangerous


async def test_role_disable_is_its_own_audited_operation(api: Api, owner: Person) -> None:
    made = await api.call("/role/upsert", {"role_name": "Responder"}, key=owner.key)
    role_id = made.data["role_id"]
    runtime = api.runtime
    stranger = acting(api, owner)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await roles.disable_role(conn, stranger, role_id=role_id)
    manager = acting(api, owner, ACCOUNT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        await roles.disable_role(conn, manager, role_id=role_id)
        await runtime.audit.flush(conn, manager)
    async with runtime.db.connect() as conn:
        status = (await conn.execute(select(role.c.status).where(
            role.c.role_id == role_id))).scalar_one()
    assert status == "disabled"
    last = (await audit_rows(api, owner.account_id))[-1]
    assert (last.operation, last.credential, last.target_ids) == (
        "role.disable", "session", f'["{role_id}"]')


async def test_member_delete_needs_account_manage_and_is_audited_as_dangerous(
        api: Api, owner: Person) -> None:
    someone = await new_member(api, owner, name="Leaving Soon")
    runtime = api.runtime
    peer = acting(api, await new_member(api, owner, name="Peer"), CHANNEL_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await members.delete_member(conn, peer, member_id=someone.person_id)
    assert (await api.call("/member/info", {}, key=someone.key)).status == 200

    manager = acting(api, owner, ACCOUNT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        await members.delete_member(conn, manager, member_id=someone.person_id)
        await runtime.audit.flush(conn, manager)
    last = (await audit_rows(api, owner.account_id))[-1]
    assert (last.operation, last.target_ids) == ("member.delete", f'["{someone.person_id}"]')
    assert last.is_dangerous


async def test_an_app_key_for_another_member_needs_account_manage(
        api: Api, owner: Person) -> None:
    """Any member issues keys for themselves (audited too); for another, only a manager."""
    member = await new_member(api, owner, name="Key Holder")
    runtime = api.runtime
    plain = acting(api, member, CHANNEL_VIEW)
    keys_before = await count(api, app_key, owner.account_id)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await app_keys.create_key(conn, plain, key_name="ci", person_id=owner.person_id)
        assert plain.audit_entries == []
        issued = await app_keys.create_key(conn, plain, key_name="ci")
        await runtime.audit.flush(conn, plain)
    assert await count(api, app_key, owner.account_id) == keys_before + 1
    last = (await audit_rows(api, owner.account_id))[-1]
    assert (last.operation, last.member_id, last.target_ids) == (
        "app-key.create", member.person_id, f'["{issued.key_id}"]')
    assert issued.app_key not in last.body
