"""The pieces of the live incident views: counts by progress (the list's tabs), the changes
past a cursor, and the per-process watch that rings when any process commits an incident
event (PostgreSQL NOTIFY; a poll of the event ids on SQLite)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.db.engine import Database
from dutyline.incident import live
from dutyline.incident.query import service as incidents
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync
from tests.incident.lifecycle_support import create, seed_channel

pytestmark = pytest.mark.anyio


def _actor(api: Api, who: Person, *, admin: bool = True,
           permissions: frozenset[str] = frozenset()) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 is_admin=admin, permissions=permissions, credential="session")


def _window(api: Api) -> dict[str, int]:
    now = int(api.runtime.clock.now())
    return {"start_time": now - 3600, "end_time": now + 60}


async def test_counts_by_progress_follow_the_list_filters(api: Api, owner: Person,
                                                          other_owner: Person) -> None:
    payments = await seed_channel(api, owner, "Payments")
    a = await create(api, owner, title="a", channel_id=payments)
    b = await create(api, owner, title="b", incident_severity="Warning")
    await create(api, owner, title="c", channel_id=payments)
    await create(api, other_owner, title="theirs")
    await api.call("/incident/ack", {"incident_ids": [a]}, key=owner.key)
    await api.call("/incident/resolve", {"incident_ids": [b]}, key=owner.key)
    actor = _actor(api, owner)
    async with api.runtime.db.transaction(write=False) as conn:
        every = await in_sync(conn, incidents.progress_counts_sync, actor, **_window(api))
        in_payments = await in_sync(conn, incidents.progress_counts_sync, actor, **_window(api),
                                                      channel_ids=[payments])
        warnings = await in_sync(conn, incidents.progress_counts_sync, actor, **_window(api),
                                                   incident_severity="Warning")
        searched = await in_sync(conn, incidents.progress_counts_sync,
                                 actor, **_window(api), query="c")
    assert every == {"Triggered": 1, "Processing": 1, "Closed": 1}
    assert in_payments == {"Triggered": 1, "Processing": 1, "Closed": 0}
    assert warnings == {"Triggered": 0, "Processing": 0, "Closed": 1}
    assert searched == {"Triggered": 1, "Processing": 0, "Closed": 0}


async def test_counts_and_changes_need_a_read_permission(api: Api, owner: Person) -> None:
    nobody = _actor(api, owner, admin=False)
    async with api.runtime.db.transaction(write=False) as conn:
        with pytest.raises(errors.AccessDenied):
            await in_sync(conn, incidents.progress_counts_sync, nobody, **_window(api))
        with pytest.raises(errors.AccessDenied):
            await in_sync(conn, incidents.live_cursor_sync, nobody)
        with pytest.raises(errors.AccessDenied):
            await incidents.incident_changes(conn, nobody, cursor=live.LiveCursor(0))


async def test_counts_leave_out_what_the_member_may_not_see(api: Api, owner: Person) -> None:
    member = await new_member(api, owner, name="Mia")
    team = await api.call("/team/upsert", {"team_name": "Core",
                                           "person_ids": [owner.person_id]}, key=owner.key)
    secret = await api.call("/channel/create", {
        "channel_name": "Secret", "team_id": team.data["team_id"], "is_private": True},
        key=owner.key)
    assert secret.status == 200, secret.body
    await create(api, owner, title="hidden", channel_id=secret.data["channel_id"])
    await create(api, owner, title="open")
    async with api.runtime.db.transaction(write=False) as conn:
        seen = await in_sync(
            conn, incidents.progress_counts_sync,
            _actor(api, member, admin=False, permissions=frozenset({"channel_view"})),
            **_window(api))
    assert seen["Triggered"] == 1


async def test_changes_past_a_cursor_are_the_account_s_only_and_each_once(
        api: Api, owner: Person, other_owner: Person) -> None:
    actor = _actor(api, owner)
    async with api.runtime.db.transaction(write=False) as conn:
        cursor = await in_sync(conn, incidents.live_cursor_sync, actor)
    first = await create(api, owner, title="first")
    await create(api, other_owner, title="theirs")
    await api.call("/incident/ack", {"incident_ids": [first]}, key=owner.key)
    async with api.runtime.db.transaction(write=False) as conn:
        changes = await incidents.incident_changes(conn, actor, cursor=cursor)
        again = await incidents.incident_changes(conn, actor, cursor=cursor)
    assert [(c.incident_id, c.kind) for c in changes] == [(first, "created"),
                                                           (first, "acked")]
    assert again == []
    second = await create(api, owner, title="second")
    async with api.runtime.db.transaction(write=False) as conn:
        later = await incidents.incident_changes(conn, actor, cursor=cursor)
    assert [(c.incident_id, c.kind) for c in later] == [(second, "created")]


def _rows(*ids: int) -> list[Any]:
    return [SimpleNamespace(id=i) for i in ids]


def test_a_cursor_with_lookback_takes_an_id_that_committed_late_once() -> None:
    cursor = live.LiveCursor(10, lookback=5)
    assert cursor.since() == 5
    # 12 committed before 11 did: 11 shows up on a later read, behind the cursor.
    assert [r.id for r in cursor.take(_rows(12))] == [12]
    assert cursor.last_id == 12 and cursor.since() == 7
    assert [r.id for r in cursor.take(_rows(11, 12, 13))] == [11, 13]
    assert cursor.take(_rows(11, 12, 13)) == []


def test_a_cursor_without_lookback_takes_only_what_is_past_it() -> None:
    cursor = live.LiveCursor(10)
    assert cursor.since() == 10
    assert [r.id for r in cursor.take(_rows(11, 12))] == [11, 12]
    assert cursor.take(_rows(12)) == [] and cursor.last_id == 12


async def _rung(watch: live.Watch) -> bool:
    try:
        async with asyncio.timeout(5):
            await watch.wait()
    except TimeoutError:
        return False
    return True


async def test_a_commit_in_another_process_rings_the_account_s_watchers(
        api: Api, owner: Person, other_owner: Person, database_url: str) -> None:
    """Another `Database` on the same database stands for another process: on PostgreSQL its
    NOTIFY reaches us, on SQLite our poll sees its rows."""
    hub = live.EventWatch(Database(database_url), poll_s=0.05)
    try:
        async with hub.watch(owner.account_id) as ours, \
                hub.watch(other_owner.account_id) as theirs:
            assert hub.watching == 2
            async with asyncio.timeout(5):
                await hub.ready.wait()  # listening, or the poll has read where it starts
            await create(api, owner, title="db down")
            assert await _rung(ours)
            await create(api, other_owner, title="theirs")
            assert await _rung(theirs)
        assert hub.watching == 0
    finally:
        await hub.close()
        await hub.db.dispose()


async def test_one_watch_per_database(sqlite_url: str) -> None:
    db, another = Database(sqlite_url), Database(sqlite_url)
    try:
        assert live.for_database(db) is live.for_database(db)
        assert live.for_database(db) is not live.for_database(another)
    finally:
        await db.dispose()
        await another.dispose()
