"""Retention (work/retention.py): every table's rows past their kept time are deleted, rows
inside it stay, and so do the rows something still needs, whatever their age: the events of
an open incident, the raw events of an active alert, a pending delivery, a lockout still
running, and the newest row of a table whose ids SQLite hands out as max(id) + 1. The
hourly schedule fires once and enqueues one job, which a worker runs. On both databases."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Boolean, Integer, Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.runtime import Runtime
from dutyline.db.tables.dispatch import channel_notify_sent
from dutyline.db.tables.incident import (
    alert,
    alert_event,
    incident,
    incident_event,
    intake_outcome,
)
from dutyline.db.tables.notify import notify_attempt, notify_delivery
from dutyline.db.tables.platform import account, audit_log, member
from dutyline.db.tables.scheduler import work_schedule
from dutyline.db.tables.web import console_link, console_session, console_sign_in_failure
from dutyline.db.tables.work import job
from dutyline.kit.clock import millis
from dutyline.work import retention, scheduler
from dutyline.work.worker import Worker
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio

DAY_S = 86_400


def row(table: Table, **values: Any) -> dict[str, Any]:
    """`values` plus a plain value for every other column that must have one."""
    out = dict(values)
    for column in table.columns:
        if column.name in out or column.nullable or column.server_default is not None \
                or column.autoincrement is True:
            continue
        kind = column.type
        out[column.name] = (False if isinstance(kind, Boolean)
                            else 1 if isinstance(kind, Integer) else "x")
    return out


async def _add(conn: AsyncConnection, table: Table, **values: Any) -> None:
    await conn.execute(insert(table).values(row(table, **values)))


async def _keys(runtime: Runtime, table: Table) -> set[Any]:
    key = list(table.primary_key.columns)
    async with runtime.db.transaction(write=False) as conn:
        rows = (await conn.execute(select(*key))).all()
    return {r[0] if len(key) == 1 else tuple(r) for r in rows}


async def _seed(runtime: Runtime, now_s: int) -> None:
    """For each rule: a row past its retention ("old"), one inside it ("new"), and the rows
    kept whatever their age ("kept"). Ids of autoincrement tables are given, so the newest
    (kept as such) is a row that stays anyway."""
    settings = runtime.settings
    old = {
        "claim": now_s - (settings.notify_claim_retention_days + 1) * DAY_S,
        "sign_in": now_s - (settings.expired_sign_in_retention_days + 1) * DAY_S,
        "attempt": now_s - (settings.delivery_attempt_retention_days + 1) * DAY_S,
        "delivery": now_s - (settings.delivery_retention_days + 1) * DAY_S,
        "alert": now_s - (settings.alert_event_retention_days + 1) * DAY_S,
        "incident": now_s - (settings.incident_event_retention_days + 1) * DAY_S,
        "audit": now_s - (settings.audit_retention_days + 1) * DAY_S,
    }
    recent = now_s - DAY_S
    async with runtime.db.transaction() as conn:
        await _add(conn, account, account_id=1, account_name="a", created_at=0, updated_at=0)
        await _add(conn, member, member_id=7, account_id=1, member_name="m", email="m@x.io",
                   created_at=0, updated_at=0)
        for rid, at in (("old", old["claim"]), ("new", recent)):
            await _add(conn, channel_notify_sent, rule_id=rid, event_id=1, incident_id="i",
                       created_at=at)
        # Sessions and links count from their expiry: one expired long ago, one expired
        # yesterday (inside the grace), one still live.
        for name, expires in (("old", old["sign_in"]), ("new", recent), ("live", now_s + 60)):
            await _add(conn, console_session, session_hash=name, account_id=1, member_id=7,
                       created_at=0, last_seen_at=0, expires_at=expires)
            await _add(conn, console_link, token_hash=name, purpose="welcome", account_id=1,
                       member_id=7, created_at=0, expires_at=expires)
        await _add(conn, console_sign_in_failure, subject="old", failures=1,
                   last_failure_at=old["sign_in"])
        await _add(conn, console_sign_in_failure, subject="new", failures=1,
                   last_failure_at=recent)
        await _add(conn, console_sign_in_failure, subject="kept", failures=9,
                   last_failure_at=old["sign_in"], locked_until=now_s + 3600)
        for n, at in ((1, old["attempt"]), (2, recent)):
            await _add(conn, notify_attempt, id=n, delivery_id="d", account_id=1,
                       incident_id="i", channel="webhook", attempt=n, status="success",
                       event_time_ms=at * 1000)
        for name, at, status in (("old", old["delivery"], "success"),
                                 ("new", recent, "failed"),
                                 ("kept", old["delivery"], "pending")):
            await _add(conn, notify_delivery, delivery_id=name, account_id=1, incident_id="i",
                       channel="email", status=status, created_at=at, updated_at=at)
        for name, end in (("active", 0), ("ended", old["alert"] + 60)):
            await _add(conn, alert, alert_id=name, account_id=1, channel_id=1,
                       integration_id=1, alert_key=name, alert_severity="Critical",
                       alert_status="Critical", start_time=0, last_time=0, end_time=end,
                       created_at=0, updated_at=0)
        for name, alert_id, at in (("old", "ended", old["alert"]), ("new", "ended", recent),
                                   ("kept", "active", old["alert"])):
            await _add(conn, alert_event, event_id=name, alert_id=alert_id, account_id=1,
                       channel_id=1, integration_id=1, event_status="Critical",
                       event_severity="Critical", event_time=at, created_at=at)
        for n, at in ((1, old["alert"]), (2, recent)):
            await _add(conn, intake_outcome, id=n, account_id=1, integration_id=1,
                       received_at=at, source="standard", outcome="opened")
        for name, progress in (("open", "Triggered"), ("closed", "Closed")):
            await _add(conn, incident, incident_id=name, account_id=1, num=name, title=name,
                       incident_severity="Critical", incident_status="Critical",
                       progress=progress, start_time=0, last_time=0, created_at=0,
                       updated_at=0)
        # 1: a closed incident's, old; 2: of an incident removed since, old; 3: an open
        # incident's, old; 4: new.
        for n, incident_id, at in ((1, "closed", old["incident"]), (2, "gone", old["incident"]),
                                   (3, "open", old["incident"]), (4, "closed", recent)):
            await _add(conn, incident_event, id=n, account_id=1, incident_id=incident_id,
                       kind="created", created_at=at)
        for n, at in ((1, old["audit"]), (2, recent)):
            await _add(conn, audit_log, id=n, account_id=1, member_id=7, request_id="r",
                       operation="/x", outcome="ok", is_write=True, created_at=at * 1000)


async def test_each_table_is_pruned_past_its_retention_and_keeps_what_is_needed(
        runtime: Runtime, clock: FakeClock) -> None:
    now_s = int(clock.now())
    await _seed(runtime, now_s)
    pruned = await retention.prune(runtime.db, runtime.settings, now_ms=millis(clock),
                                   batch=1)
    assert pruned == {"channel_notify_sent": 1, "console_session": 1, "console_link": 1,
                      "console_sign_in_failure": 1, "notify_attempt": 1,
                      "notify_delivery": 1, "alert_event": 1, "intake_outcome": 1,
                      "incident_event": 2, "audit_log": 1}
    assert {name for name, _ in await _keys(runtime, channel_notify_sent)} == {"new"}
    assert await _keys(runtime, console_session) == {"new", "live"}
    assert await _keys(runtime, console_link) == {"new", "live"}
    assert await _keys(runtime, console_sign_in_failure) == {"new", "kept"}
    assert await _keys(runtime, notify_attempt) == {2}
    assert await _keys(runtime, notify_delivery) == {"new", "kept"}
    assert await _keys(runtime, alert_event) == {"new", "kept"}
    assert await _keys(runtime, intake_outcome) == {2}
    assert await _keys(runtime, incident_event) == {3, 4}
    assert await _keys(runtime, audit_log) == {2}
    # Nothing else is touched: the alerts and incidents themselves stay.
    assert await _keys(runtime, alert) == {"active", "ended"}
    assert await _keys(runtime, incident) == {"open", "closed"}
    # A second run finds nothing more.
    again = await retention.prune(runtime.db, runtime.settings, now_ms=millis(clock))
    assert set(again.values()) == {0}


async def test_batches_delete_everything_due_and_the_newest_id_stays(
        runtime: Runtime, clock: FakeClock) -> None:
    """Many more rows than a batch all go, in several transactions; the newest of a table
    whose ids SQLite derives from max(id) stays, so no id is handed out twice."""
    old_ms = millis(clock) - (runtime.settings.audit_retention_days + 1) * DAY_S * 1000
    async with runtime.db.transaction() as conn:
        await conn.execute(insert(audit_log), [row(
            audit_log, account_id=1, member_id=7, request_id="r", operation="/x",
            outcome="ok", is_write=True, created_at=old_ms + n) for n in range(23)])
    pruned = await retention.prune_rule(runtime.db, retention.RULES[-1],
                                        settings=runtime.settings, now_ms=millis(clock),
                                        batch=5)
    assert pruned == 22
    (newest,) = await _keys(runtime, audit_log)
    async with runtime.db.transaction() as conn:
        await _add(conn, audit_log, account_id=1, member_id=7, request_id="r",
                   operation="/x", outcome="ok", is_write=True, created_at=millis(clock))
        top = (await conn.execute(select(func.max(audit_log.c.id)))).scalar()
    assert top == newest + 1


async def test_zero_days_keeps_rows_forever(runtime: Runtime, clock: FakeClock) -> None:
    await _seed(runtime, int(clock.now()))
    forever = runtime.settings.with_(
        audit_retention_days=0, incident_event_retention_days=0, delivery_retention_days=0,
        delivery_attempt_retention_days=0, alert_event_retention_days=0,
        notify_claim_retention_days=0, expired_sign_in_retention_days=0)
    pruned = await retention.prune(runtime.db, forever, now_ms=millis(clock))
    assert set(pruned.values()) == {0}


async def test_the_hourly_schedule_enqueues_one_job_that_a_worker_runs(
        runtime: Runtime, clock: FakeClock) -> None:
    db = runtime.db
    start = millis(clock)
    await retention.ensure_schedule(db, now_ms=start)
    await retention.ensure_schedule(db, now_ms=start + 5)  # another process starting
    async with db.transaction(write=False) as conn:
        rows = (await conn.execute(select(work_schedule.c.next_fire_at).where(
            work_schedule.c.kind == retention.KIND))).all()
    assert [r.next_fire_at for r in rows] == [start + retention.INTERVAL_MS]
    await _seed(runtime, int(clock.now()))

    async def pending() -> int:
        async with db.transaction(write=False) as conn:
            return int((await conn.execute(select(func.count()).select_from(job).where(
                job.c.kind == retention.KIND, job.c.status == "pending"))).scalar() or 0)

    clock.advance(retention.INTERVAL_MS / 1000)
    assert await scheduler.fire_due(db, now_ms=millis(clock)) == 1
    clock.advance(retention.INTERVAL_MS / 1000)
    assert await scheduler.fire_due(db, now_ms=millis(clock)) == 1
    assert await pending() == 1  # the second fire found the first job still waiting
    worker = Worker(runtime, worker_id="test")
    claimed = await worker.claim(10)
    assert [j.kind for j in claimed] == [retention.KIND]
    assert await worker.execute(claimed[0]) == "done"
    assert await _keys(runtime, audit_log) == {2}
    assert await _keys(runtime, incident_event) == {3, 4}
