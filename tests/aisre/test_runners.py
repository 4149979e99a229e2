"""BYOC runners end to end: a runner peer written from the published runner's protocol
(runner_peer.py) connects over a real WebSocket to the app served by uvicorn on loopback.

Worknodes and keys (shown once, hashed at rest, revocable), welcome and heartbeats (online
state, version, environment), a byoc rule's run routing shell, file and MCP tasks to the runner
with its output streamed into the run's steps, a timeout cancelling the task with task.cancel,
an offline runner failing the run clearly, and a task relayed through the database from a
second server process to the one holding the runner's socket."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import select, update
from websockets.exceptions import InvalidStatus

from dutyline.aisre.automation import runner_tools
from dutyline.aisre.runner.hub import hub_of
from dutyline.config import Settings
from dutyline.db.tables.runner import runner_key, runner_task, runner_worknode
from dutyline.work.worker import Worker
from tests.aisre.runner_peer import RunnerPeer, runner_peer
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_llm import Answer, Call, FakeLlm, fake_llm
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio
START = 1_700_000_000.0


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    with fake_llm() as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def llm_settings(settings: Settings, llm: FakeLlm) -> Settings:
    return settings.with_(llm_base_url=llm.base_url, llm_api_key=llm.api_key,
                          llm_model="fake-model")


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """The app (its lifespan already running) served by uvicorn on a loopback port, in this
    event loop, so the test, the workers and the WebSocket share one runtime."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off",
                                           log_level="warning", ws="auto"))
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    assert server.started
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)


@dataclass
class World:
    api: Api
    host: str
    owner: Person
    workspace: Path


@pytest.fixture
async def w(llm_settings: Settings, clock: FakeClock, tmp_path: Path) -> AsyncIterator[World]:
    async with make_api(llm_settings, clock=clock) as api, serving(api.app) as host:
        owner = await new_account(api, "Acme")
        yield World(api, host, owner, tmp_path)


async def call(w: World, path: str, body: dict[str, Any], key: str | None = None) -> Any:
    reply = await w.api.call(path, body, key=key or w.owner.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


async def worknode_with_key(w: World, name: str = "dc1-runner",
                            labels: list[str] | None = None) -> tuple[dict[str, Any], str]:
    node = await call(w, "/safari/worknode/create", {"name": name,
                                                     "labels": labels or ["dc:1"]})
    made = await call(w, "/safari/runner/key/create", {"worknode_id": node["worknode_id"],
                                                        "name": "prod"})
    return node, made["key"]


async def info(w: World, worknode_id: str) -> dict[str, Any]:
    return dict(await call(w, "/safari/worknode/info", {"worknode_id": worknode_id}))


async def wait_for(predicate: Any, within_s: float = 5.0) -> None:
    for _ in range(int(within_s / 0.02)):
        if await predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def run_jobs(runtime: Any) -> list[str]:
    worker = Worker(runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


async def byoc_run(w: World, worknode_id: str, *, runtime: Any = None) -> dict[str, Any]:
    rule = await call(w, "/safari/automation/rule/create", {
        "name": "Check the box", "prompt": "Look at the host", "cron_expr": "9 * * *",
        "enabled": True, "environment_kind": "byoc", "environment_id": worknode_id})
    started = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]})
    await run_jobs(runtime or w.api.runtime)
    return dict(await call(w, "/safari/automation/run/get", {"run_id": started["run_id"]}))


# --- keys and worknodes ---------------------------------------------------------------------


async def test_a_key_is_shown_once_and_stored_as_a_hash(w: World) -> None:
    node, key = await worknode_with_key(w)
    assert key.startswith("wnt_") and len(key) > 40
    listed = await call(w, "/safari/runner/key/list", {"worknode_id": node["worknode_id"]})
    assert listed["total"] == 1
    item = listed["items"][0]
    assert "key" not in item and item["key_suffix"] == key[-4:] and not item["revoked"]
    async with w.api.runtime.db.transaction(write=False) as conn:
        rows = (await conn.execute(select(runner_key))).all()
    assert [r.key_hash for r in rows] == [hashlib.sha256(key.encode()).hexdigest()]
    assert all(key not in str(value) for r in rows for value in r)
    assert (await info(w, node["worknode_id"]))["key_count"] == 1


