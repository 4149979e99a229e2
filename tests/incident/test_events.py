"""The incident event stream: an outbox row and one job per subscriber, written in the
change's transaction; a rolled-back write emits nothing; a failing subscriber retries
without holding up the others."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace

import pytest
from sqlalchemy import Connection, func, select

from dutyline.db.tables.incident import incident_event
from dutyline.db.tables.work import job
from dutyline.incident import events
from dutyline.incident.events import IncidentEvent
from dutyline.work.registry import JobContext, registry
from dutyline.work.worker import Worker
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push

pytestmark = pytest.mark.anyio

Make = Callable[..., Awaitable[Wired]]
seen: dict[str, list[tuple[str, str]]] = {"audit": [], "flaky": []}
flaky_failures = {"left": 0}


async def _audit(ctx: JobContext, ev: IncidentEvent) -> None:
    seen["audit"].append((ev.incident_id, ev.kind))


async def _flaky(ctx: JobContext, ev: IncidentEvent) -> None:
    if flaky_failures["left"] > 0:
        flaky_failures["left"] -= 1
        raise RuntimeError("subscriber down")
    seen["flaky"].append((ev.incident_id, ev.kind))


# Registered once (their job handlers stay in the process-wide registry), then fanned out
# to only while a test of this module asks for them.
events.subscriber("test_audit")(_audit)
events.subscriber("test_flaky")(_flaky)
AUDIT = events._subscribers.pop("test_audit")
FLAKY = events._subscribers.pop("test_flaky")


@pytest.fixture
def test_subscribers() -> Iterator[None]:
    # Only this module's subscribers fan out meanwhile: the domains' own (automation,
    # escalation...) would add jobs of their own to every event these tests count.
    saved = dict(events._subscribers)
    events._subscribers.clear()
    events._subscribers["test_audit"] = AUDIT
    events._subscribers["test_flaky"] = FLAKY
    for log in seen.values():
        log.clear()
    flaky_failures["left"] = 0
    try:
        yield
    finally:
        events._subscribers.clear()
        events._subscribers.update(saved)


async def _count(api: Api, table: object, *where: object) -> int:
    async with api.runtime.db.connect() as conn:
        stmt = select(func.count()).select_from(table).where(*where)  # type: ignore[arg-type]
        return int((await conn.execute(stmt)).scalar_one())


def _event_jobs() -> object:
    return job.c.kind.like(events.JOB_PREFIX + "test_%")


async def test_a_rolled_back_write_emits_nothing(capi: Api, test_subscribers: None) -> None:
    class Boom(Exception):
        pass

    async def emit_then_fail() -> None:
        async with capi.runtime.db.transaction() as conn:
            await events.emit(conn, account_id=1, incident_id="a" * 24, kind=events.CREATED,
                              now_s=1)
            raise Boom

    with pytest.raises(Boom):
        await emit_then_fail()
    assert await _count(capi, incident_event) == 0
    assert await _count(capi, job, _event_jobs()) == 0


async def test_a_rejected_push_emits_nothing(
    capi: Api, channel_with_integration: Make, test_subscribers: None
) -> None:
    w = await channel_with_integration()
    r = await push(capi, w.key, {"title_rule": "x", "event_status": "Nope"})
    assert r.status == 400
    assert await _count(capi, incident_event) == 0
    assert await _count(capi, job, _event_jobs()) == 0


async def test_each_subscriber_gets_a_job_per_event(
    capi: Api, channel_with_integration: Make, test_subscribers: None
) -> None:
    w = await channel_with_integration(group={"method": "p", "equals": [["svc"]]})
    await push(capi, w.key, event(key="1", labels={"svc": "s"}))  # created
    await push(capi, w.key, event(key="2", labels={"svc": "s"}))  # alert_added
    assert await _count(capi, incident_event) == 2
    for name in ("test_audit", "test_flaky"):
        assert await _count(capi, job, job.c.kind == events.JOB_PREFIX + name) == 2
    worker = Worker(capi.runtime, registry=registry, worker_id="w")
    outcomes = [await worker.execute(j) for j in await worker.claim(10)]
    assert outcomes == ["done"] * 4
    assert [k for _, k in seen["audit"]] == ["created", "alert_added"]
    assert [k for _, k in seen["flaky"]] == ["created", "alert_added"]


async def test_a_failing_subscriber_retries_without_blocking_another(
    capi: Api, clock: FakeClock, channel_with_integration: Make, test_subscribers: None
) -> None:
    w = await channel_with_integration()
    flaky_failures["left"] = 1
    await push(capi, w.key, event())
    worker = Worker(capi.runtime, registry=registry, worker_id="w")
    claimed = await worker.claim(10)
    outcomes = {j.kind: await worker.execute(j) for j in claimed}
    assert outcomes == {events.JOB_PREFIX + "test_audit": "done",
                        events.JOB_PREFIX + "test_flaky": "retry"}
    assert len(seen["audit"]) == 1 and seen["flaky"] == []
    # Later events still reach the healthy subscriber while the flaky one waits to retry.
    await push(capi, w.key, event(key="second"))
    outcomes2 = [await worker.execute(j) for j in await worker.claim(10)]
    assert outcomes2 == ["done", "done"]  # the new event's two jobs; the retry is not due
    assert len(seen["audit"]) == 2 and len(seen["flaky"]) == 1
    clock.advance(3600)
    assert [await worker.execute(j) for j in await worker.claim(10)] == ["done"]
    assert sorted(k for _, k in seen["flaky"]) == ["created", "created"]


async def test_a_subscriber_of_some_kinds_gets_jobs_for_those_only(
    capi: Api, channel_with_integration: Make, test_subscribers: None
) -> None:
    events._subscribers["test_flaky"] = replace(FLAKY, kinds=frozenset({events.CREATED}))
    w = await channel_with_integration(group={"method": "p", "equals": [["svc"]]})
    await push(capi, w.key, event(key="1", labels={"svc": "s"}))  # created
    await push(capi, w.key, event(key="2", labels={"svc": "s"}))  # alert_added
    assert await _count(capi, incident_event) == 2  # the outbox keeps every event
    assert await _count(capi, job, job.c.kind == events.JOB_PREFIX + "test_audit") == 2
    assert await _count(capi, job, job.c.kind == events.JOB_PREFIX + "test_flaky") == 1
    assert events.subscribers(events.ALERT_ADDED) == ["test_audit"]
    assert events.subscribers() == ["test_audit", "test_flaky"]


def test_the_domain_subscribers_name_the_kinds_they_act_on() -> None:
    # An alert joining an open incident (the ingestion hot path) queues no job for the
    # escalation engine or the automation trigger: neither acts on it.
    from dutyline.aisre.automation import tasks as automation_tasks  # noqa: F401
    from dutyline.dispatch import tasks as dispatch_tasks  # noqa: F401

    assert "dispatch" in events.subscribers(events.ACKED)
    assert "automation.oncall_incident" in events.subscribers(events.CREATED)
    assert not {"dispatch", "automation.oncall_incident"} & set(
        events.subscribers(events.ALERT_ADDED))


async def test_a_subscriber_that_does_not_want_an_event_gets_no_job(
    capi: Api, channel_with_integration: Make, test_subscribers: None
) -> None:
    asked: list[tuple[str, int]] = []

    def only_critical(conn: Connection, ev: IncidentEvent) -> bool:
        asked.append((ev.kind, ev.account_id))
        return ev.payload.get("severity") == "Critical"

    events._subscribers["test_flaky"] = replace(FLAKY, wants=only_critical)
    w = await channel_with_integration()
    await push(capi, w.key, event(key="1", status="Warning"))
    await push(capi, w.key, event(key="2", status="Critical", title="other"))
    assert await _count(capi, incident_event) == 2
    assert await _count(capi, job, job.c.kind == events.JOB_PREFIX + "test_audit") == 2
    assert await _count(capi, job, job.c.kind == events.JOB_PREFIX + "test_flaky") == 1
    assert [k for k, _ in asked] == ["created", "created"]
    assert {a for _, a in asked} == {w.account.account_id}
