"""What a war room does with an answer of the chat platform it cannot use (an HTML error
page, a body that is not JSON, an `ok` answer without the channel it should carry): the same
clear error for every platform (400 BadRequest when the platform answered, 503 when it was
down), nothing stored, never a 500. Against the fake Slack of tests/fixtures/fake_chat_apps.py,
told to answer raw bytes."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.fake_chat_apps import FakeChatApps
from tests.notify.test_war_rooms import (
    DINGTALK,
    FEISHU,
    SLACK,
    feed,
    handles,
    incident,
    rooms,
    wapi,
)

__all__ = ["wapi"]  # the fixture, shared with the war-room tests
pytestmark = pytest.mark.anyio

JSON, HTML = "application/json", "text/html"
PAGE = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
# (method, status, content type, body) -> the status and code of the answer.
MALFORMED = [
    ("conversations.create", 200, HTML, PAGE, 400),
    ("conversations.create", 200, JSON, b"not json {", 400),
    ("conversations.create", 200, JSON, b"[1, 2]", 400),
    ("conversations.create", 200, JSON, b'{"ok": "true"}', 400),
    ("conversations.create", 200, JSON, b'{"ok": false, "error": {"nested": 1}}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true, "channel": "C0123"}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true, "channel": ["C0123"]}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true, "channel": {"id": null}}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true, "channel": {"id": ["C1"]}}', 400),
    ("conversations.create", 200, JSON, b'{"ok": true, "channel": {"id": ""}}', 400),
    ("conversations.create", 502, HTML, PAGE, 503),
    ("conversations.invite", 200, HTML, PAGE, 400),
    ("conversations.invite", 200, JSON, b'{"ok": null}', 400),
    ("chat.postMessage", 200, JSON, b"", 400),
    ("chat.postMessage", 500, JSON, b"{}", 503),
]
CODES = {400: "BadRequest", 503: "ServiceUnavailable"}


@pytest.mark.parametrize(("method", "status", "content_type", "body", "expected"), MALFORMED,
                         ids=[f"{i}-{m[0]}-{m[1]}" for i, m in enumerate(MALFORMED)])
async def test_an_unusable_slack_answer_is_a_clear_error_and_nothing_is_stored(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps, method: str, status: int,
        content_type: str, body: bytes, expected: int) -> None:
    await handles(wapi, owner, owner, slack="U0OWNER1")
    inc = await incident(wapi, owner)
    fake_chat_apps.answer[("slack", method)] = (status, content_type, body)
    reply = await wapi.call("/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
    assert (reply.status, reply.code) == (expected, CODES[expected]), reply.body
    assert reply.message.startswith("Slack "), reply.message
    assert method in reply.message, reply.message
    assert await rooms(wapi) == [] and await feed(wapi, owner, inc["incident_id"]) == []
    # a channel made before the step that failed is archived again
    assert all(c["is_archived"] for c in fake_chat_apps.slack_channels.values())


@pytest.mark.parametrize("body", [
    PAGE, b'{"ok": true, "channel": []}', b'{"ok": true, "channel": "C1"}', b'{"ok": 1}'])
async def test_an_unusable_answer_about_a_room_is_a_clear_error(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps, body: bytes) -> None:
    await handles(wapi, owner, owner, slack="U0OWNER1")
    inc = await incident(wapi, owner)
    made = await wapi.call("/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": SLACK}, key=owner.key)
    chat_id = made.data["chat_id"]
    fake_chat_apps.answer[("slack", "conversations.info")] = (200, HTML if body == PAGE
                                                               else JSON, body)
    reply = await wapi.call("/incident/war-room/detail", {
        "integration_id": SLACK, "chat_id": chat_id}, key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest"), reply.body
    assert reply.message.startswith("Slack refused the war room: conversations.info: ")


@pytest.mark.parametrize(("platform", "operation", "integration", "name"), [
    ("feishu", "create", FEISHU, "Feishu"), ("dingtalk", "create", DINGTALK, "DingTalk")])
@pytest.mark.parametrize(("status", "content_type", "body", "expected"), [
    (200, HTML, PAGE, 400), (200, JSON, b"not json {", 400), (200, JSON, b"[]", 400),
    (502, HTML, PAGE, 503)])
async def test_the_other_platforms_answer_the_same_errors(
        wapi: Api, owner: Person, fake_chat_apps: FakeChatApps, platform: str, operation: str,
        integration: int, name: str, status: int, content_type: str, body: bytes,
        expected: int) -> None:
    await handles(wapi, owner, owner, feishu="ou_owner", dingtalk="owner-ding")
    fake_chat_apps.known_dingtalk_users.add("owner-ding")
    inc = await incident(wapi, owner)
    fake_chat_apps.answer[(platform, operation)] = (status, content_type, body)
    reply = await wapi.call("/incident/war-room/create", {
        "incident_id": inc["incident_id"], "integration_id": integration}, key=owner.key)
    assert (reply.status, reply.code) == (expected, CODES[expected]), reply.body
    assert reply.message.startswith(f"{name} "), reply.message
    assert await rooms(wapi) == []
