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
            await repo.find_many(conn, scope, [f"{n:024x}" for n in range(5)])
            statement, params = seen[-1]
            plan = [r[3] for r in (await conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, params)).all()]
            assert any("sqlite_autoindex_incident_1" in step for step in plan), plan
            assert not any("ix_incident_list" in step for step in plan), plan
    finally:
        await db.dispose()


async def test_frequency_counts_read_the_recurrence_index(sqlite_url: str) -> None:
    """A list page's `frequency` is one statement whose counts each walk a short range of
    ix_incident_recurrence (account, channel, title, start_time), never the channel."""
    db = Database(sqlite_url)
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        seen.append((statement, params))

    event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
    try:
        async with db.transaction(write=False) as conn:
            assert await repo.frequent(conn, [f"{n:024x}" for n in range(3)]) == set()
            assert len(seen) == 1
            statement, params = seen[-1]
            plan = [r[3] for r in (await conn.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + statement, params)).all()]
            assert any("SEARCH page USING INDEX sqlite_autoindex_incident_1" in s
                       for s in plan), plan
            assert any("SEARCH earlier USING INDEX ix_incident_recurrence" in s
                       for s in plan), plan
            assert not any(s.startswith("SCAN") for s in plan), plan
    finally:
        await db.dispose()
