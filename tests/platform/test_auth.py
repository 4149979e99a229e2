"""Authentication and permissions as the operation layer sees them: one query per request,
nothing cached, so every change to keys, members and roles applies on the next call."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select, update

from dutyline.config import Settings
from dutyline.db.tables.platform import app_key, member, role
from tests.fixtures.accounts import new_account, new_member
from tests.fixtures.api import Api, make_api

pytestmark = pytest.mark.anyio


async def test_missing_unknown_and_malformed_keys_are_401(api: Api, owner: object) -> None:
    for key in [None, "", "dk_not-a-key", "x" * 300]:
        reply = await api.call("/team/list", {}, key=key)
        assert reply.status == 401, key
        assert reply.code == "Unauthorized"
        assert "data" not in reply.body


async def test_revoked_key_fails_on_the_next_call(api: Api) -> None:
    acct = await new_account(api)
    assert (await api.call("/team/list", {}, key=acct.key)).status == 200
    async with api.runtime.db.transaction() as conn:
        await conn.execute(delete(app_key).where(app_key.c.person_id == acct.person_id))
    assert (await api.call("/team/list", {}, key=acct.key)).code == "Unauthorized"


async def test_deleted_member_key_fails(api: Api) -> None:
    acct = await new_account(api)
    person = await new_member(api, acct)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(
            update(member).where(member.c.member_id == person.person_id).values(status="deleted")
        )
    assert (await api.call("/team/list", {}, key=person.key)).code == "Unauthorized"


async def test_admin_role_grants_writes_and_disabling_it_revokes(api: Api) -> None:
    acct = await new_account(api)
    admin = await new_member(api, acct, name="Ada", builtin="admin")
    assert (await api.call("/team/upsert", {"team_name": "A"}, key=admin.key)).status == 200
    async with api.runtime.db.transaction() as conn:
        await conn.execute(
            update(role)
            .where(role.c.account_id == acct.account_id, role.c.builtin == "admin")
            .values(status="disabled")
        )
    denied = await api.call("/team/upsert", {"team_name": "B"}, key=admin.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    # A valid key with no permissions still reads what any key may read.
    assert (await api.call("/team/list", {}, key=admin.key)).data["total"] == 1


async def test_member_without_roles_reads_but_cannot_write(api: Api) -> None:
    acct = await new_account(api)
    nobody = await new_member(api, acct, name="Nobody", builtin=None)
    assert (await api.call("/team/list", {}, key=nobody.key)).status == 200
    assert (await api.call("/team/upsert", {"team_name": "X"}, key=nobody.key)).status == 403


async def test_key_use_is_recorded(settings: Settings) -> None:
    async with make_api(settings) as api:
        acct = await new_account(api)
        await api.call("/team/list", {}, key=acct.key)
        db_url = settings.database_url
    # The lifespan flushes buffered key use at shutdown.
    later = make_api(settings.with_(database_url=db_url))
    async with later as api2, api2.runtime.db.connect() as conn:
        used = (
            await conn.execute(
                select(app_key.c.last_used_at).where(app_key.c.person_id == acct.person_id)
            )
        ).scalar_one()
    assert used > 1_600_000_000
