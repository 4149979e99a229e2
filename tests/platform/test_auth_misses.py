"""Authentication is cheap and bounded: a repeated wrong app_key is answered from a short
per-process negative cache, never a query each, a key that resolved lately answers from
memory, while a key created after a miss works at once and a revoked key still fails at
once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from dutyline.api.auth import hash_app_key
from dutyline.platform.app_key import keys
from dutyline.platform.app_key.misses import MISSED, NEGATIVE_TTL_S, MissedKeys
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.signals import watching

pytestmark = pytest.mark.anyio
N = 50


@pytest.fixture
async def capi(settings: Any) -> Any:
    MISSED.clear()
    async with make_api(settings, clock=FakeClock(1_700_000_000.0)) as client:
        yield client
    MISSED.clear()


class Statements:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.seen.append(statement)

    @property
    def key_lookups(self) -> int:
        return sum("app_key" in s and "key_hash" in s for s in self.seen)


@pytest.fixture
def statements(capi: Api) -> Iterator[Statements]:
    counter = Statements()
    # /team/list runs on `run_sync`'s engine on SQLite: watch every engine.
    engines = capi.runtime.db.sync_engines
    for engine in engines:
        event.listen(engine, "before_cursor_execute", counter)
    yield counter
    for engine in engines:
        event.remove(engine, "before_cursor_execute", counter)


async def _list(api: Api, key: str) -> int:
    return (await api.raw("POST", "/team/list", params={"app_key": key}, json={})).status_code


async def test_a_flood_of_one_wrong_key_costs_one_query(
    capi: Api, statements: Statements
) -> None:
    for _ in range(N):
        assert await _list(capi, "dk_wrong-key-from-a-misconfigured-client") == 401
    assert statements.key_lookups == 1
    assert len(statements.seen) < N  # no statement at all for the repeated misses
    # After the short TTL the key is looked up again (a key made elsewhere may exist now).
    capi.runtime.clock.advance(NEGATIVE_TTL_S + 1)
    assert await _list(capi, "dk_wrong-key-from-a-misconfigured-client") == 401
    assert statements.key_lookups == 2


async def test_a_key_created_after_a_miss_works_at_once(
    capi: Api, owner: Person, statements: Statements, monkeypatch: pytest.MonkeyPatch
) -> None:
    plaintext = "dk_" + "x" * 43
    assert await _list(capi, plaintext) == 401
    assert MISSED.recently_missed(hash_app_key(plaintext), capi.runtime.clock.now())
    # The next key issued happens to have exactly that value (as if a client held it early).
    monkeypatch.setattr(keys, "generate", lambda: plaintext)
    async with capi.runtime.db.transaction() as conn:
        await keys.issue(conn, account_id=owner.account_id, person_id=owner.person_id,
                         key_name="late", now_s=int(capi.runtime.clock.now()))
    assert await _list(capi, plaintext) == 200


async def test_valid_keys_resolve_from_memory_and_revocation_is_still_immediate(
    capi: Api, owner: Person, statements: Statements
) -> None:
    from sqlalchemy import delete

    from dutyline.db.tables.platform import app_key

    await watching(capi.runtime)
    for _ in range(3):
        assert await _list(capi, owner.key) == 200
    assert statements.key_lookups == 1  # the change signal is watched: one query, then memory
    async with capi.runtime.db.transaction() as conn:
        await conn.execute(delete(app_key).where(app_key.c.key_hash == hash_app_key(owner.key)))
    assert await _list(capi, owner.key) == 401


def test_the_cache_is_bounded_and_expires() -> None:
    misses = MissedKeys(ttl_s=5, size=3)
    for i in range(10):
        misses.remember(f"h{i}", now=100)
    assert len(misses) == 3
    assert misses.recently_missed("h9", now=104)
    assert not misses.recently_missed("h0", now=100)
    assert not misses.recently_missed("h9", now=105)
    misses.remember("h8", now=100)
    misses.forget("h8")
    assert not misses.recently_missed("h8", now=101)
