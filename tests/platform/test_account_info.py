"""/account/info: the caller's own account record, for any valid key."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from dutyline.db.tables.platform import account
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def test_account_info_is_the_callers_own_account(api: Api, owner: Person) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(locale="zh-CN", time_zone="Asia/Shanghai"))
    reply = await api.call("/account/info", {}, key=owner.key)
    assert reply.status == 200, reply.body
    created = reply.data["created_at"]
    assert reply.data == {"account_id": owner.account_id, "account_name": "Acme",
                          "domain": "", "email": "owner@acme.example", "phone": "",
                          "country_code": "", "avatar": "", "locale": "zh-CN",
                          "time_zone": "Asia/Shanghai",
                          "created_at": created, "updated_at": created}
    assert abs(created - int(api.runtime.clock.now())) < 5

    # Any member reads it, with no permission at all; another account reads its own.
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    assert (await api.call("/account/info", {}, key=nobody.key)).data["account_id"] == \
        owner.account_id
    other = await new_account(api, "Globex")
    theirs = await api.call("/account/info", {"account_id": owner.account_id}, key=other.key)
    assert (theirs.data["account_id"], theirs.data["account_name"]) == (
        other.account_id, "Globex")
    assert theirs.data["locale"] == "en-US" and theirs.data["time_zone"] == "UTC"
    unauthorized = await api.call("/account/info", {}, key=None)
    assert (unauthorized.status, unauthorized.code) == (401, "Unauthorized")


async def test_the_fields_a_published_client_decodes_have_its_json_types(
        api: Api, owner: Person) -> None:
    """A published client decodes strictly: one field of the wrong JSON type fails its call."""
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(account).where(account.c.account_id == owner.account_id)
                           .values(domain="acme.example"))
    data = (await api.call("/account/info", {}, key=owner.key)).data
    assert data["domain"] == "acme.example"
    assert "@" in data["email"]
    for name in ("account_name", "domain", "email", "phone", "country_code", "avatar",
                 "locale", "time_zone"):
        assert type(data[name]) is str, name
    for name in ("account_id", "created_at"):
        assert type(data[name]) is int, name