async def test_only_owners_and_admins_manage_runners_and_accounts_are_apart(w: World) -> None:
    node, _ = await worknode_with_key(w)
    member = await new_member(w.api, w.owner)
    refused = await w.api.call("/safari/worknode/create", {"name": "x"}, key=member.key)
    assert (refused.status, refused.code) == (403, "AccessDenied")
    refused = await w.api.call("/safari/runner/key/create",
                               {"worknode_id": node["worknode_id"]}, key=member.key)
    assert refused.status == 403
    # Members may list and read worknodes, to pick one for a rule.
    assert (await call(w, "/safari/worknode/list", {}, key=member.key))["total"] == 1
    other = await new_account(w.api, "Globex")
    missing = await w.api.call("/safari/worknode/info", {"worknode_id": node["worknode_id"]},
                               key=other.key)
    assert (missing.status, missing.code) == (400, "ResourceNotFound")
    duplicate = await w.api.call("/safari/worknode/create", {"name": "DC1-runner"},
                                 key=w.owner.key)
    assert duplicate.code == "InvalidParameter"
    updated = await call(w, "/safari/worknode/update", {
        "worknode_id": node["worknode_id"], "labels": ["dc:2", "dc:2", "gpu"]})
    assert updated["labels"] == ["dc:2", "gpu"] and updated["name"] == "dc1-runner"


# --- the connection -------------------------------------------------------------------------


async def test_welcome_and_heartbeats_set_the_online_state(w: World) -> None:
    node, key = await worknode_with_key(w, labels=["dc:1", "linux"])
    worknode_id = node["worknode_id"]
    assert (await info(w, worknode_id))["online"] is False
    async with runner_peer(w.host, key, w.workspace) as peer:
        # welcome: WelcomePayload, plus worknode_id at the top (older runners read it there)
        # and in the X-Worknode-ID response header.
        assert peer.welcome["worknode_id"] == worknode_id
        assert peer.welcome["name"] == "dc1-runner"
        assert peer.welcome["labels"] == ["dc:1", "linux"]
        assert peer.welcome["_top_level_worknode_id"] == worknode_id
        assert peer.welcome["_header_worknode_id"] == worknode_id
        before = await info(w, worknode_id)
        assert before["online"] is False and before["connected_at"] > 0  # no heartbeat yet
        await peer.heartbeat(environment={"os": "linux", "arch": "amd64", "hostname": "db-7",
                                          "num_cpu": 8})

        async def online() -> bool:
            return bool((await info(w, worknode_id))["online"])

        await wait_for(online)
        seen = await info(w, worknode_id)
        assert seen["version"] == "v0.3.1"
        assert seen["environment"]["hostname"] == "db-7"
        listed = await call(w, "/safari/worknode/list", {"online": True})
        assert [n["worknode_id"] for n in listed["items"]] == [worknode_id]
        # Three missed heartbeats (90 s) and it counts as offline, socket or not.
        clock: FakeClock = w.api.runtime.clock
        clock.advance(91)
        assert (await info(w, worknode_id))["online"] is False
        await peer.heartbeat()
        await wait_for(online)

    async def offline() -> bool:
        row = await info(w, worknode_id)
        return not row["online"] and row["disconnected_at"] > 0

    await wait_for(offline)


async def test_the_legacy_path_and_header_are_accepted(w: World) -> None:
    node, key = await worknode_with_key(w)
    async with runner_peer(w.host, key, w.workspace, path="/runner/ws",
                           legacy_header=True) as peer:
        assert peer.worknode_id == node["worknode_id"]
        # An older runner reports its own configured name and labels: kept beside ours.
        await peer.send("heartbeat", {"worknode_id": peer.worknode_id, "name": "db-host",
                                      "labels": ["role:db", "os:linux"], "version": "v0.1.0"})

        async def reported() -> bool:
            return bool((await info(w, node["worknode_id"]))["runner_labels"])

        await wait_for(reported)
        seen = await info(w, node["worknode_id"])
        assert (seen["runner_name"], seen["runner_labels"]) == ("db-host", ["role:db", "os:linux"])
        assert seen["name"] == "dc1-runner" and seen["online"] and seen["version"] == "v0.1.0"


