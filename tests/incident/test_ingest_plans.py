"""The lookups of an alert push use their indexes on both databases, whatever PostgreSQL's
plan cache settles on: the statement a pooled connection has prepared keeps the generic
plan it chose while the table was small, so that plan must be the right one. The active-key
lookups must reach the partial unique index uq_alert_active_key (end_time = 0), which a
bound `end_time = $n` cannot (bench/README.md: the channel's active alerts were walked,
1 ms a push at 10,000). Plan assertions, not timings: EXPLAIN of the statements ingestion
runs, captured as it runs them."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event as sa_event

from dutyline.incident import creation
from tests.fixtures.api import Api
from tests.incident.conftest import Wired, event, push
from tests.incident.ingest_support import incidents_of

pytestmark = pytest.mark.anyio


async def _captured(api: Api, run: Any) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        seen.append((statement, params))

    db = api.runtime.db
    # On SQLite ingestion runs on the database's sync engine, on a thread of its own.
    engines = [db.engine.sync_engine] + ([db._sync.engine] if db._sync is not None else [])
    for engine in engines:
        sa_event.listen(engine, "before_cursor_execute", capture)
    try:
        await run()
    finally:
        for engine in engines:
            sa_event.remove(engine, "before_cursor_execute", capture)
    return seen


async def _generic_plan(api: Api, statement: str, params: Any) -> str:
    """PostgreSQL's generic plan of the statement (the one a prepared statement settles on
    after its fifth run), through a named prepared statement on a raw connection."""
    async with api.runtime.db.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        await raw.execute("SET plan_cache_mode = force_generic_plan")
        await raw.execute(f"PREPARE probe AS {statement}")
        args = ", ".join("NULL" for _ in params)
        try:
            rows = await raw.fetch(f"EXPLAIN EXECUTE probe({args})" if params
                                   else "EXPLAIN EXECUTE probe")
        finally:
            await raw.execute("DEALLOCATE probe; RESET plan_cache_mode")
    return "\n".join(r[0] for r in rows)


async def _sqlite_plan(api: Api, statement: str, params: Any) -> str:
    async with api.runtime.db.connect() as conn:
        rows = (await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params)).all()
    return "\n".join(str(r[3]) for r in rows)


async def test_the_active_alert_lookups_use_the_partial_unique_index(
    capi: Api, channel_with_integration: Any
) -> None:
    w: Wired = await channel_with_integration()
    assert (await push(capi, w.key, event(key="warm"))).status == 200
    seen = await _captured(capi, lambda: push(capi, w.key, event(key="db-1")))
    lookups = [(s, p) for s, p in seen
               if s.lstrip().upper().startswith("SELECT") and "alert.alert_key" in s
               and "end_time" in s]
    assert len(lookups) >= 1, [s for s, _ in seen]
    for statement, params in lookups:
        if capi.runtime.db.is_postgres:
            plan = await _generic_plan(capi, statement, params)
        else:
            plan = await _sqlite_plan(capi, statement, params)
        assert "uq_alert_active_key" in plan, plan
        assert "ix_alert_channel_active" not in plan, plan


async def test_an_incident_number_is_taken_by_its_insert_and_drawn_again_when_held(
    capi: Api, channel_with_integration: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No read before the insert: the unique (account, num) constraint decides, and a
    number another incident of the account holds is drawn again."""
    w: Wired = await channel_with_integration()
    draws = iter(["AAAAAA", "AAAAAA", "AAAAAA", "BBBBBB"])
    monkeypatch.setattr(creation, "_draw_num", lambda: next(draws))
    assert (await push(capi, w.key, event(key="first"))).status == 200
    seen = await _captured(capi, lambda: push(capi, w.key, event(key="second")))
    assert [i.num for i in await incidents_of(capi, w.channel_id)] == ["AAAAAA", "BBBBBB"]
    assert next(draws, None) is None  # drawn three times for the second
    reads = [s for s, _ in seen if s.lstrip().upper().startswith("SELECT")
             and "incident.num" in s]
    assert reads == []
