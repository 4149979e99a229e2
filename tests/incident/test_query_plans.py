"""SQLite reads incidents by id through their primary key, not by walking the account's
list index (bench/past_incidents.py: 5 ids among 100,000 incidents took 136 ms that way).
A plan assertion, not a timing: EXPLAIN QUERY PLAN of the statement the repository runs."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from dutyline.channel import repository as repo_of_channels
from dutyline.channel.repository import Viewer
from dutyline.db.engine import Database
from dutyline.incident.query import repository as repo
from dutyline.incident.visibility import Scope
from tests.fixtures.query_plans import query_plans
from tests.fixtures.sync import in_sync

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("admin", [True, False])
async def test_reads_by_id_use_the_primary_key(sqlite_url: str, admin: bool) -> None:
    db = Database(sqlite_url)
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, params))

    event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
    scope = Scope(7, None if admin else repo_of_channels.visible_ids(
        7, Viewer(is_admin=False, team_ids=frozenset({1}))))
    try:
        async with db.transaction(write=False) as conn:
            await in_sync(conn, repo.find_many_sync, scope, [f"{n:024x}" for n in range(5)])
            statement, params = seen[-1]
            plan = [r[3] for r in (await conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, params)).all()]
            assert any("sqlite_autoindex_incident_1" in step for step in plan), plan
            assert not any("ix_incident_list" in step for step in plan), plan
    finally:
        await db.dispose()


async def test_a_list_page_counts_and_names_in_one_statement(sqlite_url: str) -> None:
    """A page of /incident/list is one statement: the window walked by the list's index, its
    total an uncorrelated count read from a covering index once, and each row's channel and
    account looked up by primary key (no scan of either)."""
    db = Database(sqlite_url)
    f = repo.ListFilter(start_time=0, end_time=100, now_s=50)
    try:
        plans = await query_plans(db, lambda conn: in_sync(
            conn, repo.window_sync, Scope(7, None), f, asc=False, offset=0, limit=21))
        assert len(plans) == 1, plans
        plan = plans[0]
        assert any(s.startswith("SEARCH incident USING INDEX ix_incident_") for s in plan), plan
        assert any(s.startswith("SCALAR SUBQUERY") for s in plan), plan
        assert any(s.startswith("SEARCH incident USING COVERING INDEX") for s in plan), plan
        assert any(s.startswith("SEARCH channel USING INDEX sqlite_autoindex_channel")
                   for s in plan), plan
        assert any(s.startswith("SEARCH account USING INDEX sqlite_autoindex_account")
                   for s in plan), plan
        assert not any(s.startswith("SCAN") for s in plan), plan
    finally:
        await db.dispose()


async def test_a_pages_sources_are_one_statement_read_by_index(sqlite_url: str) -> None:
    """The integrations of a page's alerts and its recurrences are one statement: alerts by
    incident id, the recurrences on ix_incident_recurrence; nothing scanned but the few
    rows it returns."""
    db = Database(sqlite_url)
    try:
        plans = await query_plans(db, lambda conn: in_sync(
            conn, repo.sources_sync, [f"{n:024x}" for n in range(3)]))
        assert len(plans) == 1, plans
        plan = plans[0]
        assert any(s.startswith("SEARCH alert USING INDEX ix_alert_incident") for s in plan), plan
        assert any("SEARCH page USING INDEX sqlite_autoindex_incident_1" in s
                   for s in plan), plan
        assert any("SEARCH earlier USING INDEX ix_incident_recurrence" in s
                   for s in plan), plan
        assert [s for s in plan if s.startswith("SCAN")] == ["SCAN sources"], plan
    finally:
        await db.dispose()
