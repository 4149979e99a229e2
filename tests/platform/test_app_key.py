"""/app-key/* through the HTTP API."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from dutyline.api.auth import hash_app_key
from dutyline.db.tables.platform import app_key, audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def test_create_own_key_list_and_use_it(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Kim")
    created = await api.call("/app-key/create", {"key_name": "ci"}, key=member.key)
    assert created.status == 200
    data = created.data
    assert set(data) == {"key_id", "key_name", "person_id", "app_key"}
    assert (data["key_name"], data["person_id"]) == ("ci", member.person_id)
    new_key = data["app_key"]
    me = await api.call("/member/info", {}, key=new_key)
    assert me.status == 200 and me.data["member_id"] == member.person_id

    listed = await api.call("/app-key/list", {}, key=member.key)
    assert listed.status == 200
    items = {i["key_id"]: i for i in listed.data["items"]}
    assert len(items) == 2
    item = items[data["key_id"]]
    assert set(item) == {"key_id", "key_name", "person_id", "suffix", "created_at",
                         "last_used_at"}
    assert item["suffix"] == new_key[-4:] and item["person_id"] == member.person_id
    assert item["created_at"] > 1_600_000_000
    assert new_key not in json.dumps(listed.body)

    async with api.runtime.db.connect() as conn:
        stored = (await conn.execute(select(app_key.c.key_hash).where(
            app_key.c.key_id == data["key_id"]))).scalar_one()
        audit_bodies = (await conn.execute(select(audit_log.c.body).where(
            audit_log.c.operation == "app-key.create"))).scalars().all()
    # Only the hash is kept, and the plaintext never reaches the audit log.
    assert stored == hash_app_key(new_key) and new_key not in stored
    assert audit_bodies and all(new_key not in b for b in audit_bodies)


async def test_create_key_for_another_member_needs_account_manage(api: Api,
                                                                  owner: Person) -> None:
    member = await new_member(api, owner, name="Kim")
    other = await new_member(api, owner, name="Lee")
    denied = await api.call("/app-key/create", {"key_name": "x", "person_id": other.person_id},
                            key=member.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    listed = await api.call("/app-key/list", {"person_id": other.person_id}, key=member.key)
    assert listed.status == 403 and listed.code == "AccessDenied"

    created = await api.call("/app-key/create", {"key_name": "for-lee",
                                                 "person_id": other.person_id}, key=owner.key)
    assert created.status == 200 and created.data["person_id"] == other.person_id
    me = await api.call("/member/info", {}, key=created.data["app_key"])
    assert me.data["member_id"] == other.person_id
    names = [i["key_name"] for i in (await api.call(
        "/app-key/list", {"person_id": other.person_id}, key=owner.key)).data["items"]]
    assert sorted(names) == ["for-lee", "test"]
    own = await api.call("/app-key/list", {"person_id": member.person_id}, key=member.key)
    assert [i["key_name"] for i in own.data["items"]] == ["test"]


async def test_deleted_key_is_refused_on_the_next_call(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Kim")
    spare = (await api.call("/app-key/create", {"key_name": "spare"}, key=member.key)).data
    # Deleting one's own key, with the key itself.
    own_id = next(i["key_id"] for i in (await api.call(
        "/app-key/list", {}, key=member.key)).data["items"] if i["key_name"] == "test")
    gone = await api.call("/app-key/delete", {"key_id": own_id}, key=member.key)
    assert gone.status == 200 and gone.data == {}
    after = await api.call("/member/info", {}, key=member.key)
    assert after.status == 401 and after.code == "Unauthorized"
    # An account manager deletes another member's key.
    assert (await api.call("/member/info", {}, key=spare["app_key"])).status == 200
    revoked = await api.call("/app-key/delete", {"key_id": spare["key_id"]}, key=owner.key)
    assert revoked.status == 200
    assert (await api.call("/member/info", {}, key=spare["app_key"])).status == 401
    assert (await api.call("/app-key/list", {"person_id": member.person_id},
                           key=owner.key)).data["items"] == []


async def test_plain_member_cannot_delete_anothers_key(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Kim")
    owner_key_id = (await api.call("/app-key/list", {}, key=owner.key)).data["items"][0]["key_id"]
    denied = await api.call("/app-key/delete", {"key_id": owner_key_id}, key=member.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    assert (await api.call("/member/info", {}, key=owner.key)).status == 200


async def test_other_accounts_keys_and_members_are_not_found(api: Api, owner: Person,
                                                             other_owner: Person) -> None:
    key_id = (await api.call("/app-key/list", {}, key=owner.key)).data["items"][0]["key_id"]
    for path, body in [("/app-key/delete", {"key_id": key_id}),
                       ("/app-key/list", {"person_id": owner.person_id}),
                       ("/app-key/create", {"key_name": "x", "person_id": owner.person_id})]:
        reply = await api.call(path, body, key=other_owner.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", path
    assert len((await api.call("/app-key/list", {}, key=owner.key)).data["items"]) == 1
    assert (await api.call("/member/info", {}, key=owner.key)).status == 200


async def test_no_key_for_a_deleted_member(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Kim")
    await api.call("/member/delete", {"member_id": member.person_id}, key=owner.key)
    reply = await api.call("/app-key/create", {"key_name": "x", "person_id": member.person_id},
                           key=owner.key)
    assert reply.status == 400 and reply.code == "ResourceNotFound"


async def test_app_key_validation(api: Api, owner: Person) -> None:
    cases = [
        ("/app-key/create", {}, "key_name"),
        ("/app-key/create", {"key_name": ""}, "key_name"),
        ("/app-key/create", {"key_name": "   "}, "key_name"),
        ("/app-key/create", {"key_name": "k" * 65}, "key_name"),
        ("/app-key/create", {"key_name": "k", "person_id": 0}, "person_id"),
        ("/app-key/list", {"person_id": "me"}, "person_id"),
        ("/app-key/delete", {}, "key_id"),
        ("/app-key/delete", {"key_id": -1}, "key_id"),
    ]
    for path, body, field in cases:
        reply = await api.call(path, body, key=owner.key)
        assert reply.status == 400 and reply.code == "InvalidParameter", (path, body)
        assert field in reply.message
    assert len((await api.call("/app-key/list", {}, key=owner.key)).data["items"]) == 1
    unknown = await api.call("/app-key/delete", {"key_id": 123456789}, key=owner.key)
    assert unknown.status == 400 and unknown.code == "ResourceNotFound"
    no_key = await api.call("/app-key/list", {}, key=None)
    assert no_key.status == 401 and no_key.code == "Unauthorized"
