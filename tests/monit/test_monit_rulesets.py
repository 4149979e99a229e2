"""/monit/store/ruleset/*: the rule repository. Who sees a ruleset (private, account,
public), who may change it, what is stored, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select

from dutyline.db.tables.monit import monit_ruleset
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio
RULES = json.dumps([{"name": "Target down", "ds_type": "prometheus", "enabled": True,
                     "debug_log_enabled": False, "cron_pattern": "* * * * *"}])


async def _create(api: Api, person: Person, **fields: Any) -> dict[str, Any]:
    body = {"type_ident": "prometheus", "note": "Node basics", "payload": RULES, **fields}
    reply = await api.call("/monit/store/ruleset/create", body, key=person.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def _visible(api: Api, person: Person) -> set[int]:
    reply = await api.call("/monit/store/ruleset/list", {"type_ident": "prometheus"},
                           key=person.key)
    assert reply.status == 200 and all("payload" not in r for r in reply.data)
    return {r["id"] for r in reply.data}


async def _count(api: Api) -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(select(func.count()).select_from(monit_ruleset)))
                   .scalar() or 0)


async def test_sharing_decides_who_sees_and_who_changes(api: Api) -> None:
    owner = await new_account(api, "Acme")
    mate = await new_member(api, owner, name="Mate", builtin="admin")
    stranger = await new_account(api, "Globex")
    private = await _create(api, owner, open_flag=0)
    shared = await _create(api, owner, open_flag=1)
    public = await _create(api, owner, open_flag=2)
    assert private["payload"] == RULES and private["creator_id"] == owner.person_id
    assert private["creator_account_id"] == owner.account_id
    assert await _visible(api, owner) == {private["id"], shared["id"], public["id"]}
    assert await _visible(api, mate) == {shared["id"], public["id"]}
    assert await _visible(api, stranger) == {public["id"]}
    info = await api.call("/monit/store/ruleset/info", {"id": public["id"]}, key=stranger.key)
    assert info.status == 200 and json.loads(info.data["payload"])[0]["name"] == "Target down"
    # Out of sight, or outside the creator's account: as an unknown id.
    refused = [(mate, "/monit/store/ruleset/info", {"id": private["id"]}),
               (stranger, "/monit/store/ruleset/info", {"id": shared["id"]}),
               (mate, "/monit/store/ruleset/delete", {"id": private["id"]}),
               (stranger, "/monit/store/ruleset/delete", {"id": public["id"]}),
               (stranger, "/monit/store/ruleset/update",
                {"id": public["id"], "note": "mine", "payload": "[]"}),
               (owner, "/monit/store/ruleset/info", {"id": 424242})]
    for person, path, body in refused:
        reply = await api.call(path, body, key=person.key)
        assert reply.status == 400 and reply.code == "ResourceNotFound", (path, body)
    assert await _count(api) == 3
    # The account may change an account-shared one; the sharing stays when omitted.
    updated = await api.call("/monit/store/ruleset/update", {
        "id": shared["id"], "note": "Node v2", "payload": "[]"}, key=mate.key)
    assert updated.status == 200
    assert (updated.data["note"], updated.data["payload"], updated.data["open_flag"]) == (
        "Node v2", "[]", 1)
    made_private = await api.call("/monit/store/ruleset/update", {
        "id": public["id"], "note": "n", "payload": "[]", "open_flag": 0}, key=owner.key)
    assert made_private.data["open_flag"] == 0
    assert await _visible(api, stranger) == set()
    assert (await api.call("/monit/store/ruleset/delete", {"id": shared["id"]},
                           key=mate.key)).status == 200
    assert await _count(api) == 2


@pytest.mark.parametrize(("body", "code"), [
    ({"payload": "{not json"}, "InvalidParameter"),
    ({"payload": ""}, "InvalidParameter"),
    ({"type_ident": "nope"}, "InvalidParameter"),
    ({"open_flag": 3}, "InvalidParameter"),
    ({"note": None}, "InvalidParameter"),
])
async def test_bad_rulesets_are_refused_and_nothing_is_stored(api: Api, body: dict[str, Any],
                                                              code: str) -> None:
    owner = await new_account(api)
    full = {"type_ident": "prometheus", "note": "n", "payload": RULES, **body}
    reply = await api.call("/monit/store/ruleset/create", full, key=owner.key)
    assert reply.status == 400 and reply.code == code, reply.body
    assert await _count(api) == 0


async def test_bad_updates_change_nothing(api: Api) -> None:
    owner = await new_account(api)
    made = await _create(api, owner)
    bad = await api.call("/monit/store/ruleset/update", {
        "id": made["id"], "note": "x", "payload": "nope"}, key=owner.key)
    assert bad.status == 400 and bad.code == "InvalidParameter"
    info = await api.call("/monit/store/ruleset/info", {"id": made["id"]}, key=owner.key)
    assert info.data["payload"] == RULES and info.data["note"] == "Node basics"
    listed = await api.call("/monit/store/ruleset/list", {"type_ident": "sql"}, key=owner.key)
    assert listed.status == 400 and listed.code == "InvalidParameter"


async def test_the_rule_repository_needs_the_alert_rule_permission(api: Api) -> None:
    owner = await new_account(api)
    made = await _create(api, owner, open_flag=1)
    member = await new_member(api, owner)
    for path, body in (("/monit/store/ruleset/create", {"type_ident": "prometheus",
                                                         "note": "n", "payload": "[]"}),
                       ("/monit/store/ruleset/info", {"id": made["id"]}),
                       ("/monit/store/ruleset/list", {"type_ident": "prometheus"}),
                       ("/monit/store/ruleset/update", {"id": made["id"], "note": "n",
                                                        "payload": "[]"}),
                       ("/monit/store/ruleset/delete", {"id": made["id"]})):
        reply = await api.call(path, body, key=member.key)
        assert reply.status == 403 and reply.code == "AccessDenied", path
    assert await _count(api) == 1
