"""The restart proof: real `dutyline serve` processes (workers on) run an escalation on a
webhook receiver; the first is SIGKILLed while a repeat page is in flight, two more take
over, and the escalation ends with every step made exactly once (the repeat, then the next
layer) and no page lost. The page in flight may reach the receiver again after the kill
(outbound is at-least-once), always with the same Idempotency-Key and the same body."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dutyline.db.tables.dispatch import dispatch_state
from dutyline.db.tables.incident import incident_feed
from dutyline.db.tables.notify import notify_delivery
from dutyline.db.tables.work import job
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import create_rule, layer, make_channel, make_integration, rule_body
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.server import Server, running_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]

HANG_S = 8.0
DEADLINE_S = 150.0


@dataclass
class SlowReceiver:
    """Answers 200; the first request of the second distinct page hangs, and says so."""

    base_url: str = ""
    got: list[tuple[str, str, bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hanging: threading.Event = field(default_factory=threading.Event)

    def keys(self) -> list[str]:
        with self.lock:
            return list(dict.fromkeys(k for _, k, _ in self.got))


@contextlib.contextmanager
def slow_receiver() -> Iterator[SlowReceiver]:
    r = SlowReceiver()

    async def hook(request: Request) -> JSONResponse:
        body = await request.body()
        key = request.headers.get("idempotency-key", "")
        with r.lock:
            r.got.append((request.url.path, key, body))
            hang = len(dict.fromkeys(k for _, k, _ in r.got)) == 2 and not r.hanging.is_set()
            if hang:
                r.hanging.set()
        if hang:
            await asyncio.sleep(HANG_S)
        return JSONResponse({"ok": True})

    with serve_asgi(Starlette(routes=[Route("/{p:path}", hook, methods=["POST"])])) as url:
        r.base_url = url
        yield r


async def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def kill(server: Server) -> None:
    server.process.send_signal(signal.SIGKILL)  # no shutdown, no lease handed back
    server.process.wait(15)


async def test_an_escalation_survives_sigkill_without_losing_or_repeating_a_step(
        api: Api, owner: Person, database_url: str) -> None:
    env = {
        "DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_SECRET_KEY": "test-secret-key",
        "DUTYLINE_RUN_WORKERS": "1", "DUTYLINE_JOB_LEASE_SECONDS": "2",
        "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1",
        "DUTYLINE_RATE_LIMIT_PER_SECOND": "0", "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
    }
    with slow_receiver() as receiver:
        channel_id = await make_channel(api, owner)
        await create_rule(api, owner, rule_body(channel_id, [
            # Paged at once, again 30 s later, then the next layer after 60 s.
            layer(webhooks=[{"type": "custom", "settings": {"url": receiver.base_url + "/l0"}}],
                  max_times=1, notify_step=0.5, escalate_window=1),
            layer(webhooks=[{"type": "custom", "settings": {"url": receiver.base_url + "/l1"}}]),
        ]))
        integration_key = await make_integration(api, owner, channel_id)

        with running_server(env) as first:
            async with httpx.AsyncClient(base_url=first.base_url, trust_env=False) as client:
                pushed = await client.post("/event/push/alert/standard",
                                           params={"integration_key": integration_key},
                                           json={"title_rule": "db down", "alert_key": "db",
                                                 "event_status": "Critical"})
            assert pushed.status_code == 200, pushed.text
            await wait_until(receiver.hanging.is_set, "the repeat page to be in flight")
            kill(first)
        with running_server(env) as second, running_server(env) as third:
            await wait_until(lambda: len(receiver.keys()) >= 3, "the next layer's page")

            async def settled() -> bool:
                async with api.runtime.db.transaction() as conn:
                    pending = (await conn.execute(select(func.count()).select_from(
                        notify_delivery).where(notify_delivery.c.status == "pending"))
                    ).scalar_one()
                    state = (await conn.execute(select(dispatch_state.c.status))).scalar_one()
                return pending == 0 and state == "done"

            deadline = time.monotonic() + DEADLINE_S
            while not await settled():
                assert time.monotonic() < deadline, "deliveries did not settle"
                await asyncio.sleep(0.2)
            assert second.process.poll() is None and third.process.poll() is None

    with receiver.lock:
        got = list(receiver.got)
    by_key: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    for path, key, body in got:
        by_key[key].append((path, body))
    # Three pages, each once as a step: layer 0, its repeat, layer 1.
    assert sorted(paths[0][0] for paths in by_key.values()) == ["/l0", "/l0", "/l1"]
    for key, sends in by_key.items():
        assert len({body for _, body in sends}) == 1  # a resend is the same page
        assert json.loads(sends[0][1])["event_id"] == key
    async with api.runtime.db.transaction() as conn:
        deliveries = (await conn.execute(select(notify_delivery))).all()
        feed = [r.type for r in (await conn.execute(select(incident_feed))).all()]
        dead = (await conn.execute(select(func.count()).select_from(job).where(
            job.c.status == "dead"))).scalar_one()
    assert sorted((d.layer_idx, d.fire_type, d.status) for d in deliveries) == [
        (0, "fire", "success"), (0, "refire", "success"), (1, "fire", "success")]
    assert feed.count("i_assign") == 2 and feed.count("i_notify") == 3
    assert dead == 0


async def test_sigkill_mid_batch_resends_only_the_pages_in_flight(
        api: Api, owner: Person, database_url: str, receiver: Receiver) -> None:
    """One step pages six webhooks, sent as one delivery batch; two receivers hold their
    answers. The worker is SIGKILLed once the four answered pages are recorded: after
    recovery no page is lost, and the duplicates are at most the pages in flight at the
    kill (the two held ones, sent again with the same Idempotency-Key)."""
    env = {
        "DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_SECRET_KEY": "test-secret-key",
        "DUTYLINE_RUN_WORKERS": "1", "DUTYLINE_JOB_LEASE_SECONDS": "2",
        "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1",
        "DUTYLINE_RATE_LIMIT_PER_SECOND": "0", "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
    }
    answered, held = ["/a0", "/a1", "/a2", "/a3"], ["/h0", "/h1"]
    receiver.hold = set(held)
    channel_id = await make_channel(api, owner)
    await create_rule(api, owner, rule_body(channel_id, [layer(webhooks=[
        {"type": "custom", "settings": {"url": receiver.url(p)}} for p in answered + held])]))
    integration_key = await make_integration(api, owner, channel_id)

    async def deliveries() -> dict[str, Any]:
        async with api.runtime.db.transaction() as conn:
            rows = (await conn.execute(select(notify_delivery))).all()
        return {json.loads(r.content)["url"].rsplit("/", 1)[1]: r for r in rows}

    async def unrecorded() -> int:
        return sum(1 for d in (await deliveries()).values() if d.attempts == 0)

    def all_sent() -> bool:
        with receiver.lock:
            return len(receiver.received) == 6 and receiver.waiting == len(held)

    with running_server(env) as first:
        async with httpx.AsyncClient(base_url=first.base_url, trust_env=False) as client:
            pushed = await client.post("/event/push/alert/standard",
                                       params={"integration_key": integration_key},
                                       json={"title_rule": "db down", "alert_key": "db",
                                             "event_status": "Critical"})
        assert pushed.status_code == 200, pushed.text
        await wait_until(all_sent, "every page sent, the held ones without an answer")
        # Then the answered ones recorded, each as it was answered; waited for at most
        # until shortly before the held sends' own HTTP timeout would record them too.
        deadline = time.monotonic() + 6.0
        while await unrecorded() > len(held):
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        # In flight at the kill: the requests the receiver holds without an answer; and
        # the deliveries whose attempts are not recorded.
        in_flight, not_recorded = receiver.in_flight(), await unrecorded()
        kill(first)
    receiver.release.set()

    with running_server(env):
        async def settled() -> bool:
            return all(d.status != "pending" for d in (await deliveries()).values())

        deadline = time.monotonic() + DEADLINE_S
        while not await settled():
            assert time.monotonic() < deadline, "deliveries did not settle"
            await asyncio.sleep(0.2)

    got = receiver.take()
    sends = Counter(r.headers["idempotency-key"] for r in got)
    duplicates = sum(n - 1 for n in sends.values())
    made = await deliveries()
    assert set(sends) == {d.delivery_id for d in made.values()}  # no page lost
    assert all((d.status, d.attempts) == ("success", 1) for d in made.values())
    print(f"in flight at the kill: {in_flight}, unrecorded: {not_recorded}; "
          f"duplicates after recovery: {duplicates} of {len(made)} pages")
    assert in_flight == len(held)
    assert duplicates <= in_flight
    # The pages sent twice are held ones, each the same body under the same key.
    path_of = {d.delivery_id: "/" + p for p, d in made.items()}
    assert {path_of[key] for key, n in sends.items() if n > 1} <= set(held)
    for key in sends:
        assert len({r.body for r in got if r.headers["idempotency-key"] == key}) == 1