async def test_unknown_and_revoked_keys_are_refused(w: World) -> None:
    node, key = await worknode_with_key(w)
    with pytest.raises(InvalidStatus) as refused:
        async with runner_peer(w.host, "wnt_" + "x" * 43, w.workspace):
            pass
    assert refused.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        async with runner_peer(w.host, key[:-1], w.workspace):
            pass
    async with runner_peer(w.host, key, w.workspace) as peer:
        listed = await call(w, "/safari/runner/key/list", {"worknode_id": node["worknode_id"]})
        await call(w, "/safari/runner/key/revoke", {"key_id": listed["items"][0]["key_id"]})
        # A connected runner is dropped at its next heartbeat.
        await peer.heartbeat()
        await asyncio.wait_for(peer.closed.wait(), 5)
    with pytest.raises(InvalidStatus) as refused:
        async with runner_peer(w.host, key, w.workspace):
            pass
    assert refused.value.response.status_code == 403
    revoked = await call(w, "/safari/runner/key/list", {"include_revoked": True})
    assert revoked["items"][0]["revoked"] is True and revoked["items"][0]["revoked_at"] > 0


async def test_a_flood_of_wrong_keys_is_refused_from_memory(w: World) -> None:
    """Failed runner authentication is cheap and bounded, as for app keys: a wrong key just
    refused, or a malformed one, is refused without a database statement; a key created
    after its value missed works at once; a revoked key is never cached as good."""
    from sqlalchemy import event

    from dutyline.aisre.runner import keys

    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        # The process's change-signal poll (db/signals.py) runs on its own schedule meanwhile.
        if "change_signal" not in statement:
            statements.append(statement)

    engine = w.api.runtime.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    wrong = "wnt_" + secrets.token_urlsafe(32)  # the cache is per process: a fresh value
    try:
        with pytest.raises(InvalidStatus):
            async with runner_peer(w.host, wrong, w.workspace):
                pass
        assert statements, "the first miss is looked up"
        statements.clear()
        for presented in [wrong] * 20 + ["not-a-runner-key", "wnt_" + "y" * 300]:
            with pytest.raises(InvalidStatus) as refused:
                async with runner_peer(w.host, presented, w.workspace):
                    pass
            assert refused.value.response.status_code == 403
        assert statements == []
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert keys.MISSED.recently_missed(keys.key_hash(wrong), w.api.runtime.clock.now())
    assert len(keys.MISSED) <= keys.MAX_MISSES



