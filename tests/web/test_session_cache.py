"""Console sessions are resolved from the process's memory (web/session_cache.py): a page
costs no session query while nothing changed, and yet an ended session, a removed or
disabled member and a role change take effect on the next page; a session still ends on
time, and being seen writes its row at most once a minute, as without the cache."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, update

from dutyline.db import signals
from dutyline.db.signals import ChangeSignals
from dutyline.db.tables.platform import member
from dutyline.web import service as signin
from dutyline.web.session_cache import SessionCache
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, set_password, signed_in
from tests.fixtures.signals import watching

pytestmark = pytest.mark.anyio
PAGE = "/console/members"
N = 20


class Statements:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.seen.append(" ".join(statement.split()))

    def count(self, start: str) -> int:
        return sum(s.upper().startswith(start) and "console_session" in s for s in self.seen)


@pytest.fixture
def statements(api: Api) -> Iterator[Statements]:
    counter = Statements()
    engines = [api.runtime.db.engine.sync_engine]
    writer = getattr(api.runtime.db, "_sync", None)
    if writer is not None:  # SQLite's writes run on their own engine
        engines.append(writer.engine)
    for engine in engines:
        event.listen(engine, "before_cursor_execute", counter)
    yield counter
    for engine in engines:
        event.remove(engine, "before_cursor_execute", counter)


async def _status(b: Browser, path: str = PAGE) -> int:
    return (await b.get(path)).status_code


async def test_pages_resolve_the_session_from_memory(
        api: Api, owner: Person, console: Browser, statements: Statements) -> None:
    await watching(api.runtime)
    for _ in range(N):
        assert await _status(console) == 200
    # The first page reads it; a write's signal moves here at its commit and again when the
    # watcher sees it (PostgreSQL's notification, SQLite's next poll), so the setup's own
    # write may cost one more read. Then it is kept.
    assert statements.count("SELECT") <= 2
    assert statements.count("UPDATE") == 0


async def test_an_ended_session_is_refused_on_its_next_page(
        api: Api, owner: Person, console: Browser) -> None:
    await watching(api.runtime)
    other = await signed_in(api, owner)
    assert await _status(other) == 200
    assert await _status(console) == 200  # both known to the process now
    me = await console.get("/console/me")
    theirs = [p for p in _public_ids(me.text) if p != _own_public_id(console)]
    assert len(theirs) == 1
    revoked = await console.post("/console/me/sessions/revoke", {"session_id": theirs[0]})
    assert revoked.status_code == 303
    assert await _status(other) == 303  # to sign in
    assert await _status(console) == 200
    signed_out = await console.post("/console/sign-out")
    assert signed_out.status_code == 303
    await other.aclose()


def _public_ids(html: str) -> list[str]:
    import re

    return re.findall(r'name="session_id" value="([0-9a-f]{20})"', html)


def _own_public_id(b: Browser) -> str:
    token = b.cookie("dutyline_session") or ""
    session = signin.Session(signin.token_hash(token), 0, 0, 0, 0, 0, "", "", False)
    return signin.public_id(session)


async def test_a_password_change_ends_the_other_sessions(
        api: Api, owner: Person, console: Browser) -> None:
    await watching(api.runtime)
    await set_password(api, owner, "correct horse battery")
    other = await signed_in(api, owner)
    assert await _status(other) == 200
    changed = await console.post("/console/me/password", {
        "current_password": "correct horse battery", "password": "a new staple battery",
        "password_again": "a new staple battery"})
    assert changed.status_code == 303, changed.text
    assert await _status(other) == 303
    assert await _status(console) == 200
    await other.aclose()


async def test_member_and_role_changes_apply_on_the_next_page(
        api: Api, owner: Person) -> None:
    await watching(api.runtime)
    admin = await new_member(api, owner, name="Ada", builtin="admin")
    b = await signed_in(api, admin)
    for _ in range(3):
        assert await _status(b, "/console/members/new") == 200
    dropped = await api.call("/member/role/update", {"member_id": admin.person_id,
                                                     "role_ids": []}, key=owner.key)
    assert dropped.status == 200, dropped.body
    assert await _status(b, "/console/members/new") == 403
    async with api.runtime.db.transaction() as conn:  # disabled, by any code path
        await conn.execute(update(member).where(member.c.member_id == admin.person_id)
                           .values(status="disabled"))
    assert await _status(b) == 303
    await b.aclose()


async def test_being_seen_writes_at_most_once_a_minute_and_moves_no_signal(
        api: Api, owner: Person, console: Browser, clock: FakeClock,
        statements: Statements) -> None:
    await watching(api.runtime)
    ended_before = signals.committed_here(signals.SESSION)
    for _ in range(N):
        clock.advance(2)
        assert await _status(console) == 200
    assert statements.count("UPDATE") == 0  # 40 s: not due yet
    clock.advance(signin.SESSION_TOUCH_S)
    for _ in range(N):
        assert await _status(console) == 200
    assert statements.count("UPDATE") == 1
    assert signals.committed_here(signals.SESSION) == ended_before


async def test_a_kept_session_still_ends_on_time(
        api: Api, owner: Person, console: Browser, clock: FakeClock) -> None:
    """Thirty days after sign-in a session ends, however recently it was seen: an entry
    kept in memory is not trusted past the end it read."""
    await watching(api.runtime)
    started = clock.now()
    while clock.now() < started + signin.SESSION_MAX_S - 30:
        clock.advance(min(6 * 86_400, started + signin.SESSION_MAX_S - 30 - clock.now()))
        assert await _status(console) == 200
    clock.advance(29)
    assert await _status(console) == 200
    clock.advance(2)
    assert await _status(console) == 303


async def test_nothing_is_kept_while_the_signals_are_not_followed(
        api: Api, owner: Person, console: Browser) -> None:
    token = console.cookie("dutyline_session") or ""
    cache = SessionCache(ChangeSignals())  # a watcher that never started
    now = int(api.runtime.clock.now())
    for _ in range(3):
        found = await cache.resolve(api.runtime.db, token, now)
        assert found is not None and found.caller.person_id == owner.person_id
    assert (cache.hits, cache.misses, len(cache)) == (0, 3, 0)


async def test_the_cache_is_bounded(api: Api, owner: Person) -> None:
    await watching(api.runtime)
    cache = SessionCache(api.runtime.signals, size=3)
    now = int(api.runtime.clock.now())
    tokens = []
    for _ in range(5):
        b = await signed_in(api, owner)
        tokens.append(b.cookie("dutyline_session") or "")
        await b.aclose()
    for token in tokens:
        assert await cache.resolve(api.runtime.db, token, now) is not None
    assert len(cache) == 3


async def test_a_sign_in_keeps_the_kept_sessions_and_an_end_drops_them(
        api: Api, owner: Person, console: Browser) -> None:
    """A new session, or a write that matched no row, makes no kept session stale; a session
    ended does."""
    moved = signals.committed_here(signals.SESSION)
    other = await signed_in(api, owner)  # a sign-in: its insert, no expired session to end
    assert signals.committed_here(signals.SESSION) == moved
    signed_out = await other.post("/console/sign-out")
    assert signed_out.status_code == 303
    assert signals.committed_here(signals.SESSION) == moved + 1
    await other.aclose()
