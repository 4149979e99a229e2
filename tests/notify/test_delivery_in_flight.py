"""Deliveries across a worker that stops mid-batch: each attempt's outcome is committed as
soon as its receiver answers, so only the sends still in flight at the stop are made again
(with the same Idempotency-Key) and none is lost; a delivery job holds its lease for its
longest send, which is cut off there; a job whose lease another worker took sends nothing."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import msgspec
import pytest
from sqlalchemy import select

from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.notify.delivery import tasks as delivery_tasks
from dutyline.notify.delivery.adapters.base import ATTEMPT_TIMEOUT_S
from dutyline.notify.delivery.service import DELIVER_JOB
from dutyline.work import queue
from dutyline.work.worker import Worker
from tests.dispatch.receiver import Receiver
from tests.dispatch.support import layer
from tests.dispatch.test_batches import (
    DISPATCH_EVENTS,
    attempts_of,
    run_alone,
    statuses,
)
from tests.dispatch.test_paging import deliveries, open_incident
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio

WAIT_S = 20.0


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def hooks(receiver: Receiver, *paths: str) -> list[dict[str, object]]:
    return [{"type": "custom", "settings": {"url": receiver.url(p)}} for p in paths]


async def by_path(api: Api, incident_id: str) -> dict[str, str]:
    """{receiver path: delivery id} of the incident's webhook deliveries."""
    return {msgspec.json.decode(d.content)["url"].rsplit("/", 1)[1]: d.delivery_id
            for d in await deliveries(api, incident_id)}


async def test_outcomes_commit_as_receivers_answer_so_a_stop_resends_only_the_sends_in_flight(
        papi: Api, owner: Person, receiver: Receiver, clock: FakeClock) -> None:
    receiver.hold = {"/held"}
    incident_id = await open_incident(papi, owner, [layer(
        webhooks=hooks(receiver, "/a", "/b", "/held"))])
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"]
    ids = await by_path(papi, incident_id)
    a, b, held = ids["a"], ids["b"], ids["held"]

    first = Worker(papi.runtime, worker_id="first", handoff=False)
    claimed = await first.claim(10, kind=DELIVER_JOB)
    assert len(claimed) == 3
    batch = asyncio.create_task(first.execute_batch(claimed))
    try:
        async def answered_ones_recorded() -> bool:
            got = await statuses(papi, incident_id)
            return got[a] == got[b] == ("success", 1) and receiver.in_flight() == 1

        # While /held has no answer, the answered sends are committed already.
        await until(answered_ones_recorded, "the answered sends to be recorded")
        assert (await statuses(papi, incident_id))[held] == ("pending", 0)
        # The jobs are held for the longest send, whatever the loop's heartbeat.
        async with papi.runtime.db.connect() as conn:
            leases = (await conn.execute(select(job.c.lease_expires_at).where(
                job.c.id.in_([c.id for c in claimed])))).scalars().all()
        assert min(leases) >= millis(clock) + ATTEMPT_TIMEOUT_S * 1000
    finally:
        in_flight = receiver.in_flight()
        batch.cancel()  # the worker stops mid-send: its jobs go back unfinished
        with contextlib.suppress(asyncio.CancelledError):
            await batch
    receiver.release.set()

    # Another run: only the send that was in flight is made again, with the same key.
    assert sorted(await run_alone(papi, DELIVER_JOB)) == ["done"] * 3
    got = receiver.take()
    keys = Counter(r.headers["idempotency-key"] for r in got)
    duplicates = sum(n - 1 for n in keys.values())
    assert set(keys) == {a, b, held}  # none lost
    assert in_flight == 1 and duplicates == 1 and keys[held] == 2
    assert duplicates <= in_flight
    assert await statuses(papi, incident_id) == {
        a: ("success", 1), b: ("success", 1), held: ("success", 1)}
    assert [len(await attempts_of(papi, i)) for i in (a, b, held)] == [1, 1, 1]


async def test_a_delivery_job_whose_lease_another_worker_took_sends_nothing(
        papi: Api, owner: Person, receiver: Receiver, clock: FakeClock) -> None:
    incident_id = await open_incident(papi, owner, [layer(webhooks=hooks(receiver, "/a"))])
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"]
    first = Worker(papi.runtime, worker_id="first", handoff=False, lease_ms=1_000)
    [stale] = await first.claim(10, kind=DELIVER_JOB)
    # The first worker stalls past its lease; the job goes to a second one.
    clock.advance(2)
    assert await queue.reap_expired(papi.runtime.db, now_ms=millis(clock)) == (1, 0)
    second = Worker(papi.runtime, worker_id="second", handoff=False)
    [taken] = await second.claim(10, kind=DELIVER_JOB)
    assert taken.id == stale.id

    assert await first.execute(stale) == "lease_lost"
    assert receiver.take() == []
    assert await second.execute(taken) == "done"
    assert [r.path for r in receiver.take()] == ["/a"]
    [delivery] = await deliveries(papi, incident_id)
    assert (delivery.status, delivery.attempts) == ("success", 1)


async def test_an_attempt_without_an_answer_is_cut_off_and_retried(
        papi: Api, owner: Person, receiver: Receiver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery_tasks, "ATTEMPT_TIMEOUT_S", 0.2)
    receiver.hold = {"/held"}
    incident_id = await open_incident(papi, owner, [layer(webhooks=hooks(receiver, "/held"))])
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"]
    assert await run_alone(papi, DELIVER_JOB) == ["done"]
    [delivery] = await deliveries(papi, incident_id)
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert delivery.last_error == "no answer within 0.2 s"
    [attempt] = await attempts_of(papi, delivery.delivery_id)
    assert (attempt.status, attempt.error_message) == ("failed", "no answer within 0.2 s")
