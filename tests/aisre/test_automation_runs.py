"""Automation runs with real peers: a fake OpenAI-compatible LLM on loopback scripting tool
calls, the real MCP server and A2A agent of the connector tests, and this service's incidents.
Also the three triggers (HTTP POST with its tokens, schedule, on-call incident), manual runs,
the step budget, the deadline, a missing LLM and a run whose worker died."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.aisre.automation import agent
from dutyline.config import Settings
from dutyline.db.tables.automation import automation_run
from dutyline.db.tables.work import job
from dutyline.work.worker import Worker
from tests.aisre.a2a_peers import a2a_peer
from tests.aisre.mcp_peers import Peers, mcp_peers
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_llm import Answer, Call, FakeLlm, Status, fake_llm

pytestmark = pytest.mark.anyio
# 2023-11-14 22:13:20 UTC
START = 1_700_000_000.0


@pytest.fixture(scope="module")
def peers() -> Iterator[Peers]:
    with mcp_peers() as running:
        yield running


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    with fake_llm() as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def api(settings: Settings, llm: FakeLlm, clock: FakeClock) -> AsyncIterator[Api]:
    configured = settings.with_(llm_base_url=llm.base_url, llm_api_key=llm.api_key,
                                llm_model="fake-model")
    async with make_api(configured, clock=clock) as client:
        yield client


@dataclass
class World:
    api: Api
    owner: Person
    channel_id: int


@pytest.fixture
async def w(api: Api) -> World:
    owner = await new_account(api, "Acme")
    channel = await api.call("/channel/create", {"channel_name": "Prod"}, key=owner.key)
    return World(api, owner, channel.data["channel_id"])


async def rule(w: World, **extra: Any) -> dict[str, Any]:
    body = {"name": "Investigate", "prompt": "Look into the incident", "cron_expr": "9 * * *",
            "enabled": True, **extra}
    reply = await w.api.call("/safari/automation/rule/create", body, key=w.owner.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def run_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


async def runs_of(w: World, rule_id: str) -> list[dict[str, Any]]:
    reply = await w.api.call("/safari/automation/run/list", {"rule_id": rule_id},
                             key=w.owner.key)
    assert reply.status == 200, reply.body
    return list(reply.data["runs"])


async def get_run(w: World, run_id: str) -> dict[str, Any]:
    reply = await w.api.call("/safari/automation/run/get", {"run_id": run_id}, key=w.owner.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


async def fire(w: World, trigger_id: str, token: str | None, body: Any = None,
               **kw: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return await w.api.raw("POST", f"/safari/automation/triggers/{trigger_id}/fire",
                           json=body if body is not None else {"text": "disk full"},
                           headers=headers, **kw)


# --- the agent loop with real peers ---------------------------------------------------------


async def test_a_run_calls_mcp_delegates_to_a2a_reads_an_incident_and_answers(
    w: World, llm: FakeLlm, peers: Peers
) -> None:
    api, owner = w.api, w.owner
    made = await api.call("/safari/mcp/server/create", {
        "server_name": "ops", "description": "Ops tools", "url": peers.http}, key=owner.key)
    assert made.status == 200, made.body
    incident = await api.call("/incident/create", {
        "incident_severity": "Critical", "title": "Database latency high",
        "channel_id": w.channel_id}, key=owner.key)
    incident_id = incident.data["incident_id"]
    async with a2a_peer(name="DB Expert") as peer:
        agent_made = await api.call("/safari/a2a-agent/create", {
            "agent_name": "dbexpert", "card_url": peer.base_url}, key=owner.key)
        assert agent_made.status == 200, agent_made.body
        llm.script = [
            Call("echo", {"text": "ping from the run"}),
            Call("dbexpert", {"message": "why is the database slow?"}),
            Call("dutyline_get_incident", {"incident_id": incident_id}),
            Answer("The database is slow; the DB expert agrees."),
        ]
        r = await rule(w)
        started = await api.call("/safari/automation/rule/run",
                                 {"rule_id": r["rule_id"], "context": {"ticket": 42}},
                                 key=owner.key)
        assert started.status == 200, started.body
        assert started.data["status"] == "queued" and started.data["trigger_kind"] == "manual"
        assert set(await run_jobs(api)) == {"done"}  # the run, and the incident's event
    run = await get_run(w, started.data["run_id"])
    assert run["status"] == "succeeded", run
    assert run["answer"] == "The database is slow; the DB expert agrees."
    assert run["started_at"] > 0 and run["finished_at"] >= run["started_at"]
    kinds = [s["kind"] for s in run["steps"]]
    assert kinds == ["llm_request", "llm_response", "tool_call", "tool_result"] * 3 + [
        "llm_request", "llm_response", "answer"]
    results = [s for s in run["steps"] if s["kind"] == "tool_result"]
    assert results[0]["content"] == "ping from the run"
    assert results[0]["name"].startswith("mcp") and results[0]["name"].endswith("echo")
    assert "echo: why is the database slow?" in results[1]["content"]
    assert "Database latency high" in results[2]["content"]
    # What the model saw: the prompt with the context, every kind of tool, and the results.
    first = llm.requests[0]
    assert first["model"] == "fake-model"
    assert "Look into the incident" in first["messages"][1]["content"]
    assert '"ticket": 42' in first["messages"][1]["content"]
    offered = llm.offered(0)
    assert any(n.endswith("_echo") for n in offered)
    assert any(n.endswith("dbexpert") for n in offered)
    assert {"dutyline_list_incidents", "dutyline_get_incident",
            "dutyline_incident_alerts"} <= set(offered)
    last = llm.requests[-1]["messages"]
    assert [m["role"] for m in last[-2:]] == ["assistant", "tool"]
    assert "Database latency high" in last[-1]["content"]


async def test_the_step_budget_withholds_tools_on_the_last_step(
    w: World, llm: FakeLlm
) -> None:
    llm.script = [Call("dutyline_list_incidents", {}) for _ in range(agent.MAX_STEPS + 2)]
    r = await rule(w)
    started = await w.api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                               key=w.owner.key)
    await run_jobs(w.api)
    run = await get_run(w, started.data["run_id"])
    assert len(llm.requests) == agent.MAX_STEPS
    assert llm.offered(agent.MAX_STEPS - 2) != []
    assert llm.offered(agent.MAX_STEPS - 1) == []
    assert (run["status"], run["answer"]) == ("succeeded", "answer without tools")


async def test_tool_errors_are_fed_back_and_llm_errors_fail_the_run(
    w: World, llm: FakeLlm
) -> None:
    llm.script = [Call("no_such_tool", {}), Call("dutyline_get_incident", {"incident_id": "x"}),
                  Status(500), Status(500), Status(500), Status(500)]
    r = await rule(w)
    started = await w.api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                               key=w.owner.key)
    await run_jobs(w.api)
    run = await get_run(w, started.data["run_id"])
    results = [s["content"] for s in run["steps"] if s["kind"] == "tool_result"]
    assert results[0] == "ERROR: there is no tool named no_such_tool"
    assert results[1].startswith("ERROR:")
    assert run["status"] == "failed"
    assert "HTTP 500" in run["error"]
    assert run["steps"][-1]["kind"] == "error"


async def test_the_deadline_ends_a_run(
    w: World, llm: FakeLlm, peers: Peers, monkeypatch: pytest.MonkeyPatch
) -> None:
    await w.api.call("/safari/mcp/server/create", {
        "server_name": "ops", "description": "Ops tools", "url": peers.http}, key=w.owner.key)
    monkeypatch.setattr(agent, "RUN_DEADLINE_S", 1.0)
    llm.script = [Call("slow", {"seconds": 30})]
    r = await rule(w)
    started = await w.api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                               key=w.owner.key)
    await run_jobs(w.api)
    run = await get_run(w, started.data["run_id"])
    assert run["status"] == "failed"
    assert "deadline" in run["error"]


async def test_without_an_llm_runs_fail_clearly(settings: Settings, clock: FakeClock) -> None:
    async with make_api(settings, clock=clock) as api:
        owner = await new_account(api, "Acme")
        made = await api.call("/safari/automation/rule/create", {
            "name": "r", "prompt": "p", "cron_expr": "9 * * *", "enabled": True},
            key=owner.key)
        assert made.status == 200
        started = await api.call("/safari/automation/rule/run",
                                 {"rule_id": made.data["rule_id"]}, key=owner.key)
        assert started.status == 200
        assert await run_jobs(api) == ["done"]
        got = await api.call("/safari/automation/run/get", {"run_id": started.data["run_id"]},
                             key=owner.key)
    assert got.data["status"] == "failed"
    assert "No LLM is configured" in got.data["error"]
    assert "DUTYLINE_LLM_BASE_URL" in got.data["steps"][0]["content"]


async def test_byoc_runs_fail_clearly(w: World) -> None:
    # A worknode of the account (a rule may name no other), with no runner connected.
    made = await w.api.call("/safari/worknode/create", {"name": "runner-7"}, key=w.owner.key)
    assert made.status == 200, made.body
    node = str(made.data["worknode_id"])
    r = await rule(w, environment_kind="byoc", environment_id=node)
    started = await w.api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                               key=w.owner.key)
    await run_jobs(w.api)
    run = await get_run(w, started.data["run_id"])
    assert run["status"] == "failed" and node in run["error"] and "offline" in run["error"]


# --- manual runs ----------------------------------------------------------------------------


async def test_manual_runs_once_a_minute_enabled_rules_only(
    w: World, clock: FakeClock, api: Api
) -> None:
    r = await rule(w)
    first = await api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                           key=w.owner.key)
    assert first.status == 200 and first.data["run_id"].startswith("trun_")
    again = await api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                           key=w.owner.key)
    assert (again.status, again.code) == (429, "RequestTooFrequently")
    clock.advance(60)
    later = await api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                           key=w.owner.key)
    assert later.status == 200
    off = await rule(w, enabled=False)
    refused = await api.call("/safari/automation/rule/run", {"rule_id": off["rule_id"]},
                             key=w.owner.key)
    assert (refused.status, refused.code) == (400, "InvalidParameter")
    stranger = await new_account(api, "Globex")
    hidden = await api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                            key=stranger.key)
    assert (hidden.status, hidden.code) == (400, "ResourceNotFound")
    member = await new_member(api, w.owner, name="Member")
    unseen = await api.call("/safari/automation/run/get", {"run_id": first.data["run_id"]},
                            key=member.key)
    assert (unseen.status, unseen.code) == (400, "ResourceNotFound")
    assert len(await runs_of(w, r["rule_id"])) == 2


# --- the HTTP POST trigger ------------------------------------------------------------------


async def http_rule(w: World, **extra: Any) -> tuple[dict[str, Any], str, str]:
    r = await rule(w, http_post_trigger_enabled=True, schedule_trigger_enabled=False, **extra)
    return r, r["http_post_trigger_id"], r["http_post_token"]


async def test_fire_queues_one_run_with_its_context(w: World, llm: FakeLlm) -> None:
    r, trigger_id, token = await http_rule(w)
    reply = await fire(w, trigger_id, token, {"text": "disk full", "host": "db-1"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert reply.headers["Service-Request-Id"] == body["request_id"]
    assert body["data"]["type"] == "routine_fire"
    assert body["data"]["run_id"].startswith("trun_")
    assert body["data"]["session_id"]
    [run] = await runs_of(w, r["rule_id"])
    assert (run["run_id"], run["trigger_kind"], run["trigger_id"], run["status"]) == (
        body["data"]["run_id"], "http_post", trigger_id, "queued")
    assert run["context"] == {"text": "disk full", "host": "db-1"}
    llm.script = [Answer("handled")]
    await run_jobs(w.api)
    done = await get_run(w, run["run_id"])
    assert done["status"] == "succeeded"
    assert "disk full" in llm.requests[0]["messages"][1]["content"]


async def test_fire_tokens(w: World) -> None:
    r, trigger_id, token = await http_rule(w)
    unknown = await fire(w, "atrig_" + "0" * 24, token)
    wrong = await fire(w, trigger_id, token + "x")
    missing = await fire(w, trigger_id, None)
    for refused in (unknown, wrong, missing):
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "Unauthorized"
    assert unknown.json()["error"]["message"] == wrong.json()["error"]["message"]
    assert (await fire(w, trigger_id, token)).status_code == 200  # now remembered as good
    rotated = await w.api.call("/safari/automation/rule/update", {
        "rule_id": r["rule_id"], "rotate_http_post_trigger_token": True}, key=w.owner.key)
    new_token = rotated.data["http_post_token"]
    assert (await fire(w, trigger_id, token)).status_code == 401  # the old one is dead
    assert (await fire(w, trigger_id, new_token)).status_code == 200
    # Another rule's token does not open this trigger.
    _, _, other_token = await http_rule(w)
    assert (await fire(w, trigger_id, other_token)).status_code == 401


async def test_fire_refuses_disabled_triggers_and_rules(w: World) -> None:
    r, trigger_id, token = await http_rule(w)
    await w.api.call("/safari/automation/rule/update", {
        "rule_id": r["rule_id"], "http_post_trigger_enabled": False}, key=w.owner.key)
    off = await fire(w, trigger_id, token)
    assert (off.status_code, off.json()["error"]["code"]) == (403, "AccessDenied")
    await w.api.call("/safari/automation/rule/update", {
        "rule_id": r["rule_id"], "http_post_trigger_enabled": True, "enabled": False},
        key=w.owner.key)
    rule_off = await fire(w, trigger_id, token)
    assert (rule_off.status_code, rule_off.json()["error"]["code"]) == (403, "AccessDenied")
    assert await runs_of(w, r["rule_id"]) == []


async def test_fire_body_rules(w: World) -> None:
    r, trigger_id, token = await http_rule(w)
    big = await w.api.raw("POST", f"/safari/automation/triggers/{trigger_id}/fire",
                          content=json.dumps({"text": "x" * 70_000}),
                          headers={"Authorization": f"Bearer {token}",
                                   "Content-Type": "application/json"})
    assert (big.status_code, big.json()["error"]["code"]) == (413, "EntityTooLarge")
    garbled = await w.api.raw("POST", f"/safari/automation/triggers/{trigger_id}/fire",
                              content=b"{not json", headers={
                                  "Authorization": f"Bearer {token}",
                                  "Content-Type": "application/json"})
    assert garbled.status_code == 400
    empty = await w.api.raw("POST", f"/safari/automation/triggers/{trigger_id}/fire",
                            headers={"Authorization": f"Bearer {token}"})
    assert empty.status_code == 200
    assert len(await runs_of(w, r["rule_id"])) == 1


async def test_fire_is_rate_limited_per_trigger(
    settings: Settings, llm: FakeLlm, clock: FakeClock
) -> None:
    limited = settings.with_(rate_limit_per_second=3, rate_limit_per_minute=1000)
    async with make_api(limited, clock=clock) as api:
        owner = await new_account(api, "Acme")
        w = World(api, owner, 0)
        _, first_id, first_token = await http_rule(w)
        clock.advance(1)
        _, second_id, second_token = await http_rule(w)
        clock.advance(1)
        codes = [(await fire(w, first_id, first_token)).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        # Another trigger has its own budget.
        assert (await fire(w, second_id, second_token)).status_code == 200
        clock.advance(1)
        assert (await fire(w, first_id, first_token)).status_code == 200


# --- the schedule trigger -------------------------------------------------------------------


async def test_each_due_time_creates_one_run_and_downtime_is_coalesced(
    w: World, clock: FakeClock
) -> None:
    r = await rule(w, cron_expr="* * * *")  # every hour at minute 0
    due_ms = r["schedule_next_fire_at_ms"]
    assert due_ms == 1_700_002_800_000  # 23:00 UTC
    worker = Worker(w.api.runtime, worker_id="sched")
    assert await worker.fire_schedules() == 0
    clock.set(due_ms / 1000)
    assert await worker.fire_schedules() == 1
    assert await worker.fire_schedules() == 0
    [run] = await runs_of(w, r["rule_id"])
    assert (run["trigger_kind"], run["due_at"], run["missed_fires"]) == ("schedule", due_ms, 0)
    assert run["trigger_id"] == r["schedule_trigger_id"]
    got = await w.api.call("/safari/automation/rule/get", {"rule_id": r["rule_id"]},
                           key=w.owner.key)
    assert got.data["schedule_next_fire_at_ms"] == due_ms + 3_600_000
    # Three hours of downtime: 00:00, 01:00 and 02:00 passed; one run stands for them.
    clock.set(due_ms / 1000 + 3 * 3600 + 30)
    assert await worker.fire_schedules() == 1
    latest = (await runs_of(w, r["rule_id"]))[0]
    assert (latest["due_at"], latest["missed_fires"]) == (due_ms + 3 * 3_600_000, 2)
    assert latest["context"] == {"due_at_ms": due_ms + 3 * 3_600_000, "missed_fires": 2}


# --- the on-call incident trigger -----------------------------------------------------------


async def test_a_matching_new_incident_fires_the_rule_once(w: World, api: Api) -> None:
    other = await api.call("/channel/create", {"channel_name": "Staging"}, key=w.owner.key)
    r = await rule(w, oncall_incident_trigger_enabled=True,
                   oncall_incident_channel_ids=[w.channel_id],
                   oncall_incident_severities=["Critical"], schedule_trigger_enabled=False)
    disabled = await rule(w, enabled=False, oncall_incident_trigger_enabled=True,
                          oncall_incident_channel_ids=[w.channel_id],
                          oncall_incident_severities=["Critical"])

    async def incident(channel_id: int, severity: str) -> str:
        made = await api.call("/incident/create", {
            "incident_severity": severity, "title": f"{severity} thing",
            "channel_id": channel_id}, key=w.owner.key)
        assert made.status == 200, made.body
        return str(made.data["incident_id"])

    matching = await incident(w.channel_id, "Critical")
    await incident(w.channel_id, "Info")
    await incident(other.data["channel_id"], "Critical")
    # Only the incident a rule matches queued a job for the trigger: the other two were
    # turned away in their own transaction (incident/events.py `wants`).
    async with api.runtime.db.connect() as conn:
        queued = (await conn.execute(select(job.c.payload).where(
            job.c.kind == "incident_event.automation.oncall_incident"))).scalars().all()
    assert len(queued) == 1
    # Run only the incident-event jobs (the runs they queue stay queued for this check).
    worker = Worker(api.runtime, worker_id="events")
    for j in await worker.claim(50):
        assert await worker.execute(j) == "done"
    runs = await runs_of(w, r["rule_id"])
    assert len(runs) == 1
    assert runs[0]["trigger_kind"] == "oncall_incident"
    assert runs[0]["context"]["incident_id"] == matching
    assert runs[0]["trigger_id"] == r["oncall_incident_trigger_id"]
    assert await runs_of(w, disabled["rule_id"]) == []


# --- a run whose worker dies ----------------------------------------------------------------


async def test_a_run_whose_worker_dies_is_retried_then_failed(
    w: World, clock: FakeClock
) -> None:
    r = await rule(w)
    started = await w.api.call("/safari/automation/rule/run", {"rule_id": r["rule_id"]},
                               key=w.owner.key)
    run_id = started.data["run_id"]
    worker = Worker(w.api.runtime, worker_id="doomed", lease_ms=1_000)
    for _ in range(2):  # both attempts "die": claimed, never finished, lease runs out
        assert len(await worker.claim(10)) == 1
        async with w.api.runtime.db.transaction() as conn:  # as if it had started
            await conn.execute(update(automation_run).where(
                automation_run.c.run_id == run_id).values(status="running"))
        clock.advance(2)
        await worker.reap()
    async with w.api.runtime.db.connect() as conn:
        row = (await conn.execute(select(automation_run).where(
            automation_run.c.run_id == run_id))).one()
    assert row.status == "failed"
    assert "worker stopped" in row.error
    assert row.finished_at > 0



async def test_incident_tools_read_with_the_rule_scope_not_the_whole_account(
    w: World, llm: FakeLlm, api: Api, clock: FakeClock
) -> None:
    insider = await new_member(api, w.owner, name="Insider")
    outsider = await new_member(api, w.owner, name="Outsider")
    team = await api.call("/team/upsert", {"team_name": "DB",
                                           "person_ids": [insider.person_id]}, key=w.owner.key)
    team_id = team.data["team_id"]
    secret = await api.call("/channel/create", {"channel_name": "Secret", "team_id": team_id,
                                                "is_private": True}, key=w.owner.key)
    assert secret.status == 200, secret.body
    made = await api.call("/incident/create", {
        "incident_severity": "Critical", "title": "secret database down",
        "channel_id": secret.data["channel_id"]}, key=w.owner.key)
    incident_id = made.data["incident_id"]

    async def read_as(who: Person, **extra: Any) -> str:
        body = {"name": "r", "prompt": "p", "cron_expr": "9 * * *", "enabled": True, **extra}
        r = await api.call("/safari/automation/rule/create", body, key=who.key)
        llm.script = [Call("dutyline_get_incident", {"incident_id": incident_id}),
                      Answer("ok")]
        started = await api.call("/safari/automation/rule/run", {"rule_id": r.data["rule_id"]},
                                 key=who.key)
        assert started.status == 200, started.body
        await run_jobs(api)
        got = await api.call("/safari/automation/run/get", {"run_id": started.data["run_id"]},
                             key=who.key)
        [result] = [s["content"] for s in got.data["steps"] if s["kind"] == "tool_result"]
        return str(result)

    # A member outside the channel's team: the personal rule reads as its creator.
    hidden = await read_as(outsider)
    assert hidden.startswith("ERROR") and "secret database down" not in hidden
    # The team's rule, and the insider's personal rule, see the team's private channel.
    assert "secret database down" in await read_as(w.owner, team_id=team_id)
    assert "secret database down" in await read_as(insider)