async def test_a_key_created_after_its_value_missed_works_at_once(
    w: World, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dutyline.aisre.runner import keys

    value = "wnt_" + secrets.token_urlsafe(32)
    with pytest.raises(InvalidStatus):
        async with runner_peer(w.host, value, w.workspace):
            pass
    assert keys.MISSED.recently_missed(keys.key_hash(value), w.api.runtime.clock.now())
    monkeypatch.setattr(keys, "new_key", lambda: value)
    _, key = await worknode_with_key(w)
    assert key == value
    async with runner_peer(w.host, key, w.workspace):
        pass


# --- runs -----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def online_peer(w: World, key: str) -> AsyncIterator[RunnerPeer]:
    async with runner_peer(w.host, key, w.workspace) as peer:
        await peer.heartbeat(environment={"os": "linux"})

        async def online() -> bool:
            return bool((await info(w, peer.worknode_id))["online"])

        await wait_for(online)
        yield peer


async def test_a_byoc_run_runs_shell_and_file_tasks_on_the_runner(
    w: World, llm: FakeLlm
) -> None:
    node, key = await worknode_with_key(w)
    (w.workspace / "app.log").write_text("ERROR disk full\n")
    llm.script = [
        Call("runner_bash", {"command": "echo hello; echo world >&2; echo bye"}),
        Call("runner_read", {"path": "app.log"}),
        Call("runner_write", {"path": "note.txt", "content": "checked"}),
        Answer("The disk is full."),
    ]
    async with online_peer(w, key) as peer:
        run = await byoc_run(w, node["worknode_id"])
    assert run["status"] == "succeeded", run
    assert run["answer"] == "The disk is full."
    assert {"runner_bash", "runner_read", "runner_write", "runner_list", "runner_glob",
            "runner_grep", "runner_webfetch"} <= set(llm.offered(0))
    assert [r["operation"] for r in peer.requests] == ["bash", "read", "write"]
    assert peer.requests[0]["args"]["command"] == "echo hello; echo world >&2; echo bye"
    # The runner's streamed output, as it came, in the run's steps before the result.
    kinds = [(s["kind"], s["name"]) for s in run["steps"]]
    first_result = kinds.index(("tool_result", "runner_bash"))
    outputs = [json.loads(s["content"]) for s in run["steps"][:first_result]
               if s["kind"] == "tool_output"]
    assert outputs == [{"stream": "stdout", "data": "hello\n"},
                       {"stream": "stdout", "data": "bye\n"}]
    results = [s["content"] for s in run["steps"] if s["kind"] == "tool_result"]
    assert results[0] == "exit_code: 0\nstdout:\nhello\nbye\n\nstderr:\nworld\n"
    assert results[1] == "ERROR disk full\n"
    assert results[2] == "wrote 7 bytes"
    assert (w.workspace / "note.txt").read_text() == "checked"
    async with w.api.runtime.db.transaction(write=False) as conn:
        tasks = (await conn.execute(select(runner_task).order_by(runner_task.c.created_at))).all()
    assert [t.status for t in tasks] == ["succeeded"] * 3
    assert {t.run_id for t in tasks} == {run["run_id"]}


async def test_a_task_past_its_timeout_is_cancelled_on_the_runner(
    w: World, llm: FakeLlm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_tools, "GRACE_S", 0.3)
    node, key = await worknode_with_key(w)
    llm.script = [Call("runner_bash", {"command": "sleep 30", "timeout": 1}),
                  Answer("It hung.")]
    async with online_peer(w, key) as peer:
        peer.hang_on.add("sleep 30")
        run = await byoc_run(w, node["worknode_id"])
        await wait_for(lambda: _true(bool(peer.cancelled)))
    assert peer.cancelled == [peer.requests[0]["task_id"]]
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result == ("ERROR: the runner did not finish within 1.3 s; the task was cancelled "
                      "on the runner")
    assert run["status"] == "succeeded" and run["answer"] == "It hung."
    async with w.api.runtime.db.transaction(write=False) as conn:
        status = (await conn.execute(select(runner_task.c.status))).scalar_one()
    assert status == "timed_out"


async def _true(value: bool) -> bool:
    return value


async def test_a_run_whose_runner_is_offline_fails_clearly(w: World, llm: FakeLlm) -> None:
    node, _ = await worknode_with_key(w, name="edge-7")
    run = await byoc_run(w, node["worknode_id"])
    assert run["status"] == "failed"
    assert run["error"].startswith("The run could not start: the BYOC runner of worknode "
                                   "'edge-7'")
    assert "offline" in run["error"]
    assert run["steps"][-1]["kind"] == "error" and run["steps"][-1]["name"] == "environment"
    assert llm.requests == []  # the model is never asked
    clock: FakeClock = w.api.runtime.clock
    clock.advance(61)  # manual runs: one a minute per rule
    # A worknode deleted after the rule named it: the run fails, naming the cause.
    gone, _ = await worknode_with_key(w, name="edge-8")
    rule = await call(w, "/safari/automation/rule/create", {
        "name": "Orphan", "prompt": "Look", "cron_expr": "9 * * *", "enabled": True,
        "environment_kind": "byoc", "environment_id": gone["worknode_id"]})
    await call(w, "/safari/worknode/delete", {"worknode_id": gone["worknode_id"]})
    started = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]})
    await run_jobs(w.api.runtime)
    unknown = await call(w, "/safari/automation/run/get", {"run_id": started["run_id"]})
    assert unknown["status"] == "failed" and "names no worknode" in unknown["error"]


async def test_mcp_servers_on_the_runner_are_listed_and_called_through_it(
    w: World, llm: FakeLlm
) -> None:
    node, key = await worknode_with_key(w)
    made = await w.api.call("/safari/mcp/server/create", {
        "server_name": "k8s", "description": "Cluster", "transport": "stdio",
        "url": "kubectl-mcp --read-only",
        "environment_kind": "byoc", "environment_id": node["worknode_id"]}, key=w.owner.key)
    assert made.status == 200, made.body
    llm.script = [Call("pods", {"namespace": "db"}), Answer("3 pods")]
    async with online_peer(w, key) as peer:
        peer.mcp_tools = [{"name": "pods", "description": "List pods",
                           "input_schema": {"type": "object", "properties": {
                               "namespace": {"type": "string"}}}}]
        run = await byoc_run(w, node["worknode_id"])
    assert run["status"] == "succeeded", run
    assert "rmcp1_pods" in llm.offered(0)
    assert peer.mcp_calls[0]["server"] == {"name": "k8s", "transport": "stdio",
                                           "command": "kubectl-mcp", "args": ["--read-only"]}
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result == 'k8s:pods -> {"namespace": "db"}'


