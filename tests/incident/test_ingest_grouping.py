"""Grouping alerts into incidents (n, p, i with windows), incident severity, auto-close when
all alerts recovered, and the auto-resolve timer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

import pytest

from dutyline.incident import events, state
from dutyline.work.registry import registry
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push
from tests.incident.ingest_support import (
    alerts_of,
    all_rows,
    incident_row,
    incidents_of,
    jobs,
    stream_kinds,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_event_subscribers() -> Iterator[None]:
    """These tests count and claim the timer jobs they expect; the domains' incident-event
    subscribers (automation, escalation...) would add jobs of their own to each change."""
    saved = dict(events._subscribers)
    events._subscribers.clear()
    try:
        yield
    finally:
        events._subscribers.update(saved)

Make = Callable[..., Awaitable[Wired]]
AUTO_RESOLVE = "incident.auto_resolve"


async def test_method_n_opens_an_incident_per_new_alert(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    for key in ("a", "b", "a"):
        await push(capi, w.key, event("same title", key=key))
    incs = await incidents_of(capi, w.channel_id)
    assert len(incs) == 2
    for inc in incs:
        assert (inc.progress, inc.group_method, inc.equals_md5, inc.creator_id) == (
            "Triggered", "n", "", 0)
    feeds = [await stream_kinds(capi, inc.incident_id) for inc in incs]
    assert feeds == [["created"], ["created"]]


async def test_method_p_groups_by_equal_label_values_within_the_window(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(
        group={"method": "p", "equals": [["labels.service", "dc"]], "time_window": 10})
    await push(capi, w.key, event("a1", "Warning", key="a1",
                                  labels={"service": "api", "dc": "eu"}))
    clock.advance(60)
    await push(capi, w.key, event("a2", "Critical", key="a2",
                                  labels={"service": "api", "dc": "eu", "host": "h2"}))
    await push(capi, w.key, event("b1", key="b1", labels={"service": "api", "dc": "us"}))
    first, other = await incidents_of(capi, w.channel_id)
    assert (first.alert_cnt, first.active_alert_cnt, first.alert_event_cnt) == (2, 2, 2)
    assert first.incident_severity == "Critical" and first.title == "a1"
    assert first.last_time == int(clock.now())
    assert other.alert_cnt == 1 and other.equals_md5 != first.equals_md5
    assert await stream_kinds(capi, first.incident_id) == ["created", "alert_added"]
    # Past the window (10 minutes from the incident's start) the same values open a new one.
    clock.advance(10 * 60)
    await push(capi, w.key, event("a3", key="a3", labels={"service": "api", "dc": "eu"}))
    incs = await incidents_of(capi, w.channel_id)
    assert len(incs) == 3 and incs[-1].equals_md5 == first.equals_md5


async def test_method_p_joins_only_incidents_that_are_not_closed(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "p", "equals": [["host"]]})
    await push(capi, w.key, event(key="x", labels={"host": "h"}))
    await push(capi, w.key, event(key="x", status="Ok"))  # closes the incident
    capi.runtime.clock.advance(1)
    await push(capi, w.key, event(key="y", labels={"host": "h"}))
    closed, fresh = await incidents_of(capi, w.channel_id)
    assert closed.progress == "Closed" and fresh.progress == "Triggered"
    assert fresh.alert_cnt == 1


async def test_all_equals_required_and_fallback_entries(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={
        "method": "p", "equals": [["host"], ["service"]], "all_equals_required": True})
    await push(capi, w.key, event(key="1", labels={"service": "s"}))
    await push(capi, w.key, event(key="2", labels={"service": "s", "x": "y"}))
    await push(capi, w.key, event(key="3", labels={"nothing": "here"}))
    await push(capi, w.key, event(key="4", labels={"nothing": "here"}))
    incs = await incidents_of(capi, w.channel_id)
    # 1 and 2 group by the second entry; 3 and 4 resolve no entry: each opens its own.
    assert sorted(i.alert_cnt for i in incs) == [1, 1, 2]


async def test_method_i_without_equals_groups_by_title_rule(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "i"})
    await push(capi, w.key, event("$host down", key="1", labels={"host": "a"}))
    await push(capi, w.key, event("$host down", key="2", labels={"host": "b"}))
    await push(capi, w.key, event("other", key="3"))
    incs = await incidents_of(capi, w.channel_id)
    assert sorted(i.alert_cnt for i in incs) == [1, 2]
    assert {i.group_method for i in incs} == {"i"}


async def test_method_p_without_equals_puts_every_alert_of_the_window_together(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    """`equals` empty: every alert agrees, whatever its title or labels (the reference's own
    example of method `p`)."""
    w = await channel_with_integration(group={"method": "p", "time_window": 10})
    await push(capi, w.key, event("$host down", key="1", labels={"host": "a"}))
    await push(capi, w.key, event("disk full", key="2", labels={"host": "b"}))
    await push(capi, w.key, event("other", key="3", status="Info"))
    (inc,) = await incidents_of(capi, w.channel_id)
    assert inc.alert_cnt == 3 and inc.group_method == "p"
    # Past the window a new incident starts, and again holds everything after it.
    clock.advance(11 * 60)
    await push(capi, w.key, event("late", key="4"))
    await push(capi, w.key, event("later", key="5"))
    incs = await incidents_of(capi, w.channel_id)
    assert sorted(i.alert_cnt for i in incs) == [2, 3]


async def test_incident_severity_is_its_worst_active_alert(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "p", "equals": [["svc"]]})
    await push(capi, w.key, event(key="info", status="Info", labels={"svc": "s"}))
    (inc,) = await incidents_of(capi, w.channel_id)
    assert (inc.incident_severity, inc.incident_status) == ("Info", "Info")
    await push(capi, w.key, event(key="warn", status="Warning", labels={"svc": "s"}))
    assert (await incident_row(capi, inc.incident_id)).incident_severity == "Warning"
    await push(capi, w.key, event(key="info", status="Critical", labels={"svc": "s"}))
    assert (await incident_row(capi, inc.incident_id)).incident_severity == "Critical"
    # The Critical alert recovers: the incident drops to its worst remaining alert.
    await push(capi, w.key, event(key="info", status="Ok"))
    row = await incident_row(capi, inc.incident_id)
    assert (row.incident_severity, row.incident_status, row.active_alert_cnt) == (
        "Warning", "Warning", 1)
    assert row.progress == "Triggered"


async def test_all_alerts_recovered_closes_the_incident(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "p", "equals": [["svc"]]})
    await push(capi, w.key, event(key="1", labels={"svc": "s"}))
    await push(capi, w.key, event(key="2", status="Warning", labels={"svc": "s"}))
    clock.advance(5)
    await push(capi, w.key, event(key="1", status="Ok"))
    (inc,) = await incidents_of(capi, w.channel_id)
    assert inc.progress == "Triggered" and inc.active_alert_cnt == 1
    clock.advance(5)
    await push(capi, w.key, event(key="2", status="Ok"))
    row = await incident_row(capi, inc.incident_id)
    now = int(clock.now())
    assert (row.progress, row.close_time, row.end_time, row.incident_status, row.closer_id) == (
        "Closed", now, now, "Ok", 0)
    assert (row.alert_cnt, row.active_alert_cnt, row.alert_event_cnt) == (2, 0, 4)
    from dutyline.db.tables.incident import incident_feed

    feed = await all_rows(capi, incident_feed, incident_feed.c.incident_id == inc.incident_id)
    assert [(f.type, f.creator_id) for f in sorted(feed, key=lambda f: f.id)] == [
        ("i_new", 0), ("i_rslv", 0)]
    assert await stream_kinds(capi, inc.incident_id) == ["created", "alert_added", "resolved"]


@pytest.mark.parametrize("closed_by", ["recovery", "hand"])
async def test_a_snoozed_incident_closed_is_no_longer_snoozed(
    capi: Api, acme: Person, channel_with_integration: Make, closed_by: str
) -> None:
    """Closing ends a snooze however the incident closes: by its alerts' recovery as by
    hand, it leaves the snoozed list and its info shows no snooze."""
    w = await channel_with_integration()
    await push(capi, w.key, event())
    (inc,) = await incidents_of(capi, w.channel_id)
    snoozed = await capi.call("/incident/snooze", {"incident_ids": [inc.incident_id],
                                                   "minutes": 60}, key=acme.key)
    assert snoozed.status == 200, snoozed.body
    window = {"start_time": inc.start_time - 60, "end_time": inc.start_time + 3600}
    listed = await capi.call("/incident/list", {"is_snoozed": True, **window}, key=acme.key)
    assert [i["incident_id"] for i in listed.data["items"]] == [inc.incident_id]
    if closed_by == "recovery":
        await push(capi, w.key, event(status="Ok"))
    else:
        resolved = await capi.call("/incident/resolve", {"incident_ids": [inc.incident_id]},
                                   key=acme.key)
        assert resolved.status == 200, resolved.body
    info = await capi.call("/incident/info", {"incident_id": inc.incident_id}, key=acme.key)
    assert (info.data["progress"], info.data["snoozed_before"]) == ("Closed", 0)
    listed = await capi.call("/incident/list", {"is_snoozed": True, **window}, key=acme.key)
    assert listed.status == 200 and listed.data["items"] == []


async def test_disable_auto_close_keeps_the_incident_open(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(disable_auto_close=True)
    await push(capi, w.key, event())
    await push(capi, w.key, event(status="Ok"))
    (inc,) = await incidents_of(capi, w.channel_id)
    assert (inc.progress, inc.active_alert_cnt, inc.close_time) == ("Triggered", 0, 0)
    assert await stream_kinds(capi, inc.incident_id) == ["created"]


async def test_a_trigger_for_an_alert_of_a_closed_incident_starts_over(
    capi: Api, channel_with_integration: Make
) -> None:
    """Closed while its alert still fires (every close ends its alerts now; an incident
    closed before that, or by a push racing the close, may still hold one): the next trigger
    ends that alert and opens a new incident."""
    w = await channel_with_integration()
    await push(capi, w.key, event())
    (inc,) = await incidents_of(capi, w.channel_id)
    async with capi.runtime.db.transaction() as conn:
        await conn.run_sync(state.close, incident_id=inc.incident_id,
                            account_id=inc.account_id, channel_id=inc.channel_id,
                            now_s=int(capi.runtime.clock.now()), reason="test")
    capi.runtime.clock.advance(1)
    await push(capi, w.key, event())
    old, new = await alerts_of(capi, w.integration_id)
    assert old.end_time > 0 and new.end_time == 0 and new.incident_id != inc.incident_id
    assert (await incident_row(capi, inc.incident_id)).active_alert_cnt == 0


async def _run_due_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, registry=registry, worker_id="test-worker")
    return [await worker.execute(j) for j in await worker.claim(10)]


@pytest.mark.parametrize("mode", ["trigger", "update"])
async def test_auto_resolve_timeout_closes_a_quiet_incident(
    capi: Api, clock: FakeClock, channel_with_integration: Make, mode: str
) -> None:
    import dutyline.incident.ingest.tasks  # noqa: F401  (registers the job kind)

    w = await channel_with_integration(auto_resolve_timeout=300, auto_resolve_mode=mode,
                                       group={"method": "p", "equals": [["svc"]]})
    await push(capi, w.key, event(labels={"svc": "s"}))
    (inc,) = await incidents_of(capi, w.channel_id)
    (job,) = await jobs(capi, AUTO_RESOLVE)
    assert job.run_at == (int(clock.now()) + 300) * 1000
    clock.advance(200)
    # A second alert joins the incident and pushes the timer out.
    await push(capi, w.key, event(key="k2", status="Warning", labels={"svc": "s"}))
    clock.advance(50)
    await push(capi, w.key, event(key="k2", status="Ok"))  # counts only in mode update
    (job,) = await jobs(capi, AUTO_RESOLVE)
    expected_from = int(clock.now()) - (50 if mode == "trigger" else 0)
    assert job.run_at == (expected_from + 300) * 1000
    clock.advance(250)  # 300 s after the last trigger; only 250 s after the last event
    assert await _run_due_jobs(capi) == ([] if mode == "update" else ["done"])
    if mode == "trigger":
        row = await incident_row(capi, inc.incident_id)
        assert row.progress == "Closed" and row.incident_status == "Ok"
        assert all(a.end_time > 0 for a in await alerts_of(capi, w.integration_id))
        assert (await stream_kinds(capi, inc.incident_id))[-1] == "resolved"
        return
    assert (await incident_row(capi, inc.incident_id)).progress == "Triggered"
    clock.advance(60)
    assert await _run_due_jobs(capi) == ["done"]
    assert (await incident_row(capi, inc.incident_id)).progress == "Closed"


async def test_auto_resolve_job_that_finds_new_events_hands_over(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    """An event that came while the timer's job was running could not push it out; the job
    sees the newer event and schedules its successor instead of closing."""
    import dutyline.incident.ingest.tasks  # noqa: F401

    w = await channel_with_integration(auto_resolve_timeout=300)
    await push(capi, w.key, event())
    (inc,) = await incidents_of(capi, w.channel_id)
    worker = Worker(capi.runtime, registry=registry, worker_id="w")
    clock.advance(300)
    (claimed,) = await worker.claim(10)
    await push(capi, w.key, event())  # the job is running: schedule() leaves it alone
    assert await worker.execute(claimed) == "done"
    assert (await incident_row(capi, inc.incident_id)).progress == "Triggered"
    pending = [j for j in await jobs(capi, AUTO_RESOLVE) if j.status == "pending"]
    assert [j.run_at for j in pending] == [(int(clock.now()) + 300) * 1000]
    clock.advance(300)
    assert await _run_due_jobs(capi) == ["done"]
    assert (await incident_row(capi, inc.incident_id)).progress == "Closed"


async def test_no_timer_without_auto_resolve(capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration()
    await push(capi, w.key, event())
    assert await jobs(capi, AUTO_RESOLVE) == []
