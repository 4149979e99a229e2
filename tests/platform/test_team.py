"""/team/* through the HTTP API."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def test_team_list_defaults_and_record_fields(api: Api, owner: Person) -> None:
    created = await api.call("/team/upsert", {"team_name": "SRE", "description": "Ops",
                                              "person_ids": [owner.person_id], "ref_id": "hr-1"},
                             key=owner.key)
    assert created.status == 200
    team_id = created.data["team_id"]
    assert created.data == {"team_id": team_id, "team_name": "SRE"}

    listed = await api.call("/team/list", {}, key=owner.key)
    assert listed.status == 200
    assert listed.headers["Service-Request-Id"] == listed.body["request_id"]
    data = listed.data
    assert (data["p"], data["limit"], data["total"]) == (1, 20, 1)
    item = data["items"][0]
    assert item["account_id"] == owner.account_id
    assert item["team_id"] == team_id
    assert item["team_name"] == "SRE"
    assert item["description"] == "Ops"
    assert item["status"] == "enabled"
    assert item["creator_id"] == owner.person_id
    assert item["creator_name"] == "Acme Owner"
    assert item["updated_by"] == owner.person_id
    assert item["updated_by_name"] == "Acme Owner"
    assert item["person_ids"] == [owner.person_id]
    assert item["ref_id"] == "hr-1"
    assert isinstance(item["created_at"], int) and item["created_at"] > 1_600_000_000


async def test_team_list_paging_order_and_person_filter(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Ann")
    for i in range(5):
        people = [member.person_id] if i % 2 == 0 else []
        reply = await api.call("/team/upsert", {"team_name": f"team-{i}", "person_ids": people},
                               key=owner.key)
        assert reply.status == 200
    page = await api.call("/team/list", {"p": 2, "limit": 2, "orderby": "team_name", "asc": True},
                          key=owner.key)
    assert [t["team_name"] for t in page.data["items"]] == ["team-2", "team-3"]
    assert page.data["total"] == 5
    past_end = await api.call("/team/list", {"p": 9, "limit": 2}, key=owner.key)
    assert past_end.data["items"] == [] and past_end.data["total"] == 5
    mine = await api.call("/team/list", {"person_id": member.person_id, "orderby": "team_name",
                                         "asc": True}, key=member.key)
    assert [t["team_name"] for t in mine.data["items"]] == ["team-0", "team-2", "team-4"]
    desc = await api.call("/team/list", {"orderby": "team_name", "asc": False}, key=owner.key)
    assert desc.data["items"][0]["team_name"] == "team-4"


async def test_team_list_rejects_bad_paging(api: Api, owner: Person) -> None:
    for body, field in [({"p": 0}, "p"), ({"limit": 101}, "limit"), ({"p": "1"}, "p"),
                        ({"p": 200, "limit": 100}, "p"), ({"orderby": "nope"}, "orderby")]:
        reply = await api.call("/team/list", body, key=owner.key)
        assert reply.status == 400, body
        assert reply.code == "InvalidParameter"
        assert field in reply.message


async def test_other_accounts_teams_are_invisible(api: Api, owner: Person,
                                                  other_owner: Person) -> None:
    team_id = (await api.call("/team/upsert", {"team_name": "Private"}, key=owner.key)).data[
        "team_id"]
    assert (await api.call("/team/list", {}, key=other_owner.key)).data["total"] == 0
    info = await api.call("/team/info", {"team_id": team_id}, key=other_owner.key)
    assert info.status == 400 and info.code == "ResourceNotFound"
    upd = await api.call("/team/upsert", {"team_id": team_id, "team_name": "Stolen"},
                         key=other_owner.key)
    assert upd.code == "ResourceNotFound"
    gone = await api.call("/team/delete", {"team_id": team_id}, key=other_owner.key)
    assert gone.code == "ResourceNotFound"
    infos = await api.call("/team/infos", {"team_ids": [team_id]}, key=other_owner.key)
    assert infos.data == {"items": []}
    still = await api.call("/team/info", {"team_id": team_id}, key=owner.key)
    assert still.data["team_name"] == "Private"


async def test_team_name_unique_case_insensitive_and_reset(api: Api, owner: Person) -> None:
    first = await api.call("/team/upsert", {"team_name": "Ops"}, key=owner.key)
    dup = await api.call("/team/upsert", {"team_name": "OPS"}, key=owner.key)
    assert dup.status == 400 and dup.code == "InvalidParameter" and "team_name" in dup.message
    reset = await api.call("/team/upsert", {"team_name": "ops", "reset_if_name_exist": True,
                                            "person_ids": [owner.person_id]}, key=owner.key)
    assert reset.data["team_id"] == first.data["team_id"]
    info = await api.call("/team/info", {"team_name": "OPS"}, key=owner.key)
    assert info.data["person_ids"] == [owner.person_id]


async def test_team_members_must_belong_to_account(api: Api, owner: Person,
                                                    other_owner: Person) -> None:
    reply = await api.call("/team/upsert", {"team_name": "X",
                                            "person_ids": [other_owner.person_id]}, key=owner.key)
    assert reply.code == "InvalidParameter" and str(other_owner.person_id) in reply.message
    assert (await api.call("/team/list", {}, key=owner.key)).data["total"] == 0


async def test_unknown_emails_and_phones_are_ignored(api: Api, owner: Person,
                                                    other_owner: Person) -> None:
    """As the reference describes: contacts that match no member of the account add no one
    (another account's member with that email included) and do not refuse the call."""
    from tests.fixtures.accounts import new_member

    mate = await new_member(api, owner, name="Mate", email="mate@acme.example")
    stranger = await new_member(api, other_owner, name="Stranger", email="s@globex.example")
    reply = await api.call("/team/upsert", {
        "team_name": "Mixed", "emails": ["MATE@acme.example", "nobody@acme.example",
                                         "s@globex.example"],
        "phones": ["+15550000000"]}, key=owner.key)
    assert reply.status == 200, reply.body
    info = await api.call("/team/info", {"team_id": reply.data["team_id"]}, key=owner.key)
    assert info.data["person_ids"] == [mate.person_id]
    assert stranger.person_id not in info.data["person_ids"]


async def test_team_write_needs_account_manage(api: Api, owner: Person) -> None:
    member = await new_member(api, owner)
    denied = await api.call("/team/upsert", {"team_name": "Nope"}, key=member.key)
    assert denied.status == 403 and denied.code == "AccessDenied"
    assert (await api.call("/team/list", {}, key=member.key)).data["total"] == 0


async def test_team_delete_and_infos(api: Api, owner: Person) -> None:
    a = (await api.call("/team/upsert", {"team_name": "A"}, key=owner.key)).data["team_id"]
    b = (await api.call("/team/upsert", {"team_name": "B", "ref_id": "r-b"},
                        key=owner.key)).data["team_id"]
    infos = await api.call("/team/infos", {"team_ids": [b, a, 12345678901]}, key=owner.key)
    assert sorted(i["team_id"] for i in infos.data["items"]) == sorted([a, b])
    deleted = await api.call("/team/delete", {"ref_id": "r-b"}, key=owner.key)
    assert deleted.status == 200 and deleted.data == {}
    assert (await api.call("/team/info", {"team_id": b}, key=owner.key)).code == "ResourceNotFound"
    missing = await api.call("/team/delete", {}, key=owner.key)
    assert missing.code == "InvalidParameter"
