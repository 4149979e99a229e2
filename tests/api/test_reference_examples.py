"""Every operation's request example, sent in turn to a seeded server, is accepted (200)
and answered as documented (the answer validates against its schema); every response
example validates against its operation's 200 schema.

Ids in the examples are illustrations; the test puts the seeded objects' ids in their place
(by field name). The seeding makes what the examples need: a closed incident with a
post-mortem to write, two incidents to merge, a custom action, a webhook delivery in the
history, a monitor rule with its audit, a spare custom field to delete, the server's Slack
app (against the fake Slack API) for war rooms, a model (a fake LLM) to draft with. URL
fields point at live peers on loopback where the operation reaches them (`card_url`: a real
A2A agent; `address`: a Prometheus API that knows the host web-01), every other URL at a
closed port, so no example reaches the network."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dutyline.config import ChatApps, Settings
from tests.aisre.a2a_peers import a2a_peer
from tests.dispatch.support import run_jobs
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.fake_chat_apps import SLACK_BOT_TOKEN, FakeChatApps, build
from tests.fixtures.fake_llm import fake_llm
from tests.fixtures.loopback import serve_asgi

pytestmark = pytest.mark.anyio

CLOSED_PORT_URL = "http://127.0.0.1:9/"
SLACK = 2  # the server's Slack app, an IM integration with war rooms
_FIRST = re.compile(r"/(create|upsert|invite|import)$")
# Run last, the deepest paths first, deletions after the rest: they remove or disable what
# the others use. An object is enabled again after it was disabled (it is made enabled).
_LAST = re.compile(
    r"/(delete|remove|revoke|truncate|disable|enable|cancel|merge|reset)(/|$)")
_GONE = re.compile(r"/(delete|remove|truncate)(/|$)")


# An incident's life, in an order each step allows.
_INCIDENT = ["/incident/ack", "/incident/unack", "/incident/snooze", "/incident/wake",
             "/incident/responder/add", "/incident/assign", "/incident/comment",
             "/incident/resolve", "/incident/reopen"]


def _ordered(paths: list[str]) -> list[str]:
    def rank(path: str) -> tuple[int, int, bool, str]:
        if _LAST.search(path):
            return (3 + bool(_GONE.search(path)), -path.count("/"), False, path)
        if _FIRST.search(path):  # a parent before what it holds, made before filled
            return (0, path.count("/"), not path.endswith("/create"), path)
        if path in _INCIDENT:
            return (2, _INCIDENT.index(path), False, path)
        return (1, 0, False, path)

    return sorted(paths, key=rank)


# Operations that wait for the queued jobs to run first: a post-mortem is redrafted once the
# model's first draft is done.
_AFTER_THE_JOBS = {"/incident/post-mortem/redraft"}
# Ids an answer names under another name in the requests that use them.
_ALSO_AS = {"/monit/datasource/create": {"id": "ds_id"}}


def _ids_in(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items()
            if (k == "id" or k.endswith("_id")) and v and isinstance(v, int | str)}


class Ids:
    """The ids the seeded objects and the examples' own creations answered with, by the
    resource (path less its verb) that made them: `/channel/inhibit/rule/create`'s `rule_id`
    stands for `rule_id` in `/channel/inhibit/rule/info`. `made` may start with ids seeded
    for one resource (the war rooms' IM integration); `urls` names the live peer a URL field
    points at (every other URL is a closed port)."""

    def __init__(self, seeds: dict[str, Any], made: dict[str, dict[str, Any]],
                 urls: dict[str, str]) -> None:
        self.seeds = seeds
        self.made = made
        self.urls = urls

    def record(self, path: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        found = _ids_in(data)
        inner = [v for v in data.values() if isinstance(v, dict)]  # {"meta": {...}}
        if _FIRST.search(path) and isinstance(data.get("items"), list) and data["items"]:
            inner += [i for i in data["items"][:1] if isinstance(i, dict)]
        for more in inner:
            found = {**_ids_in(more), **found}
        for name, alias in _ALSO_AS.get(path, {}).items():
            if name in found:
                found[alias] = found[name]
        held = self.made.setdefault(path.rsplit("/", 1)[0], {})
        if _FIRST.search(path):  # what was made stands for its kind from now on
            held.update(found)
        else:  # a read names what is there (the caller, when /member/info names no one)
            held.update({k: v for k, v in found.items() if k not in held})

    def lookup(self, path: str, name: str) -> Any:
        plural = name.endswith("ids")
        key = {"ids": "id"}.get(name, name[:-1] if plural else name)
        found = self._find(path, key)
        if found is None and key.startswith("target_"):
            found = self._find(path, key.removeprefix("target_"))  # target_page_id: a page
        if found is None:
            return None
        return [found] if plural else found

    def _find(self, path: str, key: str) -> Any:
        found = self.made.get(path, {}).get(key)  # seeded for this operation
        prefix = path
        while prefix and found is None:
            prefix = prefix.rsplit("/", 1)[0]
            found = self.made.get(prefix, {}).get(key)
        if found is None:
            found = self.seeds.get(key)
        if found is None and key != "id":
            found = next((made[key] for made in reversed(self.made.values()) if key in made),
                         None)
        return found

    def substitute(self, path: str, value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.substitute(path, v, k) for k, v in value.items()}
        if name in ("id", "ids") or name.endswith(("_id", "_ids")):
            found = self.lookup(path, name)
            if found is not None:
                return found
        if isinstance(value, list):
            return [self.substitute(path, v, name) for v in value]
        if isinstance(value, str) and re.match(r"https?://", value):
            return self.urls.get(name, CLOSED_PORT_URL)
        return value


def _peer_app() -> Starlette:
    """A Prometheus HTTP API that knows one host, web-01, whatever it is asked, and a
    custom action's receiver (`POST /action`)."""
    series = {"__name__": "node_uname_info", "instance": "web-01:9100", "job": "node",
              "nodename": "web-01"}

    async def query(request: Request) -> JSONResponse:
        form = {**request.query_params, **await request.form()}
        when = float(str(form.get("time") or 0))
        return JSONResponse({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": series, "value": [when, "1"]}]}})

    async def query_range(request: Request) -> JSONResponse:
        form = {**request.query_params, **await request.form()}
        start, end = float(str(form["start"])), float(str(form["end"]))
        return JSONResponse({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": series, "values": [[start, "1"], [end, "2"]]}]}})

    async def action(_: Request) -> JSONResponse:
        return JSONResponse({})

    return Starlette(routes=[
        Route("/api/v1/query", query, methods=["GET", "POST"]),
        Route("/api/v1/query_range", query_range, methods=["GET", "POST"]),
        Route("/action", action, methods=["POST"])])


@pytest.fixture
def peer() -> Iterator[str]:
    with serve_asgi(_peer_app()) as url:
        yield url


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    """The server, with its Slack app talking to the fake Slack API and a model to draft
    post-mortems with."""
    fake = FakeChatApps()
    with serve_asgi(build(fake)) as base_url, fake_llm() as llm:
        fake.base_url = base_url
        apps = ChatApps(slack_api_url=fake.url("slack") + "/api",
                        slack_bot_token=SLACK_BOT_TOKEN)
        async with make_api(settings.with_(chat_apps=apps, llm_base_url=llm.base_url,
                                           llm_model="fake")) as client:
            yield client


async def _seed(api: Api, owner: Person, peer: str
                ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    async def call(path: str, body: dict[str, Any]) -> Any:
        reply = await api.call(path, body, key=owner.key)
        assert reply.status == 200, (path, reply.body)
        return reply.data

    team = await call("/team/upsert", {"team_name": "Seeded", "person_ids": [owner.person_id]})
    channel = await call("/channel/create", {"channel_name": "Seeded", "team_id":
                                              team["team_id"]})
    channel_id = channel["channel_id"]
    integration = await call("/integration/create", {
        "channel_id": channel_id, "integration_name": "Seeded alerts"})
    # A webhook the channel pages, for the webhook history (its address refuses).
    template = await call("/template/create", {"template_name": "Seeded",
                                               "email": "Incident {{ .Title }}"})
    await call("/channel/escalate/rule/create", {
        "channel_id": channel_id, "rule_name": "Seeded", "template_id":
        template["template_id"], "layers": [{"target": {
            "person_ids": [owner.person_id],
            "webhooks": [{"type": "custom", "settings": {"url": CLOSED_PORT_URL}}]}}]})
    pushed = await api.client.post(
        "/event/push/alert/standard", params={"integration_key": integration["integration_key"]},
        json={"title_rule": "disk full on db-1", "event_status": "Critical", "alert_key": "k1"})
    assert pushed.status_code == 200, pushed.text
    await run_jobs(api)
    now = int(api.runtime.clock.now())
    alerts = await call("/alert/list", {"start_time": now - 3600, "end_time": now + 60})
    history = await call("/webhook/history/list", {
        "limit": 1, "start_time": (now - 3600) * 1000, "end_time": (now + 60) * 1000})
    role = await call("/role/upsert", {"role_name": "Responders", "permission_ids": [203]})

    async def incident(title: str) -> str:
        made = await call("/incident/create", {"incident_severity": "Warning", "title": title,
                                               "channel_id": channel_id})
        return str(made["incident_id"])

    closed = await incident("Queue backlog")
    await call("/incident/resolve", {"incident_ids": [closed]})
    action = await call("/integration/create", {
        "channel_id": channel_id, "integration_name": "Restart the service",
        "integration_type": "custom_action", "url": peer + "/action"})
    rule = await call("/monit/rule/create", {
        "folder_id": 100, "name": "Seeded", "ds_type": "prometheus", "ds_list": ["prom*"],
        "rule_configs": {"queries": [{"name": "A", "expr": "up"}], "check_threshold": {
            "enabled": True, "critical": "$A < 1"}}, "cron_pattern": "* * * * *"})
    audits = await call("/monit/rule/audits", {"id": rule["id"]})
    unused = await call("/field/create", {"field_name": "runbook", "field_type": "text"})
    seeds = {"person_id": owner.person_id, "member_id": owner.person_id,
             "team_id": team["team_id"], "channel_id": channel_id,
             "integration_id": integration["integration_id"],
             "alert_id": alerts["items"][0]["alert_id"], "role_id": role["role_id"],
             "event_id": history["items"][0]["event_id"],
             "target_incident_id": await incident("Database connection timeouts"),
             "source_incident_id": await incident("Checkout errors")}
    made = {"/incident/post-mortem": {"incident_id": closed},
            "/incident/custom-action": {"integration_id": action["integration_id"]},
            "/incident/war-room": {"integration_id": SLACK},
            "/monit/rule/audit": {"id": audits[0]["id"]},
            "/monit/rule/delete/batch": {"id": rule["id"]},
            "/field/delete": {"field_id": unused["field_id"]}}
    return seeds, made


def _validator(spec: dict[str, Any], path: str, status: int) -> Draft202012Validator:
    responses = spec["paths"][path]["post"]["responses"]
    assert str(status) in responses, f"{path} answers {status}, which it does not document"
    schema = responses[str(status)]["content"]["application/json"]["schema"]
    return Draft202012Validator({"components": spec["components"], **schema})


async def test_every_example_is_answered_as_documented(api: Api, owner: Person,
                                                      peer: str) -> None:
    spec = (await api.raw("GET", "/openapi.json")).json()
    async with a2a_peer() as agent:
        seeds, made = await _seed(api, owner, peer)
        ids = Ids(seeds, made, {"card_url": agent.card_url, "address": peer})
        await _send_every_example(api, owner, spec, ids)


async def _send_every_example(api: Api, owner: Person, spec: dict[str, Any],
                              ids: Ids) -> None:
    refused: dict[str, str] = {}
    for path in _ordered(list(spec["paths"])):
        post = spec["paths"][path]["post"]
        example = post["requestBody"]["content"]["application/json"]["example"]
        if path in _AFTER_THE_JOBS:
            await run_jobs(api)
        answer = post["responses"]["200"]["content"]["application/json"]["example"]
        assert not list(_validator(spec, path, 200).iter_errors(answer)), path
        response = await api.raw("POST", path, params={"app_key": owner.key},
                                 json=ids.substitute(path, example),
                                 headers={"Accept": "application/json"})
        body = response.json()
        errors = [e.message for e in _validator(spec, path, response.status_code)
                  .iter_errors(body)]
        assert not errors, (path, response.status_code, errors[:3])
        if response.status_code == 200:
            ids.record(path, body["data"])
        else:
            refused[path] = f"{body['error']['code']}: {body['error']['message']}"
        assert response.status_code < 500, (path, body)
    assert refused == {}
