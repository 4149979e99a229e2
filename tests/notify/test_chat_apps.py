"""Pages through the chat platforms' apps, against fake platform APIs on loopback
(tests/fixtures/fake_chat_apps.py): a person's direct message on Slack, Feishu, DingTalk,
WeCom and Zoom; `*_app` group targets; the app tokens fetched once, refreshed when the platform
expires them; unknown users and Teams apps failed with the reason; no secret in the history."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import ChatApps, Settings
from dutyline.db.tables.notify import notify_attempt, notify_delivery
from tests.dispatch.support import (
    create_rule,
    layer,
    make_channel,
    make_integration,
    push,
    rule_body,
    run_jobs,
)
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_chat_apps import (
    DINGTALK_APP_KEY,
    DINGTALK_APP_SECRET,
    FEISHU_APP_ID,
    FEISHU_APP_SECRET,
    SLACK_BOT_TOKEN,
    WECOM_AGENT_ID,
    WECOM_CORP_ID,
    WECOM_CORP_SECRET,
    ZOOM_CLIENT_ID,
    ZOOM_CLIENT_SECRET,
    FakeChatApps,
)
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio
ZOOM_BOT_JID, ZOOM_ACCOUNT = "v1bot@xmpp.zoom.us", "zoom-account-1"
HANDLES = {"slack": "U024BE7LH", "feishu": "ou_7d8a6e6df7621556ce0d21922b676706",
           "dingtalk": "manager4220", "wecom": "zhangsan", "zoom": "kv8@xmpp.zoom.us"}
SECRETS = (SLACK_BOT_TOKEN, FEISHU_APP_SECRET, DINGTALK_APP_SECRET, WECOM_CORP_SECRET,
           ZOOM_CLIENT_SECRET)


def chat_apps(fake: FakeChatApps) -> ChatApps:
    return ChatApps(
        slack_api_url=fake.url("slack") + "/api", slack_bot_token=SLACK_BOT_TOKEN,
        feishu_api_url=fake.url("feishu"), feishu_app_id=FEISHU_APP_ID,
        feishu_app_secret=FEISHU_APP_SECRET,
        dingtalk_api_url=fake.url("dingtalk"), dingtalk_app_key=DINGTALK_APP_KEY,
        dingtalk_app_secret=DINGTALK_APP_SECRET,
        wecom_api_url=fake.url("wecom"), wecom_corp_id=WECOM_CORP_ID,
        wecom_corp_secret=WECOM_CORP_SECRET, wecom_agent_id=WECOM_AGENT_ID,
        zoom_oauth_url=fake.url("zoom"), zoom_api_url=fake.url("zoom"),
        zoom_client_id=ZOOM_CLIENT_ID, zoom_client_secret=ZOOM_CLIENT_SECRET,
        zoom_bot_jid=ZOOM_BOT_JID, zoom_account_id=ZOOM_ACCOUNT)


@pytest.fixture
async def aapi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock,
               fake_chat_apps: FakeChatApps) -> AsyncIterator[Api]:
    async with make_api(settings.with_(smtp_url=smtp_sink.url, base_url="http://dutyline.test",
                                       chat_apps=chat_apps(fake_chat_apps)),
                        clock=clock) as client:
        yield client


async def page(api: Api, who: Person, layers: list[dict[str, Any]],
               name: str = "Checkout") -> str:
    channel_id = await make_channel(api, who, name)
    await create_rule(api, who, rule_body(channel_id, layers))
    key = await make_integration(api, who, channel_id)
    assert (await push(api, key)).status == 200
    now = int(api.runtime.clock.now())
    items = (await api.call("/incident/list", {"start_time": now - 60, "end_time": now + 60},
                            key=who.key)).data["items"]
    [found] = [i for i in items if i["channel_id"] == channel_id]
    await run_jobs(api)
    return str(found["incident_id"])


async def deliveries(api: Api, incident_id: str) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(notify_delivery).where(
            notify_delivery.c.incident_id == incident_id))).all())


async def attempts(api: Api, incident_id: str) -> list[Any]:
    async with api.runtime.db.transaction() as conn:
        return list((await conn.execute(select(notify_attempt).where(
            notify_attempt.c.incident_id == incident_id))).all())


async def notify_feed(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    reply = await api.call("/incident/feed", {"incident_id": incident_id, "limit": 100},
                           key=who.key)
    return [e["detail"] for e in reply.data["items"] if e["type"] == "i_notify"]


def by_path(got: list[Any]) -> dict[tuple[str, str], Any]:
    return {(r.platform, r.path): r for r in got}


async def test_a_person_gets_a_direct_message_from_each_platforms_app(
        aapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    fake_chat_apps.known_dingtalk_users.add(HANDLES["dingtalk"])
    reply = await aapi.call("/member/notify/reset", {
        "im": HANDLES, "critical": ["slack", "feishu_app", "dingtalk", "wecom_app", "zoom"]},
        key=owner.key)
    assert reply.status == 200, reply.body
    incident_id = await page(aapi, owner, [layer(person_ids=[owner.person_id])])
    got = by_path(fake_chat_apps.take())
    assert len(got) == 9  # five sends, four token fetches (Slack's bot token is static)

    slack = got[("slack", "/api/chat.postMessage")]
    assert slack.headers["authorization"] == f"Bearer {SLACK_BOT_TOKEN}"
    assert slack.headers["content-type"] == "application/json; charset=utf-8"
    assert set(slack.body) == {"channel", "text"} and slack.body["channel"] == HANDLES["slack"]
    assert "checkout latency high" in slack.body["text"]
    assert "Acknowledge: http://dutyline.test/incident/link/" in slack.body["text"]
    assert f"(http://dutyline.test/console/incidents/{incident_id})" in slack.body["text"]

    token = got[("feishu", "/open-apis/auth/v3/tenant_access_token/internal")]
    assert token.body == {"app_id": FEISHU_APP_ID, "app_secret": FEISHU_APP_SECRET}
    feishu = got[("feishu", "/open-apis/im/v1/messages")]
    assert feishu.query == {"receive_id_type": "open_id"}
    assert feishu.headers["authorization"].startswith("Bearer t-")
    assert set(feishu.body) == {"receive_id", "msg_type", "content", "uuid"}
    assert (feishu.body["receive_id"], feishu.body["msg_type"]) == (HANDLES["feishu"], "text")
    assert set(json.loads(feishu.body["content"])) == {"text"}  # content is a JSON string
    assert "Acknowledge:" in json.loads(feishu.body["content"])["text"]

    token = got[("dingtalk", "/v1.0/oauth2/accessToken")]
    assert token.body == {"appKey": DINGTALK_APP_KEY, "appSecret": DINGTALK_APP_SECRET}
    ding = got[("dingtalk", "/v1.0/robot/oToMessages/batchSend")]
    assert ding.headers["x-acs-dingtalk-access-token"].startswith("dt")
    assert set(ding.body) == {"robotCode", "userIds", "msgKey", "msgParam"}
    assert ding.body["userIds"] == [HANDLES["dingtalk"]] and ding.body["msgKey"] == "sampleText"
    assert ding.body["robotCode"] == DINGTALK_APP_KEY
    assert "checkout latency high" in json.loads(ding.body["msgParam"])["content"]

    token = got[("wecom", "/cgi-bin/gettoken")]
    assert token.query == {"corpid": WECOM_CORP_ID, "corpsecret": WECOM_CORP_SECRET}
    wecom = got[("wecom", "/cgi-bin/message/send")]
    assert wecom.query["access_token"].startswith("wc")
    assert wecom.body["touser"] == HANDLES["wecom"] and wecom.body["agentid"] == WECOM_AGENT_ID
    assert wecom.body["msgtype"] == "text" and "checkout" in wecom.body["text"]["content"]
    assert (wecom.body["safe"], wecom.body["enable_duplicate_check"]) == (0, 1)

    token = got[("zoom", "/oauth/token")]
    pair = base64.b64encode(f"{ZOOM_CLIENT_ID}:{ZOOM_CLIENT_SECRET}".encode()).decode()
    assert token.headers["authorization"] == f"Basic {pair}"
    assert token.query == {"grant_type": "client_credentials"}
    zoom = got[("zoom", "/v2/im/chat/messages")]
    assert zoom.headers["authorization"].startswith("Bearer zm")
    assert (zoom.body["robot_jid"], zoom.body["to_jid"], zoom.body["account_id"]) == (
        ZOOM_BOT_JID, HANDLES["zoom"], ZOOM_ACCOUNT)
    assert zoom.body["content"]["head"]["text"] and zoom.body["content"]["body"][0]["text"]

    found = {d.channel: d for d in await deliveries(aapi, incident_id)}
    assert {c: (d.status, d.attempts, d.address) for c, d in found.items()} == {
        "slack": ("success", 1, HANDLES["slack"]),
        "feishu_app": ("success", 1, HANDLES["feishu"]),
        "dingtalk": ("success", 1, HANDLES["dingtalk"]),
        "wecom_app": ("success", 1, HANDLES["wecom"]),
        "zoom": ("success", 1, HANDLES["zoom"])}
    assert feishu.body["uuid"] == found["feishu_app"].delivery_id  # Feishu drops repeats
    details = {d["by"]: d for d in await notify_feed(aapi, owner, incident_id)}
    assert details["slack"]["msg_id"] == "1700000000.000100"
    assert details["feishu_app"]["msg_id"].startswith("om_")
    assert all(details[c]["msg_id"] for c in found)
    assert all(details[c]["persons"] == [{"person_id": owner.person_id}] for c in found)
    # What went over the wire is kept, without the apps' secrets or access tokens.
    stored = " ".join(f"{a.endpoint} {a.request_headers} {a.request_body} {a.response_body} "
                      f"{a.error_message}" for a in await attempts(aapi, incident_id))
    assert not any(secret in stored for secret in SECRETS)
    for issued in fake_chat_apps.tokens:
        assert issued not in stored


async def test_app_group_targets_post_into_each_chat(
        aapi: Api, owner: Person, fake_chat_apps: FakeChatApps) -> None:
    hooks = [
        {"type": "feishu_app", "settings": {"token": "", "alias": "oncall",
                                            "data_source_id": 5427276014131,
                                            "chat_ids": ["oc_a1", "oc_b2"]}},
        {"type": "slack_app", "settings": {"chat_ids": ["C0123ABCD"]}},
        {"type": "dingtalk_app", "settings": {"chat_ids": ["cidX9xG8ufbJgaw=="]}},
        {"type": "wecom_app", "settings": {"chat_ids": ["wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA"]}},
    ]
    incident_id = await page(aapi, owner, [layer(webhooks=hooks)])
    sends = [r for r in fake_chat_apps.take()
             if "token" not in r.path and "accessToken" not in r.path]
    feishu = [r for r in sends if r.platform == "feishu"]
    assert [(r.query["receive_id_type"], r.body["receive_id"]) for r in feishu] in (
        [("chat_id", "oc_a1"), ("chat_id", "oc_b2")], [("chat_id", "oc_b2"), ("chat_id", "oc_a1")])
    [slack] = [r for r in sends if r.platform == "slack"]
    assert slack.body["channel"] == "C0123ABCD" and "Acknowledge" not in slack.body["text"]
    assert f"(http://dutyline.test/console/incidents/{incident_id})" in slack.body["text"]
    [ding] = [r for r in sends if r.platform == "dingtalk"]
    assert ding.path == "/v1.0/robot/groupMessages/send"
    assert set(ding.body) == {"robotCode", "openConversationId", "msgKey", "msgParam"}
    assert ding.body["openConversationId"] == "cidX9xG8ufbJgaw=="
    [wecom] = [r for r in sends if r.platform == "wecom"]
    assert wecom.path == "/cgi-bin/appchat/send"
    assert set(wecom.body) == {"chatid", "msgtype", "text", "safe"}
    assert wecom.body["chatid"] == "wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA"

    states = {(d.channel, d.address): (d.status, d.last_error)
              for d in await deliveries(aapi, incident_id)}
    assert len(states) == 5
    assert all(s == ("success", "") for s in states.values())
    chats = {d["by"] + ":" + d["chats"][0]["chat_id"]: d["chats"][0]
             for d in await notify_feed(aapi, owner, incident_id)}
    assert chats["feishu_app:oc_a1"] == {"data_source_id": 5427276014131, "chat_id": "oc_a1",
                                         "chat_name": "oncall"}
    # The rule keeps the targets as given; an app target must name its chats.
    channel_id = (await deliveries(aapi, incident_id))[0].channel_id
    [rule] = (await aapi.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                              key=owner.key)).data["items"]
    assert rule["layers"][0]["target"]["webhooks"][0]["settings"]["chat_ids"] == [
        "oc_a1", "oc_b2"]
    for settings, field in (({}, "chat_ids"), ({"chat_ids": []}, "chat_ids"),
                            ({"chat_ids": ["ok", ""]}, "chat_ids[1]")):
        bad = await aapi.call("/channel/escalate/rule/create", rule_body(channel_id, [layer(
            webhooks=[{"type": "slack_app", "settings": settings}])]), key=owner.key)
        assert bad.code == "InvalidParameter"
        assert f"layers[0].target.webhooks[0].settings.{field}" in bad.message


async def test_app_tokens_are_reused_and_fetched_again_when_the_platform_expires_them(
        aapi: Api, owner: Person, fake_chat_apps: FakeChatApps, clock: FakeClock) -> None:
    await aapi.call("/member/notify/reset", {"im": HANDLES, "critical": ["feishu", "wecom"]},
                    key=owner.key)
    await page(aapi, owner, [layer(person_ids=[owner.person_id])], name="One")
    await page(aapi, owner, [layer(person_ids=[owner.person_id])], name="Two")
    paths = sorted(r.path for r in fake_chat_apps.take())
    assert paths.count("/open-apis/auth/v3/tenant_access_token/internal") == 1
    assert paths.count("/cgi-bin/gettoken") == 1
    assert paths.count("/open-apis/im/v1/messages") == paths.count("/cgi-bin/message/send") == 2

    fake_chat_apps.expire_tokens()
    incident_id = await page(aapi, owner, [layer(person_ids=[owner.person_id])], name="Three")
    found = {d.channel: d for d in await deliveries(aapi, incident_id)}
    # Refused as expired: the attempt failed, the cached token was dropped, a retry is due.
    assert {c: (d.status, d.attempts) for c, d in found.items()} == {
        "feishu": ("pending", 1), "wecom": ("pending", 1)}
    assert found["feishu"].last_error.startswith("feishu: code 99991663")
    assert found["wecom"].last_error.startswith("wecom: errcode 42001")
    fake_chat_apps.take()
    clock.advance(10)
    await run_jobs(aapi)
    paths = sorted(r.path for r in fake_chat_apps.take())
    assert paths == sorted(["/open-apis/auth/v3/tenant_access_token/internal",
                            "/open-apis/im/v1/messages", "/cgi-bin/gettoken",
                            "/cgi-bin/message/send"])
    found = {d.channel: d for d in await deliveries(aapi, incident_id)}
    assert {c: (d.status, d.attempts) for c, d in found.items()} == {
        "feishu": ("success", 2), "wecom": ("success", 2)}


async def test_unknown_users_missing_handles_and_bad_credentials_fail_without_retrying(
        aapi: Api, owner: Person, fake_chat_apps: FakeChatApps, settings: Settings,
        clock: FakeClock) -> None:
    # DingTalk does not know the user; no Slack handle was given.
    await aapi.call("/member/notify/reset", {"im": {"dingtalk": "ghost"},
                                             "critical": ["dingtalk_app", "slack_app"]},
                    key=owner.key)
    incident_id = await page(aapi, owner, [layer(person_ids=[owner.person_id])])
    found = {d.channel: (d.status, d.attempts, d.last_error)
             for d in await deliveries(aapi, incident_id)}
    assert found == {
        "dingtalk_app": ("failed", 1, "dingtalk: unknown user id ghost"),
        "slack_app": ("failed", 1, "the recipient has no Slack member id (im.slack)")}
    fake_chat_apps.take()
    # A wrong app secret or bot token: failed at once with the platform's answer.
    wrong = chat_apps(fake_chat_apps)
    wrong = ChatApps(**{**wrong.__dict__, "feishu_app_secret": "wrong",
                        "slack_bot_token": "xoxb-wrong"})
    await aapi.call("/member/notify/reset", {"im": HANDLES, "critical": ["feishu", "slack"]},
                    key=owner.key)
    async with make_api(settings.with_(chat_apps=wrong), clock=clock) as other:
        incident_id = await page(other, owner, [layer(person_ids=[owner.person_id])],
                                 name="Wrong")
        found = {d.channel: (d.status, d.attempts, d.last_error)
                 for d in await deliveries(other, incident_id)}
    assert found["slack"] == ("failed", 1, "slack: invalid_auth")
    status, tries, error = found["feishu"]
    assert (status, tries) == ("failed", 1)
    assert error.startswith("getting the app's access token failed") and "10014" in error
    sent = [r.path for r in fake_chat_apps.take()]
    assert "/open-apis/im/v1/messages" not in sent


async def test_a_platform_error_is_retried_then_delivered(
        aapi: Api, owner: Person, fake_chat_apps: FakeChatApps, clock: FakeClock) -> None:
    await aapi.call("/member/notify/reset", {"im": HANDLES, "critical": ["slack"]},
                    key=owner.key)
    fake_chat_apps.fail_next = 1
    incident_id = await page(aapi, owner, [layer(person_ids=[owner.person_id])])
    [d] = await deliveries(aapi, incident_id)
    assert (d.status, d.attempts, d.last_error) == ("pending", 1, "slack: internal_error")
    clock.advance(10)
    await run_jobs(aapi)
    [d] = await deliveries(aapi, incident_id)
    assert (d.status, d.attempts) == ("success", 2)
    assert [r.body["channel"] for r in fake_chat_apps.take()] == [HANDLES["slack"]] * 2


def test_settings_read_the_chat_app_variables_and_hide_the_secrets() -> None:
    s = Settings.from_env({
        "DUTYLINE_SLACK_BOT_TOKEN": "xoxb-s", "DUTYLINE_FEISHU_APP_ID": "cli_1",
        "DUTYLINE_FEISHU_APP_SECRET": "fs-s", "DUTYLINE_FEISHU_API_URL": "https://open.larksuite.com/",
        "DUTYLINE_DINGTALK_APP_KEY": "dk", "DUTYLINE_DINGTALK_APP_SECRET": "dk-s",
        "DUTYLINE_WECOM_CORP_ID": "ww1", "DUTYLINE_WECOM_CORP_SECRET": "wc-s",
        "DUTYLINE_WECOM_AGENT_ID": "1000002", "DUTYLINE_ZOOM_CLIENT_SECRET": "zm-s"}).chat_apps
    assert (s.slack_bot_token, s.feishu_app_id, s.feishu_api_url) == (
        "xoxb-s", "cli_1", "https://open.larksuite.com")
    assert (s.dingtalk_app_key, s.wecom_corp_id, s.wecom_agent_id) == ("dk", "ww1", 1000002)
    assert s.slack_api_url == "https://slack.com/api" and s.dingtalk_robot_code is None
    assert not any(secret in repr(s) for secret in ("xoxb-s", "fs-s", "dk-s", "wc-s", "zm-s"))
    assert Settings.from_env({}).chat_apps == ChatApps()


async def test_preferences_take_the_chat_apps_but_not_teams(aapi: Api, owner: Person) -> None:
    reply = await aapi.call("/member/notify/reset", {
        "critical": ["slack", "feishu_app", "dingtalk", "wecom", "zoom", "telegram"]},
        key=owner.key)
    assert reply.status == 200, reply.body
    info = (await aapi.call("/member/notify/info", {}, key=owner.key)).data
    assert info["critical"] == ["slack", "feishu_app", "dingtalk", "wecom", "zoom", "telegram"]
    for name in ("teams", "teams_app"):
        bad = await aapi.call("/member/notify/reset", {"warning": ["email", name]},
                              key=owner.key)
        assert bad.code == "InvalidParameter" and "warning[1]" in bad.message
    assert (await aapi.call("/member/notify/info", {}, key=owner.key)).data["warning"] == [
        "email"]


async def test_a_rule_naming_teams_app_is_refused_where_it_can_never_reach(
        aapi: Api, owner: Person) -> None:
    """Dutyline has no Teams bot: `teams_app` reaches neither a person nor a group chat, so a
    rule naming it is refused at save with the field; `teams` (a channel's webhook) is not."""
    channel_id = await make_channel(aapi, owner, "Teams")
    cases = [
        (layer(person_ids=[owner.person_id], by={"critical": ["email", "teams_app"]}),
         "layers[0].target.by.critical[1]", "teams_app cannot reach a person"),
        (layer(person_ids=[owner.person_id], by={"warning": ["teams"]}),
         "layers[0].target.by.warning[0]", "teams cannot reach a person"),
        (layer(webhooks=[{"type": "teams_app", "settings": {"chat_ids": ["19:a@thread"]}}]),
         "layers[0].target.webhooks[0].type", "type teams"),
    ]
    for body, field, why in cases:
        bad = await aapi.call("/channel/escalate/rule/create",
                              rule_body(channel_id, [body]), key=owner.key)
        assert bad.status == 400 and bad.code == "InvalidParameter", bad.body
        assert field in bad.message and why in bad.message
    rules = await aapi.call("/channel/escalate/rule/list", {"channel_id": channel_id},
                            key=owner.key)
    assert rules.data["items"] == []
