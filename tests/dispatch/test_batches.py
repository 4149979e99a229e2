"""Paging in batches, through the real handlers on the process-wide registry: due deliveries
sent side by side with their outcomes written together, escalation steps of several
incidents run in one transaction, and the dispatch subscriber taking several events of one
incident in order."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from sqlalchemy import event as sa_event
from sqlalchemy import select

from dutyline import domains
from dutyline.db.tables.dispatch import dispatch_state
from dutyline.db.tables.incident import alert
from dutyline.db.tables.notify import notify_attempt
from dutyline.db.tables.work import job
from dutyline.dispatch import engine, system
from dutyline.dispatch import repository as dispatch_repo
from dutyline.dispatch import tasks as dispatch_tasks
from dutyline.incident import events
from dutyline.incident.service import query as incidents
from dutyline.kit.clock import millis
from dutyline.notify.delivery import tasks as delivery_tasks
from dutyline.notify.delivery.adapters.base import Attempt
from dutyline.notify.delivery.service import DELIVER_JOB, record_attempts
from dutyline.work import queue
from dutyline.work.registry import registry as default_registry
from dutyline.work.worker import Worker, job_transaction
from tests.dispatch.receiver import Receiver, build
from tests.dispatch.support import layer, make_channel, make_integration, push, run_jobs
from tests.dispatch.test_paging import deliveries, feed, open_incident
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.loopback import serve_asgi

pytestmark = pytest.mark.anyio

DISPATCH_EVENTS = events.JOB_PREFIX + "dispatch"
STATE_FIELDS = ("status", "seq", "layer_idx", "times", "layer_started_at", "last_notified_at",
                "next_at")


def worker(api: Api) -> Worker:
    # Without handoff: the deliveries a dispatch job makes wait as pending jobs, so the
    # tests claim them (as a batch, or one by one) themselves.
    return Worker(api.runtime, worker_id="test", handoff=False)


async def run_alone(api: Api, kind: str) -> list[str]:
    """Run every due job of `kind`, one at a time through its single handler."""
    w = worker(api)
    outcomes: list[str] = []
    while claimed := await w.claim(10, kind=kind):
        outcomes.extend([await w.execute(c) for c in claimed])
    return outcomes


async def jobs_of(api: Api, kind: str, status: str | None = None) -> list[Any]:
    stmt = select(job).where(job.c.kind == kind).order_by(job.c.id)
    if status is not None:
        stmt = stmt.where(job.c.status == status)
    async with api.runtime.db.connect() as conn:
        return list((await conn.execute(stmt)).all())


async def attempts_of(api: Api, delivery_id: str) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list((await conn.execute(select(notify_attempt).where(
            notify_attempt.c.delivery_id == delivery_id).order_by(notify_attempt.c.attempt)
        )).all())


async def state_of(api: Api, incident_id: str) -> Any:
    async with api.runtime.db.connect() as conn:
        return (await conn.execute(select(dispatch_state).where(
            dispatch_state.c.incident_id == incident_id))).one()


def fields(state: Any) -> tuple[Any, ...]:
    return tuple(getattr(state, f) for f in STATE_FIELDS)


async def statuses(api: Api, incident_id: str) -> dict[str, tuple[str, int]]:
    return {d.delivery_id: (d.status, d.attempts) for d in await deliveries(api, incident_id)}


async def stale_job(api: Api, delivery_id: str, attempt: int) -> int:
    """A job for an attempt of the delivery, due now, without a dedupe key (the attempt's
    own job holds it, or held it)."""
    async with api.runtime.db.transaction() as conn:
        job_id = await queue.enqueue(conn, DELIVER_JOB, {"delivery_id": delivery_id,
                                                         "attempt": attempt},
                                     now_ms=millis(api.runtime.clock))
    assert job_id is not None
    return job_id


async def notes(api: Api, who: Person, incident_id: str) -> dict[str, list[str]]:
    """The i_notify feed entries of the incident, as {delivery id: [status, ...]}."""
    got: dict[str, list[str]] = {}
    for entry in await feed(api, who, incident_id):
        if entry["type"] == "i_notify":
            got.setdefault(entry["detail"]["rid"], []).append(entry["detail"]["status"])
    return got


def test_the_paging_kinds_are_batched() -> None:
    domains.load_tasks()  # as every process does at start
    for kind in (DELIVER_JOB, engine.STEP_JOB, DISPATCH_EVENTS):
        assert default_registry.batch(kind) is not None, kind


# 9. Deliveries due together.

async def test_due_deliveries_run_as_one_batch(papi: Api, owner: Person, clock: FakeClock,
                                               receiver: Receiver) -> None:
    failing = Receiver(status=500)
    with serve_asgi(build(failing)) as failing_base:
        failing.base_url = failing_base
        hooks = [{"type": "custom", "settings": {"url": url}}
                 for url in (receiver.url("/a"), receiver.url("/b"), failing.url("/f"))]
        incident_id = await open_incident(papi, owner, [layer(webhooks=hooks)])
        assert await run_alone(papi, DISPATCH_EVENTS) == ["done"]
        made = await deliveries(papi, incident_id)
        by_path = {msgspec.json.decode(d.content)["url"].rsplit("/", 1)[1]: d.delivery_id
                   for d in made}
        assert sorted(by_path) == ["a", "b", "f"]
        a, b, f = by_path["a"], by_path["b"], by_path["f"]

        w = worker(papi)
        claimed = await w.claim(10, kind=DELIVER_JOB)
        assert len(claimed) == 3
        assert await w.execute_batch(claimed) == "done"  # not split: the batch handler did it

        assert sorted(r.path for r in receiver.take()) == ["/a", "/b"]
        assert [r.path for r in failing.take()] == ["/f"]
        assert await statuses(papi, incident_id) == {
            a: ("success", 1), b: ("success", 1), f: ("pending", 1)}
        for delivery_id, outcome, code in ((a, "success", 200), (b, "success", 200),
                                           (f, "failed", 500)):
            [attempt] = await attempts_of(papi, delivery_id)
            assert (attempt.attempt, attempt.status, attempt.status_code) == (1, outcome, code)
        # The final outcomes in the feed, one each; the pending one has none yet.
        assert await notes(papi, owner, incident_id) == {a: ["success"], b: ["success"]}
        [retry] = await jobs_of(papi, DELIVER_JOB, "pending")
        assert msgspec.json.decode(retry.payload) == {"delivery_id": f, "attempt": 2}
        assert retry.dedupe_key == f"{DELIVER_JOB}:{f}:2"
        assert retry.run_at == millis(clock) + 10_000
        done = await jobs_of(papi, DELIVER_JOB, "done")
        assert sorted(j.id for j in done) == sorted(c.id for c in claimed)

        # Stale jobs, their attempt made already: of `a` (a success) and of `f` (pending, its
        # attempt 2 not due yet). Together in a batch, they send and record nothing.
        stale = [await stale_job(papi, delivery_id, 1) for delivery_id in (a, f)]
        claimed = await w.claim(10, kind=DELIVER_JOB)
        assert sorted(c.id for c in claimed) == stale
        assert await w.execute_batch(claimed) == "done"
        assert receiver.take() == [] and failing.take() == []
        assert await statuses(papi, incident_id) == {
            a: ("success", 1), b: ("success", 1), f: ("pending", 1)}
        assert [len(await attempts_of(papi, i)) for i in (a, b, f)] == [1, 1, 1]
        assert [j.id for j in await jobs_of(papi, DELIVER_JOB, "pending")] == [retry.id]

        # The retry, due now, in a batch with a stale job of `b`.
        stale_b = await stale_job(papi, b, 1)
        failing.status = 200
        clock.advance(10)
        claimed = await w.claim(10, kind=DELIVER_JOB)
        assert sorted(c.id for c in claimed) == [retry.id, stale_b]
        assert await w.execute_batch(claimed) == "done"

        assert receiver.take() == []
        assert [r.path for r in failing.take()] == ["/f"]
        assert [(x.attempt, x.status) for x in await attempts_of(papi, b)] == [(1, "success")]
        assert [(x.attempt, x.status) for x in await attempts_of(papi, f)] == [
            (1, "failed"), (2, "success")]
        assert await statuses(papi, incident_id) == {
            a: ("success", 1), b: ("success", 1), f: ("success", 2)}
        assert await notes(papi, owner, incident_id) == {
            a: ["success"], b: ["success"], f: ["success"]}
        assert await jobs_of(papi, DELIVER_JOB, "pending") == []


async def test_a_batch_does_not_record_an_attempt_a_successor_recorded_meanwhile(
        papi: Api, owner: Person, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = [{"type": "custom", "settings": {"url": receiver.url(path)}}
             for path in ("/a", "/b")]
    incident_id = await open_incident(papi, owner, [layer(webhooks=hooks)])
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"]
    a, b = sorted(d.delivery_id for d in await deliveries(papi, incident_id))
    send = delivery_tasks._send

    async def send_then_successor_records(env: Any, row: Any) -> Attempt:
        # While the batch sends, a successor (its lease was presumed lost) records `a`'s
        # attempt 1 first, a failure to retry; the batch's read of `a` is stale now.
        attempt = await send(env, row)
        if row.delivery_id == a:
            async with papi.runtime.db.transaction() as conn:
                await record_attempts(conn, papi.runtime.clock,
                                      [(row, Attempt(ok=False, status_code=503, error="busy"))])
        return attempt

    monkeypatch.setattr(delivery_tasks, "_send", send_then_successor_records)
    w = worker(papi)
    claimed = await w.claim(10, kind=DELIVER_JOB)
    assert len(claimed) == 2
    assert await w.execute_batch(claimed) == "done"

    # `a` keeps the successor's outcome alone; `b` has the batch's.
    assert await statuses(papi, incident_id) == {a: ("pending", 1), b: ("success", 1)}
    assert [(x.attempt, x.status_code) for x in await attempts_of(papi, a)] == [(1, 503)]
    assert [(x.attempt, x.status_code) for x in await attempts_of(papi, b)] == [(1, 200)]
    assert await notes(papi, owner, incident_id) == {b: ["success"]}
    [retry] = await jobs_of(papi, DELIVER_JOB, "pending")
    assert msgspec.json.decode(retry.payload) == {"delivery_id": a, "attempt": 2}


# 10. Escalation steps of several incidents in one transaction.

async def test_step_many_matches_single_steps(papi: Api, owner: Person,
                                              clock: FakeClock) -> None:
    rule = [layer(emails=["a@example.com"], max_times=3, notify_step=1, escalate_window=30)]
    single, one, two, removed = [
        await open_incident(papi, owner, rule, name=name)
        for name in ("Single", "One", "Two", "Removed")]
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"] * 4
    begun = {i: await state_of(papi, i) for i in (single, one, two, removed)}
    assert {fields(s) for s in begun.values()} == {fields(begun[single])}
    first = begun[single]
    assert (first.status, first.times) == (engine.RUNNING, 1)
    seq = int(first.seq)
    assert (await papi.call("/incident/remove", {"incident_ids": [removed]},
                            key=owner.key)).status == 200  # its event is not run

    clock.advance(60)  # the first repeat is due
    async with papi.runtime.db.transaction() as conn:
        await engine.step(conn, papi.runtime, incident_id=single, seq=seq)
    after_single = await state_of(papi, single)
    assert int(after_single.seq) == seq + 1 and after_single.times == 2

    async with papi.runtime.db.transaction() as conn:
        await engine.step_many(conn, papi.runtime, [
            (one, seq), (single, seq), (removed, seq), (two, seq)])

    # The same outcome as the single step: a repeat sent, seq bumped, the next timer set.
    for incident_id in (single, one, two):
        assert fields(await state_of(papi, incident_id)) == fields(after_single)
        sent = [(d.address, d.fire_type) for d in await deliveries(papi, incident_id)]
        assert sent == [("a@example.com", "fire"), ("a@example.com", "refire")]
        timers = [j for j in await jobs_of(papi, engine.STEP_JOB, "pending")
                  if msgspec.json.decode(j.payload) == {"incident_id": incident_id,
                                                        "seq": seq + 1}]
        assert [(t.run_at, t.dedupe_key) for t in timers] == [
            (after_single.next_at, f"{engine.STEP_JOB}:{incident_id}:{seq + 1}")]
    # `single`'s entry was stale (its step ran above): nothing more for it, as checked.
    gone = await state_of(papi, removed)
    assert (gone.status, int(gone.seq)) == (engine.STOPPED, seq + 1)
    assert len(await deliveries(papi, removed)) == 1
    assert not [j for j in await jobs_of(papi, engine.STEP_JOB, "pending")
                if msgspec.json.decode(j.payload)["incident_id"] == removed
                and msgspec.json.decode(j.payload)["seq"] > seq]


async def test_a_step_batch_assigns_each_incident_its_layer(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    # The layers a batch begins are written together at its end (one lock of the
    # incidents, one update, one feed insert): each incident still gets its own.
    second = await new_member(papi, owner, name="Second")
    rule = [layer(person_ids=[owner.person_id], escalate_window=1),
            layer(person_ids=[second.person_id])]
    one, two = [await open_incident(papi, owner, rule, name=name) for name in ("One", "Two")]
    assert await run_alone(papi, DISPATCH_EVENTS) == ["done"] * 2
    seq = int((await state_of(papi, one)).seq)

    clock.advance(60)  # both escalate to the second layer
    async with papi.runtime.db.transaction() as conn:
        await engine.step_many(conn, papi.runtime, [(one, seq), (two, seq)])

    for incident_id in (one, two):
        info = (await papi.call("/incident/info", {"incident_id": incident_id},
                                key=owner.key)).data
        assert [r["person_id"] for r in info["responders"]] == [owner.person_id,
                                                                 second.person_id]
        assert (info["assigned_to"]["layer_idx"], info["assigned_to"]["type"]) == (1, "assign")
        assigns = [e["detail"] for e in await feed(papi, owner, incident_id)
                   if e["type"] == "i_assign"]
        assert [(d["layer_idx"], d["to"]) for d in assigns] == [
            (0, [owner.person_id]), (1, [second.person_id])]


# 11. The dispatch subscriber's batch: events of one incident in order.

async def test_created_then_acked_in_one_batch_pages_then_pauses(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    rule = [layer(emails=["a@example.com"], max_times=3, notify_step=1, escalate_window=30)]
    incident_id = await open_incident(papi, owner, rule)
    # An ACKED event right behind CREATED, written without acknowledging the incident, so
    # that CREATED's first step still finds it Triggered and pages: the outcome then tells
    # the order the batch took them in (ACKED first would find no escalation to pause, and
    # CREATED would leave one running with its repeat scheduled).
    async with papi.runtime.db.transaction() as conn:
        await events.emit(conn, account_id=owner.account_id, incident_id=incident_id,
                          kind=events.ACKED, now_s=int(clock.now()),
                          person_id=owner.person_id)
    w = worker(papi)
    claimed = await w.claim(10, kind=DISPATCH_EVENTS)
    assert len(claimed) == 2
    assert await w.execute_batch(claimed) == "done"

    # Paged first (the layer began), then paused by the ack that followed.
    assert [(d.address, d.fire_type) for d in await deliveries(papi, incident_id)] == [
        ("a@example.com", "fire")]
    state = await state_of(papi, incident_id)
    assert (state.status, state.times) == (engine.PAUSED, 1)
    # No repeat: the repeat's timer is stale now, and stays without effect.
    assert not [j for j in await jobs_of(papi, engine.STEP_JOB, "pending")
                if msgspec.json.decode(j.payload)["seq"] >= state.seq]
    clock.advance(600)
    await run_jobs(papi)
    assert len(await deliveries(papi, incident_id)) == 1
    assert (await state_of(papi, incident_id)).status == engine.PAUSED


async def test_a_stale_job_does_not_swallow_the_due_attempt_of_its_delivery(
        papi: Api, owner: Person, clock: FakeClock, receiver: Receiver) -> None:
    """Two jobs of one delivery in one batch, a stale attempt 1 and the due attempt 2: the
    due one is sent (once), not dropped because the stale one was read last."""
    receiver.status = 500
    incident_id = await open_incident(papi, owner, [layer(webhooks=[
        {"type": "custom", "settings": {"url": receiver.url("/f")}}])])
    await run_alone(papi, DISPATCH_EVENTS)
    [d] = await deliveries(papi, incident_id)
    assert await run_alone(papi, DELIVER_JOB) == ["done"]  # attempt 1 fails: a retry job for 2
    receiver.status = 200
    clock.advance(10)
    await stale_job(papi, d.delivery_id, 1)  # enqueued after the retry
    w = worker(papi)
    assert await w.execute_batch(await w.claim(10, kind=DELIVER_JOB)) == "done"
    assert await statuses(papi, incident_id) == {d.delivery_id: ("success", 2)}
    assert len(await attempts_of(papi, d.delivery_id)) == 2


async def test_paging_reads_incidents_without_their_sources(papi: Api, owner: Person) -> None:
    """The engine leaves out the two reads of an incident's integrations and recurrence,
    which no rule filter, template or payload uses; the API's record keeps them."""
    channel_id = await make_channel(papi, owner)
    key = await make_integration(papi, owner, channel_id)
    assert (await push(papi, key)).status == 200
    async with papi.runtime.db.transaction(write=False) as conn:
        incident_id = (await conn.execute(select(alert.c.incident_id))).scalar_one()
        paging = await engine.incident_record(conn, papi.runtime, owner.account_id,
                                              incident_id)
        whole = await incidents.incident_info(
            conn, system.actor(papi.runtime, owner.account_id), incident_id=incident_id,
            deps=papi.runtime.deps)
    assert paging is not None and paging.title == whole.title == "checkout latency high"
    assert whole.integration_ids and whole.integration_type and whole.frequency == "rare"
    assert (paging.integration_ids, paging.integration_type, paging.frequency) == ([], None,
                                                                                  None)
    # An incident no integration opened still gets its recurrence bucket on the API.
    created = await papi.call("/incident/create", {
        "title": "by hand", "incident_severity": "Warning", "channel_id": channel_id},
        key=owner.key)
    async with papi.runtime.db.transaction(write=False) as conn:
        by_hand = await incidents.incident_info(
            conn, system.actor(papi.runtime, owner.account_id),
            incident_id=created.data["incident_id"], deps=papi.runtime.deps)
    assert (by_hand.integration_ids, by_hand.frequency) == ([], "rare")


