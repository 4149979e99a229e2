"""A2aGateway.send against real a2a-sdk agents: messages and tasks, streaming or not, the
legacy v0.3 protocol, credentials, deadlines, truncation and one clear error for failures."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.aisre.a2a.gateway import A2aError, A2aGateway
from dutyline.aisre.a2a.service import A2aTarget, enabled_targets
from dutyline.api.actor import Actor
from dutyline.kit.outbound import OutboundPolicy
from tests.aisre.a2a_peers import a2a_peer
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

OPEN = OutboundPolicy(allow_private=True)


async def register(api: Api, who: Person, card_url: str, **fields: Any) -> str:
    body = {"agent_name": "Peer", "card_url": card_url, **fields}
    made = await api.call("/safari/a2a-agent/create", body, key=who.key)
    assert made.status == 200, made.body
    return str(made.data["agent_id"])


async def target(api: Api, who: Person, agent_id: str, team_id: int = 0) -> A2aTarget:
    async with api.runtime.db.connect() as conn:
        found = await enabled_targets(conn, Actor.system(who.account_id, api.runtime.clock),
                                      team_id=team_id, deps=api.runtime.deps)
    return next(t for t in found if t.agent_id == agent_id)


@pytest.mark.parametrize("streaming", [False, True])
async def test_message_and_task_replies(api: Api, owner: Person, streaming: bool) -> None:
    async with a2a_peer() as peer:
        agent = await target(api, owner, await register(api, owner, peer.base_url,
                                                        streaming=streaming))
        gateway = A2aGateway(OPEN, timeout=10)
        reply = await gateway.send(agent, "hello")
        assert reply.text == "echo: hello" and reply.state == "message"
        assert reply.context_id and not reply.truncated
        follow = await gateway.send(agent, "again", context_id=reply.context_id)
        assert follow.context_id == reply.context_id
        assert peer.executor.seen_contexts[-1] == reply.context_id

        task = await gateway.send(agent, "task: summarize the incident")
        assert task.text == "done: summarize the incident"
        assert task.state == "completed" and task.task_id


async def test_failed_task_is_one_clear_error(api: Api, owner: Person) -> None:
    async with a2a_peer() as peer:
        agent = await target(api, owner, await register(api, owner, peer.base_url,
                                                        streaming=True))
        with pytest.raises(A2aError, match="the task failed: could not do it"):
            await A2aGateway(OPEN, timeout=10).send(agent, "fail: now")


async def test_legacy_v0_3_agent(api: Api, owner: Person) -> None:
    async with a2a_peer(name="Old", legacy=True) as old:
        agent = await target(api, owner, await register(api, owner, old.base_url))
        gateway = A2aGateway(OPEN, timeout=10)
        assert (await gateway.send(agent, "hi")).text == "echo: hi"
        assert (await gateway.send(agent, "task: x")).text == "done: x"


async def test_credentials_are_sent(api: Api, owner: Person) -> None:
    async with a2a_peer(bearer="b-tok") as bearer, \
            a2a_peer(api_key=("X-Agent-Key", "k-1")) as keyed:
        with_bearer = await target(api, owner, await register(
            api, owner, bearer.base_url, auth_type="bearer", auth_config={"token": "b-tok"}))
        with_key = await target(api, owner, await register(
            api, owner, keyed.base_url, auth_type="api_key",
            auth_config={"header_name": "X-Agent-Key", "api_key": "k-1"}))
        gateway = A2aGateway(OPEN, timeout=10)
        assert (await gateway.send(with_bearer, "a")).text == "echo: a"
        assert (await gateway.send(with_key, "b")).text == "echo: b"
        # The stored token changed on the agent's side: a clear 401, not a stack of groups.
        agent_id = with_bearer.agent_id
        upd = await api.call("/safari/a2a-agent/update",
                             {"agent_id": agent_id, "auth_config": {"token": "stale"}},
                             key=owner.key)
        assert upd.status == 200
        stale = await target(api, owner, agent_id)
        with pytest.raises(A2aError, match="401"):
            await gateway.send(stale, "c")


@pytest.mark.parametrize("streaming", [False, True])
async def test_deadline(api: Api, owner: Person, streaming: bool) -> None:
    async with a2a_peer() as peer:
        agent = await target(api, owner, await register(api, owner, peer.base_url,
                                                        streaming=streaming))
        with pytest.raises(A2aError, match=r"timed out after 0\.5 s"):
            await A2aGateway(OPEN, timeout=0.5).send(agent, "hang: forever")


async def test_unreachable_and_guarded(api: Api, owner: Person) -> None:
    async with a2a_peer() as peer:
        agent = await target(api, owner, await register(api, owner, peer.base_url))
        with pytest.raises(A2aError, match="outbound guard"):
            await A2aGateway(OutboundPolicy(allow_private=False), timeout=5).send(agent, "x")
    with pytest.raises(A2aError, match="connection refused"):
        await A2aGateway(OPEN, timeout=5).send(agent, "x")


async def test_output_is_truncated(api: Api, owner: Person) -> None:
    async with a2a_peer() as peer:
        agent = await target(api, owner, await register(api, owner, peer.base_url))
        reply = await A2aGateway(OPEN, timeout=10, max_output_chars=8).send(agent, "x" * 50)
    assert reply.truncated
    assert reply.text.startswith("echo: xx") and "[truncated: 48 more characters]" in reply.text


async def test_enabled_targets_follow_status_and_scope(api: Api, owner: Person) -> None:
    team_id = (await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)
               ).data["team_id"]
    other_team = (await api.call("/team/upsert", {"team_name": "DBA"}, key=owner.key)
                  ).data["team_id"]
    async with a2a_peer() as peer:
        account = await register(api, owner, peer.base_url)
        mine = await register(api, owner, peer.base_url, team_id=team_id)
        theirs = await register(api, owner, peer.base_url, team_id=other_team)
        off = await register(api, owner, peer.base_url)
        await api.call("/safari/a2a-agent/disable", {"agent_id": off}, key=owner.key)
    async with api.runtime.db.connect() as conn:
        deps = api.runtime.deps
        system = Actor.system(owner.account_id, api.runtime.clock)
        in_team = {t.agent_id for t in await enabled_targets(conn, system, team_id=team_id,
                                                             deps=deps)}
        account_only = {t.agent_id for t in await enabled_targets(conn, system, deps=deps)}
    assert in_team == {account, mine}
    assert account_only == {account}
    assert theirs not in in_team and off not in in_team
