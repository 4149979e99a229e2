"""/incident/custom-action/do: a custom-action integration of the incident's channel POSTs the
incident to its webhook, HMAC-signed, through the outbound guard, and the answer lands in the
incident's feed. The receiver is a real loopback server that checks the signature the way the
documentation tells a receiver to."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.config import Settings
from dutyline.db.tables.channel import integration_custom_action
from dutyline.db.tables.incident import incident_feed
from dutyline.incident.custom_action import webhook
from tests.dispatch.receiver import Received, Receiver, build
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.loopback import serve_asgi
from tests.incident.conftest import event, push, wire

pytestmark = pytest.mark.anyio
NOW = 1_700_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(float(NOW))


@pytest.fixture
async def capi(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@pytest.fixture
def hook() -> Iterator[Receiver]:
    """The action's webhook: a loopback receiver recording every request."""
    r = Receiver()
    with serve_asgi(build(r)) as base_url:
        r.base_url = base_url
        try:
            yield r
        finally:
            r.release.set()


@pytest.fixture
async def strict_api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The app as shipped: private networks refused."""
    async with make_api(settings.with_(allow_private_network=False), clock=clock) as client:
        yield client


async def ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, reply.body
    return reply.data


async def make_action(api: Api, who: Person, channel_id: int, url: str,
                      name: str = "Restart checkout") -> dict[str, Any]:
    return await ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": name,
        "integration_type": "custom_action", "url": url}, who)


async def incident_with_alert(api: Api, who: Person) -> tuple[int, str]:
    wired = await wire(api, who, name="Checkout")
    assert (await push(api, wired.key, event("checkout 5xx", key="c1",
                                             labels={"service": "checkout"}))).status == 200
    listed = await ok(api, "/incident/list", {"start_time": NOW - 3600,
                                               "end_time": NOW + 3600}, who)
    [item] = listed["items"]
    return wired.channel_id, item["incident_id"]


def verify(received: Received, secret: str, *, now: int = NOW) -> dict[str, Any]:
    """What a receiver does, as docs/custom-actions.md describes it."""
    timestamp = received.headers["x-dutyline-timestamp"]
    expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + received.body,
                                    hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, received.headers["x-dutyline-signature"])
    assert abs(now - int(timestamp)) <= 300
    body = json.loads(received.body)
    assert received.headers["x-dutyline-event-id"] == body["event_id"]
    assert received.headers["content-type"] == "application/json"
    return body


async def feed_of(api: Api, who: Person, incident_id: str) -> list[dict[str, Any]]:
    data = await ok(api, "/incident/feed", {"incident_id": incident_id, "types": ["i_custom"]},
                    who)
    return list(data["items"])


async def test_the_action_posts_the_signed_incident_and_the_feed_keeps_the_answer(
        capi: Api, hook: Receiver) -> None:
    owner = await new_account(capi, "Acme")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    made = await make_action(capi, owner, channel_id, hook.url("/restart"))
    secret = made["signing_secret"]
    assert secret.startswith("dlsig_") and made["integration_type"] == "custom_action"
    assert made["integration_key"] == ""

    reply = await capi.call("/incident/custom-action/do",
                            {"incident_id": incident_id,
                             "integration_id": made["integration_id"]}, key=owner.key)
    assert (reply.status, reply.data) == (200, {"message": ""})
    [got] = hook.take()
    assert got.path == "/restart"
    body = verify(got, secret)
    assert body["event_type"] == "i_custom" and body["event_time"] == NOW * 1000
    assert body["action"] == {"integration_id": made["integration_id"],
                              "integration_name": "Restart checkout"}
    assert body["person"]["person_id"] == owner.person_id
    assert body["incident"]["incident_id"] == incident_id
    assert body["incident"]["channel_id"] == channel_id
    assert body["incident"]["title"] == "checkout 5xx"
    assert [a["labels"]["service"] for a in body["incident"]["alerts"]] == ["checkout"]

    [entry] = await feed_of(capi, owner, incident_id)
    assert entry["creator_id"] == owner.person_id
    assert entry["detail"] == {
        "integration_id": made["integration_id"], "integration_name": "Restart checkout",
        "event_id": body["event_id"], "status_code": 200, "response_body": '{"ok":true}',
        "message": "", "duration_ms": entry["detail"]["duration_ms"]}

    # The integration reads back with its address, never its key.
    info = await ok(capi, "/integration/info", {"integration_id": made["integration_id"]},
                    owner)
    assert info["integration_type"] == "custom_action"
    assert info["url"] == hook.url("/restart")
    assert secret not in json.dumps(info)
    # The signing key is stored sealed, not in clear.
    async with capi.runtime.db.connect() as conn:
        sealed = (await conn.execute(select(integration_custom_action.c.signing_secret_sealed)
                                     )).scalar_one()
    assert secret not in sealed

    # The call is in the audit log with the incident and the action.
    docs = (await ok(capi, "/audit/search", {"start_time": NOW - 60, "end_time": NOW + 60,
                                             "operations": ["incident.custom-action.do"]},
                     owner))["docs"]
    [doc] = docs
    assert doc["target_ids"] == [incident_id, str(made["integration_id"])]


async def test_a_failed_answer_is_the_message_and_is_kept_short(
        capi: Api, hook: Receiver) -> None:
    owner = await new_account(capi, "Acme")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    made = await make_action(capi, owner, channel_id, hook.url("/restart"))
    hook.status = 503
    reply = await capi.call("/incident/custom-action/do",
                            {"incident_id": incident_id,
                             "integration_id": made["integration_id"]}, key=owner.key)
    assert reply.status == 200
    assert reply.data == {"message": "the action's endpoint answered HTTP 503"}
    # Not retried: an action must not run twice.
    assert len(hook.take()) == 1
    [entry] = await feed_of(capi, owner, incident_id)
    assert entry["detail"]["status_code"] == 503
    assert entry["detail"]["message"] == reply.data["message"]


async def test_an_answer_body_is_cut_to_an_excerpt(capi: Api) -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def big(_request: Any) -> PlainTextResponse:
        return PlainTextResponse("é" * 100_000)

    owner = await new_account(capi, "Acme")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    with serve_asgi(Starlette(routes=[Route("/big", big, methods=["POST"])])) as base:
        made = await make_action(capi, owner, channel_id, base + "/big")
        assert (await ok(capi, "/incident/custom-action/do",
                         {"incident_id": incident_id,
                          "integration_id": made["integration_id"]}, owner)) == {"message": ""}
    [entry] = await feed_of(capi, owner, incident_id)
    assert entry["detail"]["response_body"] == "é" * webhook.EXCERPT_CHARS


async def test_an_unreachable_or_slow_receiver_answers_why(
        capi: Api, hook: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    owner = await new_account(capi, "Acme")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    # Nothing listens on the discard port.
    down = await make_action(capi, owner, channel_id, "http://127.0.0.1:9/x", name="Down")
    reply = await capi.call("/incident/custom-action/do",
                            {"incident_id": incident_id,
                             "integration_id": down["integration_id"]}, key=owner.key)
    assert reply.status == 200 and reply.data["message"].startswith("the request failed")

    # A receiver that does not answer within the timeout (shortened for the test).
    monkeypatch.setattr(webhook, "TIMEOUT_S", 0.3)
    hook.hold.add("/slow")
    slow = await make_action(capi, owner, channel_id, hook.url("/slow"), name="Slow")
    reply = await capi.call("/incident/custom-action/do",
                            {"incident_id": incident_id,
                             "integration_id": slow["integration_id"]}, key=owner.key)
    hook.release.set()
    assert reply.status == 200 and reply.data["message"] == "no answer within 0.3 s"
    entries = await feed_of(capi, owner, incident_id)
    assert sorted(e["detail"]["integration_name"] for e in entries) == ["Down", "Slow"]
    assert all(e["detail"]["status_code"] == 0 for e in entries)


async def test_private_addresses_are_refused_unless_allowed(strict_api: Api) -> None:
    owner = await new_account(strict_api, "Acme")
    channel_id, incident_id = await incident_with_alert(strict_api, owner)
    for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://10.0.0.1/x",
                "http://169.254.169.254/latest", "file:///etc/passwd"):
        reply = await strict_api.call("/integration/create", {
            "channel_id": channel_id, "integration_name": "Inside",
            "integration_type": "custom_action", "url": url}, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), url
        assert "url" in reply.message
    # A name is checked when called: here one stored before the operator closed the private
    # network (written directly), which the guard refuses at connect time.
    made = await make_action(strict_api, owner, channel_id, "https://hooks.example.com/x")
    async with strict_api.runtime.db.transaction() as conn:
        await conn.execute(update(integration_custom_action).values(
            url="http://127.0.0.1:9/x"))
    reply = await strict_api.call("/incident/custom-action/do",
                                  {"incident_id": incident_id,
                                   "integration_id": made["integration_id"]}, key=owner.key)
    assert reply.status == 200
    assert reply.data["message"].startswith("the address is refused")
    assert "loopback" in reply.data["message"]
    [entry] = await feed_of(strict_api, owner, incident_id)
    assert entry["detail"]["message"] == reply.data["message"]


async def test_members_without_incident_management_are_refused(
        capi: Api, hook: Receiver) -> None:
    owner = await new_account(capi, "Acme")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    made = await make_action(capi, owner, channel_id, hook.url())
    viewer = await new_member(capi, owner, name="Viewer")
    reply = await capi.call("/incident/custom-action/do",
                            {"incident_id": incident_id,
                             "integration_id": made["integration_id"]}, key=viewer.key)
    assert (reply.status, reply.code) == (403, "AccessDenied")
    assert hook.take() == []
    assert await feed_of(capi, owner, incident_id) == []


async def test_only_a_live_custom_action_of_the_incidents_channel_runs(
        capi: Api, hook: Receiver) -> None:
    owner = await new_account(capi, "Acme")
    other = await new_account(capi, "Globex")
    channel_id, incident_id = await incident_with_alert(capi, owner)
    elsewhere = await wire(capi, owner, name="Elsewhere")
    standard = elsewhere.integration_id
    on_other_channel = await make_action(capi, owner, elsewhere.channel_id, hook.url())
    _, their_incident = await incident_with_alert(capi, other)
    mine = await make_action(capi, owner, channel_id, hook.url(), name="Mine")
    deleted = await make_action(capi, owner, channel_id, hook.url(), name="Gone")
    await ok(capi, "/integration/delete", {"integration_id": deleted["integration_id"]}, owner)
    their_channel = (await ok(capi, "/channel/list", {}, other))["items"][0]["channel_id"]
    theirs = await make_action(capi, other, their_channel, hook.url(), name="Theirs")
    cases = [
        (incident_id, standard, str(standard)),
        (incident_id, on_other_channel["integration_id"],
         str(on_other_channel["integration_id"])),
        (incident_id, deleted["integration_id"], str(deleted["integration_id"])),
        (incident_id, theirs["integration_id"], str(theirs["integration_id"])),
        (their_incident, mine["integration_id"], their_incident),
        ("0" * 24, mine["integration_id"], "0" * 24),
    ]
    for inc, integ, named in cases:
        reply = await capi.call("/incident/custom-action/do",
                                {"incident_id": inc, "integration_id": integ}, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), (inc, integ)
        assert named in reply.message
    assert hook.take() == []
    async with capi.runtime.db.connect() as conn:
        rows = (await conn.execute(select(incident_feed.c.type)
                                   .where(incident_feed.c.type == "i_custom"))).all()
    assert rows == []


@pytest.mark.parametrize(("body", "field"), [
    ({"integration_id": 1}, "incident_id"),
    ({"incident_id": "zz" * 12, "integration_id": 1}, "incident_id"),
    ({"incident_id": "a" * 24}, "integration_id"),
    ({"incident_id": "a" * 24, "integration_id": 0}, "integration_id"),
])
async def test_request_bounds(capi: Api, body: dict[str, Any], field: str) -> None:
    owner = await new_account(capi, "Acme")
    reply = await capi.call("/incident/custom-action/do", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert field in reply.message


async def test_integration_create_checks_the_custom_action_fields(capi: Api) -> None:
    owner = await new_account(capi, "Acme")
    channel_id = (await ok(capi, "/channel/create", {"channel_name": "C"}, owner))["channel_id"]
    for body, field in (
            ({"integration_type": "custom_action"}, "url"),
            ({"integration_type": "custom_action", "url": "  "}, "url"),
            ({"url": "https://hooks.example.com/x"}, "url"),
            ({"integration_type": "chatops"}, "integration_type")):
        reply = await capi.call("/integration/create", {
            "channel_id": channel_id, "integration_name": "X", **body}, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), body
        assert field in reply.message
    # A standard integration answers as before, with no custom-action fields.
    made = await ok(capi, "/integration/create", {"channel_id": channel_id,
                                                  "integration_name": "Std"}, owner)
    assert set(made) == {"integration_id", "integration_name", "integration_key"}
    info = await ok(capi, "/integration/info", {"integration_id": made["integration_id"]},
                    owner)
    assert "url" not in info


def test_the_console_feed_names_the_action_and_its_outcome() -> None:
    from dutyline.web.incident_view import _text

    ran = {"integration_name": "Restart", "status_code": 200, "message": ""}
    assert _text("i_custom", ran, {}) == "ran the custom action Restart: HTTP 200"
    failed = {**ran, "status_code": 0, "message": "no answer within 10 s"}
    assert _text("i_custom", failed, {}) == (
        "ran the custom action Restart: no answer within 10 s")
