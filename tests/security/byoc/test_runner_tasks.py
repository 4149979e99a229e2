"""A runner answers only the tasks sent to its own worknode: another account's runner that
learns a task id cannot put a result or output into it. Two accounts, two real runner peers
over the WebSocket."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.aisre.test_runners import (
    World,
    _true,
    call,
    info,
    online_peer,
    run_jobs,
    wait_for,
    worknode_with_key,
)
from tests.fixtures.accounts import new_account
from tests.fixtures.fake_llm import Answer, Call, FakeLlm

pytestmark = pytest.mark.anyio


async def test_another_accounts_runner_cannot_answer_a_task(w: World, llm: FakeLlm) -> None:
    node_a, key_a = await worknode_with_key(w, name="acme-runner")
    globex = await new_account(w.api, "Globex")
    wb = World(w.api, w.host, globex, w.workspace / "b")
    wb.workspace.mkdir()
    node_b = await call(w, "/safari/worknode/create", {"name": "globex-runner"},
                        key=globex.key)
    key_b = (await call(w, "/safari/runner/key/create", {"worknode_id": node_b["worknode_id"]},
                        key=globex.key))["key"]
    llm.script = [Call("runner_bash", {"command": "uname -a"}), Answer("checked")]
    rule = await call(w, "/safari/automation/rule/create", {
        "name": "Check", "prompt": "Look", "cron_expr": "9 * * *", "enabled": True,
        "environment_kind": "byoc", "environment_id": node_a["worknode_id"]})
    async with online_peer(w, key_a) as a, online_peer(wb, key_b) as b:
        a.hang_on.add("uname -a")  # A answers below, by hand, after B's forgeries
        started = await call(w, "/safari/automation/rule/run", {"rule_id": rule["rule_id"]})
        worker = asyncio.create_task(run_jobs(w.api.runtime))
        await wait_for(lambda: _true(bool(a.requests)))
        task_id = a.requests[0]["task_id"]
        await b.send("task.output", {"task_id": task_id, "stream": "stdout",
                                     "data": "forged output\n"})
        await b.send("task.result", {"task_id": task_id, "source_instance_id": "x",
                                     "success": True, "exit_code": 0, "error": "",
                                     "result": {"stdout": "forged", "stderr": "",
                                                "exit_code": 0}})
        # B's frames are handled in order: once this heartbeat is recorded, so were they.
        await b.heartbeat(version="v-after-forgery")

        async def b_done() -> bool:
            return (await info(wb, node_b["worknode_id"]))["version"] == "v-after-forgery"

        await wait_for(b_done)
        assert not worker.done()  # the task still waits for its own runner
        await a.send("task.output", {"task_id": task_id, "stream": "stdout",
                                     "data": "Linux acme\n"})
        await a.send("task.result", {"task_id": task_id, "source_instance_id": "x",
                                     "success": True, "exit_code": 0, "error": "",
                                     "result": {"stdout": "Linux acme\n", "stderr": "",
                                                "exit_code": 0}})
        await asyncio.wait_for(worker, 30)
    run = await call(w, "/safari/automation/run/get", {"run_id": started["run_id"]})
    assert run["status"] == "succeeded", run
    outputs = [json.loads(s["content"]) for s in run["steps"] if s["kind"] == "tool_output"]
    assert outputs == [{"stream": "stdout", "data": "Linux acme\n"}]
    result = next(s["content"] for s in run["steps"] if s["kind"] == "tool_result")
    assert result == "exit_code: 0\nstdout:\nLinux acme\n"
    assert "forged" not in json.dumps(run)
    assert b.requests == []