async def test_an_mcp_call_frame_is_answered_with_mcp_result(w: World) -> None:
    node, key = await worknode_with_key(w)
    async with online_peer(w, key) as peer:
        outcome = await hub_of(w.api.runtime).mcp_call(
            node["worknode_id"], server={"name": "k8s", "transport": "stdio",
                                         "command": "kubectl-mcp"},
            tool_name="pods", arguments={"namespace": "db"}, timeout_s=5)
    assert outcome.success and outcome.result == {"content": "k8s:pods"}
    assert peer.mcp_calls[0]["arguments"] == {"namespace": "db"}
    assert peer.mcp_calls[0]["call_id"].startswith("mcall_")


async def test_a_task_is_relayed_to_the_process_holding_the_runner(
    w: World, llm: FakeLlm, llm_settings: Settings, clock: FakeClock
) -> None:
    """A second server process (its own app, hub and engine on the same database) runs the
    agent loop; the runner is connected to the first one: the task goes through the
    runner_task row, and its output and result come back the same way."""
    node, key = await worknode_with_key(w)
    llm.script = [Call("runner_bash", {"command": "echo relayed"}), Answer("ok")]
    async with online_peer(w, key) as peer, make_api(llm_settings, clock=clock) as second:
        assert second.runtime.runner_hub is None or not second.runtime.runner_hub.connections
        run = await byoc_run(w, node["worknode_id"], runtime=second.runtime)
    assert run["status"] == "succeeded", run
    assert peer.requests[0]["source_instance_id"] == w.api.runtime.runner_hub.holder
    outputs = [json.loads(s["content"]) for s in run["steps"] if s["kind"] == "tool_output"]
    assert outputs == [{"stream": "stdout", "data": "relayed\n"}]
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result == "exit_code: 0\nstdout:\nrelayed\n"


async def test_a_deleted_worknode_drops_its_runner(w: World) -> None:
    node, key = await worknode_with_key(w)
    async with online_peer(w, key) as peer:
        await call(w, "/safari/worknode/delete", {"worknode_id": node["worknode_id"]})
        await peer.heartbeat()
        await asyncio.wait_for(peer.closed.wait(), 5)
    async with w.api.runtime.db.transaction(write=False) as conn:
        assert (await conn.execute(select(runner_worknode))).all() == []
        assert (await conn.execute(select(runner_key))).all() == []
    with pytest.raises(InvalidStatus):
        async with runner_peer(w.host, key, w.workspace):
            pass


async def test_a_stale_holder_does_not_keep_a_worknode_online(w: World) -> None:
    """A process that died while holding a socket leaves `holder` set; without heartbeats
    the worknode still reads offline."""
    node, _ = await worknode_with_key(w)
    async with w.api.runtime.db.transaction(write=True) as conn:
        await conn.execute(update(runner_worknode).values(
            holder="dead-host:1:abcd", last_heartbeat_at=int(START * 1000) - 100_000))
    assert (await info(w, node["worknode_id"]))["online"] is False


async def test_a_relayed_task_past_its_timeout_is_cancelled_by_the_holder(
    w: World, llm: FakeLlm, llm_settings: Settings, clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner_tools, "GRACE_S", 0.3)
    node, key = await worknode_with_key(w)
    llm.script = [Call("runner_bash", {"command": "sleep 30", "timeout": 1}), Answer("hung")]
    async with online_peer(w, key) as peer, make_api(llm_settings, clock=clock) as second:
        peer.hang_on.add("sleep 30")
        run = await byoc_run(w, node["worknode_id"], runtime=second.runtime)
        await wait_for(lambda: _true(bool(peer.cancelled)))
    assert peer.cancelled == [peer.requests[0]["task_id"]]
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result.startswith("ERROR: the runner did not finish within 1.3 s")
    async with w.api.runtime.db.transaction(write=False) as conn:
        row = (await conn.execute(select(runner_task))).one()
    assert (row.status, row.cancel_requested) == ("timed_out", False)