async def _begun(api: Api, owner: Person, clock: FakeClock, *names: str) -> tuple[list[str], int]:
    """Incidents whose first page went out, with the seq of their first repeat, now due."""
    rule = [layer(emails=["a@example.com"], max_times=3, notify_step=1, escalate_window=30)]
    ids = [await open_incident(api, owner, rule, name=name) for name in names]
    assert await run_alone(api, DISPATCH_EVENTS) == ["done"] * len(ids)
    seq = int((await state_of(api, ids[0])).seq)
    clock.advance(60)
    return ids, seq


async def _on_the_writer(api: Api, run: Any) -> list[str]:
    """The statements `run(conn)` sends on a job's own transaction (the worker's, whose
    writer is taken lazily, at its first statement), whitespace collapsed."""
    on_writer: list[str] = []
    async with job_transaction(api.runtime.db) as conn:
        writer = conn.sync_connection

        def capture(connection: Any, cursor: Any, statement: str, *_: Any) -> None:
            if connection is writer:
                on_writer.append(" ".join(statement.split()))

        engine_ = api.runtime.db.engine.sync_engine
        sa_event.listen(engine_, "before_cursor_execute", capture)
        try:
            await run(conn)
        finally:
            sa_event.remove(engine_, "before_cursor_execute", capture)
    return on_writer


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_steps_read_before_they_take_the_writer(
        papi: Api, owner: Person, clock: FakeClock) -> None:
    """On SQLite a batch of steps reads and composes on a read transaction: the job's own
    (writing) transaction reads the states again and writes, nothing else."""
    # SQLite only: on PostgreSQL a batch reads and writes in one transaction, rows locked.
    (one, two), seq = await _begun(papi, owner, clock, "One", "Two")
    on_writer = await _on_the_writer(
        papi, lambda conn: engine.step_many(conn, papi.runtime, [(one, seq), (two, seq)]))
    reads = [s for s in on_writer if s.upper().startswith("SELECT")]
    assert len(reads) == 1 and "FROM dispatch_state" in reads[0], on_writer
    for incident_id in (one, two):
        assert [d.fire_type for d in await deliveries(papi, incident_id)] == ["fire", "refire"]
        assert int((await state_of(papi, incident_id)).seq) == seq + 1


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_steps_start_over_under_the_writer_when_a_state_moved_on(
        papi: Api, owner: Person, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state that an event changed between a batch's read and its write (here: stopped)
    makes the batch run again under the writer, where that step is stale: it pages no one
    and leaves the state as the event did."""
    # SQLite only: on PostgreSQL a batch reads and writes in one transaction, rows locked.
    (moved, kept), seq = await _begun(papi, owner, clock, "Moved", "Kept")
    compose = engine._compose_steps
    calls = 0

    async def compose_then_stop(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        live = await compose(*args)
        if calls == 1:  # after the read-first pass: an event stops `moved` meanwhile
            async with papi.runtime.db.transaction() as other:
                await engine.stop(other, system.actor(papi.runtime, owner.account_id), moved)
        return live

    monkeypatch.setattr(engine, "_compose_steps", compose_then_stop)
    async with job_transaction(papi.runtime.db) as conn:  # the worker's: writer taken lazily
        await engine.step_many(conn, papi.runtime, [(moved, seq), (kept, seq)])
    assert calls == 2  # read first, then again under the writer
    stopped = await state_of(papi, moved)
    assert (stopped.status, int(stopped.seq)) == (engine.STOPPED, seq + 1)
    assert [d.fire_type for d in await deliveries(papi, moved)] == ["fire"]
    assert [d.fire_type for d in await deliveries(papi, kept)] == ["fire", "refire"]
    assert int((await state_of(papi, kept)).seq) == seq + 1


async def _opening_events(api: Api) -> list[events.IncidentEvent]:
    """The events of the pending dispatch jobs, in the order they happened."""
    ids = [int(msgspec.json.decode(j.payload)["event_id"])
           for j in await jobs_of(api, DISPATCH_EVENTS, "pending")]
    async with api.runtime.db.connect() as conn:
        return await events.load_events(conn, ids)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_new_incidents_are_composed_before_the_writer_is_taken(
        papi: Api, owner: Person) -> None:
    """On SQLite a batch of new incidents is read and composed on a read transaction: the
    job's own (writing) transaction reads their dispatch states once, then writes."""
    # SQLite only: on PostgreSQL a batch reads and writes in one transaction, rows locked.
    rule = [layer(emails=["a@example.com"])]
    ids = [await open_incident(papi, owner, rule, name=name) for name in ("One", "Two")]
    batch = await _opening_events(papi)
    assert sorted(e.incident_id for e in batch) == sorted(ids)
    on_writer = await _on_the_writer(
        papi, lambda conn: dispatch_tasks._on_events(conn, papi.runtime, batch, None))
    # The states, then the writes' own read: the incidents whose responders it sets. No
    # event, incident record, rule, member or template read holds the writer.
    reads = [s.split(" WHERE ")[0].rsplit(" FROM ", 1)[1] for s in on_writer
             if s.upper().startswith("SELECT")]
    assert reads == ["dispatch_state", "incident"], on_writer
    for incident_id in ids:
        assert [(d.address, d.fire_type) for d in await deliveries(papi, incident_id)] == [
            ("a@example.com", "fire")]
        assert (await state_of(papi, incident_id)).status == engine.DONE  # one page, no more


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_new_incidents_start_over_under_the_writer_when_a_state_appeared(
        papi: Api, owner: Person, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dispatch state written for one of the incidents between the batch's read and its
    write (here: a stopped one) makes the batch run again under the writer, from that
    state: what the read composed is dropped, and each incident is paged once."""
    # SQLite only: on PostgreSQL a batch reads and writes in one transaction, rows locked.
    rule = [layer(emails=["a@example.com"])]
    moved, kept = [await open_incident(papi, owner, rule, name=name)
                   for name in ("Moved", "Kept")]
    batch = await _opening_events(papi)
    read = dispatch_tasks._read_batch
    calls = 0

    async def read_then_stop(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        shared = await read(*args)
        if calls == 1:  # after the read-first pass: a stopped state appears for `moved`
            now = int(clock.now())
            async with papi.runtime.db.transaction() as other:
                await dispatch_repo.insert_states(other, [{
                    "incident_id": moved, "account_id": owner.account_id,
                    "run_id": "f" * 24, "status": engine.STOPPED, "seq": 7,
                    "created_at": now, "updated_at": now}])
        return shared

    monkeypatch.setattr(dispatch_tasks, "_read_batch", read_then_stop)
    async with job_transaction(papi.runtime.db) as conn:  # the worker's: writer taken lazily
        await dispatch_tasks._on_events(conn, papi.runtime, batch, None)
    assert calls == 2  # read first, then again under the writer
    for incident_id in (moved, kept):
        assert [d.fire_type for d in await deliveries(papi, incident_id)] == ["fire"]
    # Begun again from the state that appeared (seq 7: begun 8, first step 9), not
    # written over it.
    assert int((await state_of(papi, moved)).seq) == 9
    assert int((await state_of(papi, kept)).seq) == 2
