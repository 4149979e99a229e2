"""BYOC across real server processes: two `dutyline serve` processes on one database; the
runner peer connects to the first (which runs no workers), the run executes in the second
(workers on), so its shell task reaches the runner through the runner_task rows: by polling
alone, by Redis rings with polling out of the way, and by polling when Redis is down."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.aisre.runner_peer import runner_peer
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.fake_llm import Answer, Call, fake_llm
from tests.fixtures.server import free_port, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]


async def post(client: httpx.AsyncClient, path: str, key: str, body: dict[str, Any]) -> Any:
    reply = await client.post(path, params={"app_key": key}, json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


async def remote_run(
    owner: Person, database_url: str, tmp_path: Path, extra_env: dict[str, str]
) -> tuple[dict[str, Any], Any]:
    """A byoc run executed by one process with its runner held by the other; (run, peer)."""
    with fake_llm() as llm:
        llm.script = [Call("runner_bash", {"command": "echo from-the-runner"}),
                      Answer("done remotely")]
        env = {
            "DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_SECRET_KEY": "test-secret-key",
            "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1", "DUTYLINE_LLM_BASE_URL": llm.base_url,
            "DUTYLINE_LLM_API_KEY": llm.api_key, "DUTYLINE_LLM_MODEL": "fake-model",
            "DUTYLINE_RATE_LIMIT_PER_SECOND": "0", "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
            **extra_env,
        }
        with running_server({**env, "DUTYLINE_RUN_WORKERS": "0"}) as holder, \
                running_server({**env, "DUTYLINE_RUN_WORKERS": "1"}) as worker:
            async with httpx.AsyncClient(base_url=worker.base_url, trust_env=False,
                                         timeout=10) as client:
                node = await post(client, "/safari/worknode/create", owner.key,
                                  {"name": "edge"})
                made = await post(client, "/safari/runner/key/create", owner.key,
                                  {"worknode_id": node["worknode_id"]})
                host = holder.base_url.removeprefix("http://")
                async with runner_peer(host, made["key"], tmp_path) as peer:
                    await peer.heartbeat(environment={"os": "linux"})
                    for _ in range(250):
                        seen = await post(client, "/safari/worknode/info", owner.key,
                                          {"worknode_id": node["worknode_id"]})
                        if seen["online"]:
                            break
                        await asyncio.sleep(0.02)
                    assert seen["online"], seen
                    rule = await post(client, "/safari/automation/rule/create", owner.key, {
                        "name": "Remote", "prompt": "Check", "cron_expr": "9 * * *",
                        "enabled": True, "environment_kind": "byoc",
                        "environment_id": node["worknode_id"]})
                    started = await post(client, "/safari/automation/rule/run", owner.key,
                                         {"rule_id": rule["rule_id"]})
                    for _ in range(300):
                        run = await post(client, "/safari/automation/run/get", owner.key,
                                         {"run_id": started["run_id"]})
                        if run["status"] in ("succeeded", "failed"):
                            break
                        await asyncio.sleep(0.1)
            assert run["status"] == "succeeded", (run, worker.stderr(), holder.stderr())
    return run, peer


def assert_ran_on_the_runner(run: dict[str, Any], peer: Any) -> None:
    assert run["answer"] == "done remotely"
    # Sent by the process that holds the socket, not the one that ran the loop.
    assert len(peer.requests) == 1 and peer.requests[0]["operation"] == "bash"
    outputs = [json.loads(s["content"]) for s in run["steps"] if s["kind"] == "tool_output"]
    assert outputs == [{"stream": "stdout", "data": "from-the-runner\n"}]
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result == "exit_code: 0\nstdout:\nfrom-the-runner\n"


async def test_a_run_in_one_process_uses_a_runner_held_by_another(
    api: Api, owner: Person, database_url: str, tmp_path: Path
) -> None:
    run, peer = await remote_run(owner, database_url, tmp_path, {})
    assert_ran_on_the_runner(run, peer)


async def test_with_redis_rings_carry_the_task_both_ways(
    api: Api, owner: Person, database_url: str, tmp_path: Path, redis_server: str
) -> None:
    """Polling every hour: the holder can only learn of the task, and the requester of its
    output and result, from the Redis rings (the run waits 30 s at most)."""
    run, peer = await remote_run(owner, database_url, tmp_path, {
        "DUTYLINE_REDIS_URL": redis_server, "DUTYLINE_RUNNER_RELAY_POLL_SECONDS": "3600"})
    assert_ran_on_the_runner(run, peer)


async def test_with_redis_down_polling_still_carries_the_task(
    api: Api, owner: Person, database_url: str, tmp_path: Path
) -> None:
    """No Redis answers at the configured URL: no ring is heard, nothing is lost."""
    run, peer = await remote_run(owner, database_url, tmp_path, {
        "DUTYLINE_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    assert_ran_on_the_runner(run, peer)
