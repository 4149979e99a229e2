"""Incident war rooms against fake Slack and Feishu APIs on loopback
(tests/fixtures/fake_chat_apps.py), which check each request as the platforms document it:
the room opened with its people and the incident's link, listed, shown live, joined, deleted;
the feed; platform refusals and outages (clear error, nothing stored); permissions and other
accounts' ids; the IM integrations offered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import ChatApps, Settings
from dutyline.db.tables.notify_war_room import war_room
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_chat_apps import (
    DINGTALK_APP_KEY,
    DINGTALK_APP_SECRET,
    DINGTALK_TEMPLATE_ID,
    FEISHU_APP_ID,
    FEISHU_APP_SECRET,
    SLACK_BOT_TOKEN,
    AppRequest,
    FakeChatApps,
)

pytestmark = pytest.mark.anyio
FEISHU, SLACK, DINGTALK = 1, 2, 3  # the integration ids of the server's apps
BASE = "http://dutyline.test"


def war_room_apps(fake: FakeChatApps, **changes: Any) -> ChatApps:
    return replace(ChatApps(
        slack_api_url=fake.url("slack") + "/api", slack_bot_token=SLACK_BOT_TOKEN,
        feishu_api_url=fake.url("feishu"), feishu_app_id=FEISHU_APP_ID,
        feishu_app_secret=FEISHU_APP_SECRET, dingtalk_api_url=fake.url("dingtalk"),
        dingtalk_oapi_url=fake.url("dingtalk-oapi"), dingtalk_app_key=DINGTALK_APP_KEY,
        dingtalk_app_secret=DINGTALK_APP_SECRET,
        dingtalk_scene_group_template_id=DINGTALK_TEMPLATE_ID), **changes)


@pytest.fixture
async def wapi(settings: Settings, clock: FakeClock,
               fake_chat_apps: FakeChatApps) -> AsyncIterator[Api]:
    async with make_api(settings.with_(base_url=BASE, chat_apps=war_room_apps(fake_chat_apps)),
                        clock=clock) as client:
        yield client


async def ok(api: Api, who: Person, path: str, body: dict[str, Any]) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


async def handles(api: Api, owner: Person, person: Person, **im: str) -> None:
    await ok(api, owner, "/member/notify/reset", {"member_id": person.person_id, "im": im})


async def incident(api: Api, who: Person, title: str = "Checkout latency high",
                   responders: list[int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"incident_severity": "Critical", "title": title}
    if responders:
        body["assigned_to"] = {"person_ids": responders}
    made = await ok(api, who, "/incident/create", body)
    return await ok(api, who, "/incident/info", {"incident_id": made["incident_id"]})  # type: ignore[no-any-return]


async def rooms(api: Api) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(select(war_room)))


async def feed(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    items = (await ok(api, who, "/incident/feed", {"incident_id": incident_id,
                                                   "limit": 100}))["items"]
    return [e for e in items if e["type"].startswith("i_wr_")]


def one(got: list[AppRequest], platform: str, path: str) -> AppRequest:
    found = [r for r in got if (r.platform, r.path) == (platform, path)]
    assert len(found) == 1, (path, [(r.platform, r.path) for r in got])
    return found[0]


async def test_a_slack_war_room_invites_its_people_posts_the_link_and_is_recorded(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    mate = await new_member(wapi, owner, name="Mate", builtin="admin")
    extra = await new_member(wapi, owner, name="Extra")
    silent = await new_member(wapi, owner, name="Silent")  # no Slack handle: left out
    await handles(wapi, owner, owner, slack="U0OWNER1")
    await handles(wapi, owner, mate, slack="U0MATE22")
    await handles(wapi, owner, extra, slack="U0EXTRA3", feishu="ou_extra")
    inc = await incident(wapi, owner, "Checkout latency: high!", responders=[mate.person_id])
    fake_chat_apps.take()

    reply = await wapi.call("/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": SLACK,
        "member_ids": [extra.person_id, silent.person_id], "add_observers": True},
        key=owner.key)
    assert reply.status == 200, reply.body
    room = reply.data
    got = fake_chat_apps.take()
    assert [r.path for r in got] == ["/api/conversations.create", "/api/conversations.invite",
                                     "/api/chat.postMessage"]
    for r in got:
        assert r.headers["authorization"] == f"Bearer {SLACK_BOT_TOKEN}"
        assert r.headers["content-type"] == "application/json; charset=utf-8"
    name = f"incident-{inc['num'].lower()}-checkout-latency-high"
    assert got[0].body == {"name": name, "is_private": False}
    [chat_id] = fake_chat_apps.slack_channels
    assert got[1].body == {"channel": chat_id, "users": "U0OWNER1,U0EXTRA3,U0MATE22"}
    assert set(got[2].body) == {"channel", "text"} and got[2].body["channel"] == chat_id
    assert f"{BASE}/console/incidents/{inc['incident_id']}" in got[2].body["text"]
    assert f"#{inc['num']}" in got[2].body["text"]

    assert room == {
        "chat_id": chat_id, "chat_name": name,
        "share_link": f"https://slack.com/app_redirect?channel={chat_id}",
        "incident_id": inc["incident_id"], "plugin_type": "slack_app", "status": "enabled",
        "account_id": owner.account_id, "integration_id": SLACK,
        "created_by": owner.person_id, "created_at": room["created_at"]}
    assert isinstance(room["created_at"], int) and room["created_at"] > 0
    [row] = await rooms(wapi)
    assert json.loads(row.member_ids) == [owner.person_id, extra.person_id, silent.person_id,
                                          mate.person_id]
    [entry] = await feed(wapi, owner, inc["incident_id"])
    assert entry["type"] == "i_wr_create" and entry["creator_id"] == owner.person_id
    assert entry["detail"] == {"integration_id": SLACK, "integration_name": "Slack app",
                               "plugin_type": "slack_app", "chat_id": chat_id,
                               "chat_name": name, "share_link": room["share_link"]}

    listed = await ok(wapi, owner, "/incident/war-room/list",
                      {"incident_id": inc["incident_id"]})
    assert listed == {"items": [room]}
    assert (await ok(wapi, owner, "/incident/war-room/list", {
        "incident_id": inc["incident_id"], "integration_id": FEISHU})) == {"items": []}

    fake_chat_apps.slack_channels[chat_id]["name"] = "renamed-by-hand"
    detail = await ok(wapi, owner, "/incident/war-room/detail",
                      {"integration_id": SLACK, "chat_id": chat_id})
    assert detail == {**room, "chat_name": "renamed-by-hand"}
    info = one(fake_chat_apps.take(), "slack", "/api/conversations.info")
    assert info.headers["content-type"] == "application/x-www-form-urlencoded"
    assert info.body == {"channel": chat_id}
    fake_chat_apps.slack_channels[chat_id]["is_archived"] = True
    gone = await ok(wapi, owner, "/incident/war-room/detail",
                    {"integration_id": SLACK, "chat_id": chat_id})
    assert gone["status"] == "deleted"
    fake_chat_apps.take()

    deleted = await wapi.call("/incident/war-room/delete", {
        "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
    assert (deleted.status, deleted.data) == (200, {})
    assert fake_chat_apps.take() == []  # the chat stays on Slack
    assert await rooms(wapi) == []
    entries = await feed(wapi, owner, inc["incident_id"])
    assert [e["type"] for e in entries] == ["i_wr_delete", "i_wr_create"]
    assert entries[0]["detail"] == {"integration_id": SLACK, "integration_name": "Slack app",
                                    "plugin_type": "slack_app", "chat_id": chat_id,
                                    "chat_name": name}
    missing = await wapi.call("/incident/war-room/delete", {
        "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
    assert (missing.status, missing.code) == (400, "ResourceNotFound")


async def test_a_feishu_war_room_adds_each_kind_of_handle_and_shares_its_join_link(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    union = await new_member(wapi, owner, name="Union")
    by_mail = await new_member(wapi, owner, name="Mail")
    later = await new_member(wapi, owner, name="Later")
    await handles(wapi, owner, owner, feishu="ou_owner")
    await handles(wapi, owner, union, feishu="on_union")
    await handles(wapi, owner, by_mail, feishu="mail@example.com")  # names no chat member
    await handles(wapi, owner, later, feishu="u_later")
    inc = await incident(wapi, owner, "Payments down")
    fake_chat_apps.take()

    room = await ok(wapi, owner, "/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": FEISHU,
        "member_ids": [union.person_id, by_mail.person_id]})
    got = fake_chat_apps.take()
    token = one(got, "feishu", "/open-apis/auth/v3/tenant_access_token/internal")
    assert token.body == {"app_id": FEISHU_APP_ID, "app_secret": FEISHU_APP_SECRET}
    create = one(got, "feishu", "/open-apis/im/v1/chats")
    assert create.query == {"user_id_type": "open_id", "set_bot_manager": "true"}
    assert create.headers["authorization"].startswith("Bearer t-")
    assert create.body == {"name": f"Incident #{inc['num']} Payments down",
                           "description": f"{BASE}/console/incidents/{inc['incident_id']}",
                           "chat_mode": "group", "chat_type": "private",
                           "user_id_list": ["ou_owner"]}
    [chat_id] = fake_chat_apps.feishu_chats
    members = one(got, "feishu", f"/open-apis/im/v1/chats/{chat_id}/members")
    assert members.query == {"member_id_type": "union_id"}
    assert members.body == {"id_list": ["on_union"]}
    link = one(got, "feishu", f"/open-apis/im/v1/chats/{chat_id}/link")
    assert link.body == {"validity_period": "permanently"}
    message = one(got, "feishu", "/open-apis/im/v1/messages")
    assert message.query == {"receive_id_type": "chat_id"}
    assert message.body["receive_id"] == chat_id and message.body["msg_type"] == "text"
    assert "Payments down" in json.loads(message.body["content"])["text"]
    assert [r.path for r in got][-1] == "/open-apis/im/v1/messages"  # posted once ready
    assert room["share_link"].startswith("https://applink.feishu.cn/client/chat/chatter/")
    assert (room["chat_id"], room["plugin_type"], room["integration_id"]) == (
        chat_id, "feishu_app", FEISHU)
    assert fake_chat_apps.feishu_chats[chat_id]["members"] == ["ou_owner", "on_union"]

    added = await ok(wapi, owner, "/incident/war-room/add-member", {
        "integration_id": FEISHU, "chat_id": chat_id, "member_ids": [later.person_id]})
    assert added == room
    invite = one(fake_chat_apps.take(), "feishu", f"/open-apis/im/v1/chats/{chat_id}/members")
    assert (invite.query, invite.body) == ({"member_id_type": "user_id"},
                                           {"id_list": ["u_later"]})
    [row] = await rooms(wapi)
    assert json.loads(row.member_ids) == [owner.person_id, union.person_id,
                                          by_mail.person_id, later.person_id]
    for nobody in (None, []):
        again = await ok(wapi, owner, "/incident/war-room/add-member", {
            "integration_id": FEISHU, "chat_id": chat_id, "member_ids": nobody})
        assert again == room
    assert fake_chat_apps.take() == []

    fake_chat_apps.feishu_chats[chat_id]["name"] = "Payments war room"
    detail = await ok(wapi, owner, "/incident/war-room/detail",
                      {"integration_id": FEISHU, "chat_id": chat_id})
    assert (detail["chat_name"], detail["status"]) == ("Payments war room", "enabled")
    get = one(fake_chat_apps.take(), "feishu", f"/open-apis/im/v1/chats/{chat_id}")
    assert get.body is None and get.headers["authorization"].startswith("Bearer t-")
    del fake_chat_apps.feishu_chats[chat_id]  # disbanded in Feishu
    detail = await ok(wapi, owner, "/incident/war-room/detail",
                      {"integration_id": FEISHU, "chat_id": chat_id})
    assert detail["status"] == "deleted" and detail["chat_id"] == chat_id


async def test_a_platform_refusal_is_a_clear_error_and_nothing_is_stored(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    await handles(wapi, owner, owner, slack="U0OWNER1", feishu="ou_owner")
    inc = await incident(wapi, owner)
    body = {"incident_id": inc["incident_id"], "integration_id": SLACK}

    fake_chat_apps.unknown_slack_users.add("U0OWNER1")
    fake_chat_apps.take()
    reply = await wapi.call("/incident/war-room/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert reply.message == ("Slack refused the war room: conversations.invite: "
                             "user_not_found"), reply.message
    paths = [r.path for r in fake_chat_apps.take()]
    assert paths == ["/api/conversations.create", "/api/conversations.invite",
                     "/api/conversations.archive"]  # the half-made channel is archived
    assert all(c["is_archived"] for c in fake_chat_apps.slack_channels.values())
    assert await rooms(wapi) == [] and await feed(wapi, owner, inc["incident_id"]) == []

    fake_chat_apps.refuse[("feishu", "create")] = (232034, "The app is unavailable")
    reply = await wapi.call("/incident/war-room/create",
                            {**body, "integration_id": FEISHU}, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert reply.message == ("Feishu refused the war room: code 232034: "
                             "The app is unavailable")
    fake_chat_apps.refuse.clear()
    fake_chat_apps.refuse[("feishu", "link")] = (232025, "link sharing is off")
    reply = await wapi.call("/incident/war-room/create",
                            {**body, "integration_id": FEISHU}, key=owner.key)
    assert reply.status == 400 and "link sharing is off" in reply.message
    assert fake_chat_apps.feishu_chats == {}  # the chat made first was disbanded again
    assert await rooms(wapi) == [] and await feed(wapi, owner, inc["incident_id"]) == []


async def test_an_unreachable_platform_is_service_unavailable(
        settings: Settings, clock: FakeClock, owner: Person,
        fake_chat_apps: FakeChatApps) -> None:
    down = war_room_apps(fake_chat_apps, slack_api_url="http://127.0.0.1:9/api")
    async with make_api(settings.with_(chat_apps=down), clock=clock) as api:
        inc = await incident(api, owner)
        reply = await api.call("/incident/war-room/create", {
            "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
        assert (reply.status, reply.code) == (503, "ServiceUnavailable"), reply.body
        assert reply.message.startswith("Slack could not be reached for the war room: "
                                        "conversations.create: ")
        assert await rooms(api) == []


async def test_one_room_per_incident_and_integration(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    inc = await incident(wapi, owner)
    body = {"incident_id": inc["incident_id"], "integration_id": SLACK}
    first = await ok(wapi, owner, "/incident/war-room/create", body)
    fake_chat_apps.take()
    again = await wapi.call("/incident/war-room/create", body, key=owner.key)
    assert (again.status, again.code) == (400, "BadRequest")
    assert fake_chat_apps.take() == []
    other = await ok(wapi, owner, "/incident/war-room/create",
                     {**body, "integration_id": FEISHU})
    listed = await ok(wapi, owner, "/incident/war-room/list",
                      {"incident_id": inc["incident_id"]})
    assert listed["items"] == [other, first]  # at the same second: by integration id
    # A taken Slack name (the same number in another account) gets a suffix.
    other_inc = await incident(wapi, owner)
    fake_chat_apps.slack_channels["CTAKEN"] = {
        "name": f"incident-{other_inc['num'].lower()}-checkout-latency-high",
        "members": [], "is_archived": False}
    fake_chat_apps.take()
    made = await ok(wapi, owner, "/incident/war-room/create",
                    {"incident_id": other_inc["incident_id"], "integration_id": SLACK})
    creates = [r.body["name"] for r in fake_chat_apps.take()
               if r.path == "/api/conversations.create"]
    assert len(creates) == 2 and creates[1].startswith(creates[0] + "-")
    assert made["chat_name"] == creates[1]


async def test_only_enabled_integrations_take_war_rooms(
        settings: Settings, clock: FakeClock, owner: Person, wapi: Api,
        fake_chat_apps: FakeChatApps) -> None:
    listed = await ok(wapi, owner, "/datasource/im/war-room-enabled/list", {})
    assert listed == {"items": [
        {"data_source_id": FEISHU, "name": "Feishu / Lark app", "plugin_type": "feishu_app",
         "category": "im", "settings": {"war_room_enabled": True}},
        {"data_source_id": SLACK, "name": "Slack app", "plugin_type": "slack_app",
         "category": "im", "settings": {"war_room_enabled": True}},
        {"data_source_id": DINGTALK, "name": "DingTalk app", "plugin_type": "dingtalk_app",
         "category": "im", "settings": {"war_room_enabled": True}}]}
    member = await new_member(wapi, owner, name="Reader")
    assert (await ok(wapi, member, "/datasource/im/war-room-enabled/list", {})) == listed
    inc = await incident(wapi, owner)
    for unknown in (4, 999):
        reply = await wapi.call("/incident/war-room/create", {
            "incident_id": inc["incident_id"], "integration_id": unknown}, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter")
        assert "integration_id" in reply.message

    no_template = war_room_apps(fake_chat_apps, dingtalk_scene_group_template_id=None)
    async with make_api(settings.with_(chat_apps=no_template), clock=clock) as api:
        items = (await ok(api, owner, "/datasource/im/war-room-enabled/list", {}))["items"]
        assert [i["plugin_type"] for i in items] == ["feishu_app", "slack_app"]
    slack_only = ChatApps(slack_api_url=fake_chat_apps.url("slack") + "/api",
                          slack_bot_token=SLACK_BOT_TOKEN)
    async with make_api(settings.with_(chat_apps=slack_only), clock=clock) as api:
        items = (await ok(api, owner, "/datasource/im/war-room-enabled/list", {}))["items"]
        assert [i["plugin_type"] for i in items] == ["slack_app"]
        reply = await api.call("/incident/war-room/create", {
            "incident_id": inc["incident_id"], "integration_id": FEISHU}, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter")
    off = war_room_apps(fake_chat_apps, war_rooms=False)
    async with make_api(settings.with_(chat_apps=off), clock=clock) as api:
        assert (await ok(api, owner, "/datasource/im/war-room-enabled/list", {})) == {
            "items": []}
        reply = await api.call("/incident/war-room/create", {
            "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert await rooms(wapi) == []


async def test_default_observers_are_the_incidents_responders(
        wapi: Api, owner: Person) -> None:
    mate = await new_member(wapi, owner, name="Mate Person", email="mate@example.com")
    inc = await incident(wapi, owner, responders=[mate.person_id])
    await ok(wapi, owner, "/incident/responder/add", {"incident_id": inc["incident_id"],
                                                      "person_ids": [owner.person_id]})
    info = await ok(wapi, owner, "/incident/info", {"incident_id": inc["incident_id"]})
    assigned = {r["person_id"]: r["assigned_at"] for r in info["responders"]}
    got = await ok(wapi, owner, "/incident/war-room/default-observers",
                   {"incident_id": inc["incident_id"]})
    by_person = {o["person_id"]: o for o in got["observers"]}
    assert by_person[mate.person_id] == {
        "person_id": mate.person_id, "person_name": "Mate Person",
        "nickname": "Mate Person", "name": "Mate Person", "email": "mate@example.com",
        "phone": "", "status": "enabled", "assigned_at": assigned[mate.person_id]}
    assert [o["person_id"] for o in got["observers"]] == sorted(
        assigned, key=lambda p: (assigned[p], p))
    assert all(isinstance(o["assigned_at"], int) for o in got["observers"])


async def test_a_member_without_incident_manage_changes_nothing(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    inc = await incident(wapi, owner)
    room = await ok(wapi, owner, "/incident/war-room/create",
                    {"incident_id": inc["incident_id"], "integration_id": SLACK})
    reader = await new_member(wapi, owner, name="Reader")  # channels: view only
    nobody = await new_member(wapi, owner, name="Nobody", builtin=None, role_ids=[])
    fake_chat_apps.take()
    before = await rooms(wapi)
    for path, body in (
            ("/incident/war-room/create", {"incident_id": inc["incident_id"],
                                           "integration_id": FEISHU}),
            ("/incident/war-room/add-member", {"integration_id": SLACK,
                                               "chat_id": room["chat_id"],
                                               "member_ids": [reader.person_id]}),
            ("/incident/war-room/delete", {"incident_id": inc["incident_id"],
                                           "integration_id": SLACK})):
        reply = await wapi.call(path, body, key=reader.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    assert await rooms(wapi) == before and fake_chat_apps.take() == []
    # Viewing channels is enough to read them; no role at all is not.
    assert (await ok(wapi, reader, "/incident/war-room/list",
                     {"incident_id": inc["incident_id"]}))["items"] == [room]
    for path, body in (("/incident/war-room/list", {"incident_id": inc["incident_id"]}),
                       ("/incident/war-room/default-observers",
                        {"incident_id": inc["incident_id"]}),
                       ("/incident/war-room/detail", {"integration_id": SLACK,
                                                      "chat_id": room["chat_id"]})):
        reply = await wapi.call(path, body, key=nobody.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path


async def test_another_accounts_ids_are_not_found_and_reach_no_platform(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    theirs = await new_account(wapi, "Globex")
    their_member = await new_member(wapi, theirs, name="Them")
    await handles(wapi, theirs, their_member, slack="U0THEIRS")
    their_inc = await incident(wapi, theirs)
    their_room = await ok(wapi, theirs, "/incident/war-room/create",
                          {"incident_id": their_inc["incident_id"], "integration_id": SLACK})
    mine = await incident(wapi, owner)
    my_room = await ok(wapi, owner, "/incident/war-room/create",
                       {"incident_id": mine["incident_id"], "integration_id": FEISHU})
    fake_chat_apps.take()
    before = await rooms(wapi)
    for path, body in (
            ("/incident/war-room/create", {"incident_id": their_inc["incident_id"],
                                           "integration_id": FEISHU}),
            ("/incident/war-room/create", {"incident_id": mine["incident_id"],
                                           "integration_id": SLACK,
                                           "member_ids": [their_member.person_id]}),
            ("/incident/war-room/list", {"incident_id": their_inc["incident_id"]}),
            ("/incident/war-room/detail", {"integration_id": SLACK,
                                           "chat_id": their_room["chat_id"]}),
            ("/incident/war-room/add-member", {"integration_id": SLACK,
                                               "chat_id": their_room["chat_id"],
                                               "member_ids": [owner.person_id]}),
            ("/incident/war-room/add-member", {"integration_id": FEISHU,
                                               "chat_id": my_room["chat_id"],
                                               "member_ids": [their_member.person_id]}),
            ("/incident/war-room/delete", {"incident_id": their_inc["incident_id"],
                                           "integration_id": SLACK}),
            ("/incident/war-room/default-observers",
             {"incident_id": their_inc["incident_id"]})):
        reply = await wapi.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (path, reply.body)
    assert await rooms(wapi) == before
    assert fake_chat_apps.take() == []


async def test_bad_requests_are_refused_naming_the_field(wapi: Api, owner: Person) -> None:
    for path, body, field in (
            ("/incident/war-room/create", {"integration_id": SLACK}, "incident_id"),
            ("/incident/war-room/create", {"incident_id": "x" * 24, "integration_id": SLACK},
             "incident_id"),
            ("/incident/war-room/create", {"incident_id": "a" * 24}, "integration_id"),
            ("/incident/war-room/create", {"incident_id": "a" * 24, "integration_id": SLACK,
                                           "member_ids": "x"}, "member_ids"),
            ("/incident/war-room/detail", {"integration_id": SLACK, "chat_id": ""},
             "chat_id"),
            ("/incident/war-room/list", {"incident_id": 5}, "incident_id")):
        reply = await wapi.call(path, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), (path, reply.body)
        assert field in reply.message


async def test_platform_calls_go_through_the_outbound_guard(
        settings: Settings, clock: FakeClock, owner: Person,
        fake_chat_apps: FakeChatApps) -> None:
    """The fake platforms listen on loopback: a server that may not reach private addresses
    refuses to call them, and says so."""
    guarded = settings.with_(allow_private_network=False,
                             chat_apps=war_room_apps(fake_chat_apps))
    async with make_api(guarded, clock=clock) as api:
        inc = await incident(api, owner)
        for integration_id, platform in ((SLACK, "Slack"), (FEISHU, "Feishu")):
            reply = await api.call("/incident/war-room/create", {
                "incident_id": inc["incident_id"], "integration_id": integration_id},
                key=owner.key)
            assert (reply.status, reply.code) == (400, "BadRequest"), reply.body
            assert reply.message.startswith(f"{platform} ")
            assert "refused by the outbound guard" in reply.message, reply.message
        assert fake_chat_apps.take() == []
        assert await rooms(api) == []


async def test_refusals_are_translated_and_writes_audited(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    inc = await incident(wapi, owner)
    body = {"incident_id": inc["incident_id"], "integration_id": SLACK}
    fake_chat_apps.refuse[("slack", "conversations.create")] = "restricted_action"
    reply = await wapi.call("/incident/war-room/create", body, key=owner.key,
                            headers={"Accept-Language": "zh-CN"})
    assert reply.message == ("Slack 拒绝了作战室请求\uff1a"
                             "conversations.create: restricted_action")
    fake_chat_apps.refuse.clear()
    room = await ok(wapi, owner, "/incident/war-room/create", body)
    await ok(wapi, owner, "/incident/war-room/delete", body)
    now = int(wapi.runtime.clock.now())
    entries = (await ok(wapi, owner, "/audit/search", {
        "start_time": now - 60, "end_time": now + 60, "limit": 20}))["docs"]
    war = sorted(((e["operation"], e["outcome"], e["target_ids"]) for e in entries
                  if e["operation"].startswith("incident.war-room.")), key=str)
    assert war == [
        ("incident.war-room.create", "BadRequest", []),  # refused: nothing touched
        ("incident.war-room.create", "OK", [inc["incident_id"], room["chat_id"]]),
        ("incident.war-room.delete", "OK", [room["chat_id"]])], war


async def test_adding_people_already_in_a_slack_room_invites_the_others(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    first = await new_member(wapi, owner, name="First")
    second = await new_member(wapi, owner, name="Second")
    await handles(wapi, owner, first, slack="U0FIRST1")
    await handles(wapi, owner, second, slack="U0SECOND")
    inc = await incident(wapi, owner)
    room = await ok(wapi, owner, "/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": SLACK,
        "member_ids": [first.person_id]})
    fake_chat_apps.take()
    added = await ok(wapi, owner, "/incident/war-room/add-member", {
        "integration_id": SLACK, "chat_id": room["chat_id"],
        "member_ids": [first.person_id, second.person_id]})
    assert added == room
    invites = [r.body["users"] for r in fake_chat_apps.take()
               if r.path == "/api/conversations.invite"]
    assert invites == ["U0FIRST1,U0SECOND", "U0FIRST1", "U0SECOND"]
    assert fake_chat_apps.slack_channels[room["chat_id"]]["members"] == ["U0FIRST1",
                                                                         "U0SECOND"]


async def test_a_dingtalk_war_room_is_a_scene_group_owned_by_the_caller(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    mate = await new_member(wapi, owner, name="Mate")
    later = await new_member(wapi, owner, name="Later")
    fake_chat_apps.known_dingtalk_users.update({"manager01", "staff02", "staff03"})
    await handles(wapi, owner, owner, dingtalk="manager01")
    await handles(wapi, owner, mate, dingtalk="staff02")
    await handles(wapi, owner, later, dingtalk="staff03")
    inc = await incident(wapi, owner, "Orders stuck")
    fake_chat_apps.take()

    room = await ok(wapi, owner, "/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": DINGTALK,
        "member_ids": [mate.person_id]})
    got = fake_chat_apps.take()
    token = one(got, "dingtalk", "/v1.0/oauth2/accessToken")
    assert token.body == {"appKey": DINGTALK_APP_KEY, "appSecret": DINGTALK_APP_SECRET}
    create = one(got, "dingtalk-oapi", "/topapi/im/chat/scenegroup/create")
    assert create.query["access_token"].startswith("dt")
    assert create.headers["content-type"] == "application/json; charset=utf-8"
    assert set(create.body) == {"title", "template_id", "owner_user_id", "user_ids", "uuid"}
    assert create.body["title"] == f"Incident #{inc['num']} Orders stuck"
    assert (create.body["template_id"], create.body["owner_user_id"],
            create.body["user_ids"]) == (DINGTALK_TEMPLATE_ID, "manager01", "manager01,staff02")
    [cid] = fake_chat_apps.dingtalk_groups
    send = one(got, "dingtalk", "/v1.0/robot/groupMessages/send")
    assert send.headers["x-acs-dingtalk-access-token"] == create.query["access_token"]
    assert send.body["openConversationId"] == cid and send.body["robotCode"] == DINGTALK_APP_KEY
    assert f"{BASE}/console/incidents/{inc['incident_id']}" in json.loads(
        send.body["msgParam"])["content"]
    assert (room["chat_id"], room["chat_name"], room["share_link"], room["plugin_type"],
            room["integration_id"]) == (cid, create.body["title"], "", "dingtalk_app",
                                        DINGTALK)

    await ok(wapi, owner, "/incident/war-room/add-member", {
        "integration_id": DINGTALK, "chat_id": cid, "member_ids": [later.person_id]})
    add = one(fake_chat_apps.take(), "dingtalk-oapi", "/topapi/im/chat/scenegroup/member/add")
    assert add.body == {"open_conversation_id": cid, "user_ids": "staff03"}
    assert fake_chat_apps.dingtalk_groups[cid]["members"] == ["manager01", "staff02", "staff03"]
    fake_chat_apps.dingtalk_groups[cid]["title"] = "Orders war room"
    detail = await ok(wapi, owner, "/incident/war-room/detail",
                      {"integration_id": DINGTALK, "chat_id": cid})
    assert (detail["chat_name"], detail["status"]) == ("Orders war room", "enabled")
    get = one(fake_chat_apps.take(), "dingtalk-oapi", "/topapi/im/chat/scenegroup/get")
    assert get.body == {"open_conversation_id": cid}


async def test_a_dingtalk_war_room_needs_an_owner_and_reports_refusals(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    inc = await incident(wapi, owner)
    body = {"incident_id": inc["incident_id"], "integration_id": DINGTALK}
    fake_chat_apps.take()
    reply = await wapi.call("/incident/war-room/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert "a scene group needs an owner" in reply.message and "im.dingtalk" in reply.message
    assert fake_chat_apps.take() == []

    await handles(wapi, owner, owner, dingtalk="nobody-knows")  # not a DingTalk user
    reply = await wapi.call("/incident/war-room/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert reply.message.startswith("DingTalk refused the war room: errcode 60121: ")
    assert fake_chat_apps.dingtalk_groups == {}
    assert await rooms(wapi) == [] and await feed(wapi, owner, inc["incident_id"]) == []
