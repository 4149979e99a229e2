"""/incident/list's `query` (title contains, ignoring case) answered through the title index
(FTS5 trigram table on SQLite, pg_trgm on PostgreSQL): the same results and totals as the
plain `lower(title) LIKE` it replaced, whatever the title or the query holds, and kept in
step when titles change and incidents go."""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import anyio
import pytest
from sqlalchemy import delete, event, func, insert, select, text
from sqlalchemy.engine import make_url

from dutyline.db.engine import Database
from dutyline.db.tables.incident import incident
from dutyline.incident.query.title_search import title_contains
from dutyline.kit.ids import hex_id
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api
from tests.incident.lifecycle_support import create, now

pytestmark = pytest.mark.anyio

DAY = 86_400

PIECES = [
    "Disk", "DISK", "disk_full", "CPU", "api", "db-01", "100%", "50%_off", "a_b", "x/y", "//",
    "/%", "o'clock", 'say "hi"', "back\\slash", "École", "école", "ÉCOLE", "Ünïcode", "straße",
    "STRASSE", "ΟΔΟΣ", "οδός", "日本語", "日本", "🔥fire🔥", "İstanbul", "\u212a elvin",
    "tab\there", "  spaced  ", "ab", "a", "Ab", "AB", "zz",
]

# Queries of 1-2 characters (the LIKE path), of 3 or more (the index path), longer than any
# title, made only of LIKE wildcards or FTS5 syntax, and found nowhere.
QUERIES = [
    "a", "A", "b", "%", "_", "/", "ab", "AB", "%_", "//", '"', "'", "日", "🔥", "é", "É",
    "disk", "DISK", "Disk_", "sk_f", "100%", "0%_", "a_b", "x/y", "/%", "o'c", '"hi"',
    'say "', "back\\", "école", "ÉCOLE", "ünï", "ÜNÏCODE", "straße", "STRASSE", "οδός",
    "ΟΔΟΣ", "日本語", "🔥fi", "istanbul", "İstan", "kelvin", "\u212a el", "tab\th",
    "  spaced", "pu ap", "no such title", "AND OR NOT", "disk*", "NEAR(a b)", "col:umn",
    "x" * 255, "Disk " * 40,
]


def _title(rng: random.Random) -> str:
    return " ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))


def _window(api: Api) -> dict[str, int]:
    """The searches' window: the day before and after the app's clock."""
    return {"start_time": now(api) - DAY, "end_time": now(api) + DAY}


async def _insert(api: Api, who: Person, titles: list[str], *, ago: int = 0) -> list[str]:
    """Incidents written straight to the table (the triggers see any write), started `ago`
    seconds before now."""
    start = now(api) - ago
    ids = [hex_id() for _ in titles]
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(incident), [
            {"incident_id": incident_id, "account_id": who.account_id,
             "num": incident_id[:12].upper(), "title": title, "incident_severity": "Critical",
             "incident_status": "Critical",
             "start_time": start + n, "last_time": start + n, "created_at": start,
             "updated_at": start}
            for n, (incident_id, title) in enumerate(zip(ids, titles, strict=True))])
    return ids


async def _search(api: Api, who: Person, query: str) -> tuple[list[str], int]:
    """Every incident id the query finds (all pages), and the total the first page gave."""
    found: list[str] = []
    total = None
    for p in range(1, 101):
        reply = await api.call("/incident/list", {**_window(api), "query": query,
                                                  "limit": 100, "p": p}, key=who.key)
        assert reply.status == 200, (query, reply.body)
        total = reply.data["total"] if total is None else total
        found += [item["incident_id"] for item in reply.data["items"]]
        if not reply.data["has_next_page"]:
            break
    assert total is not None
    return found, total


async def _lowered_titles(api: Api, who: Person) -> dict[str, str]:
    """The title of each live incident of the window, as the database's lower() has it: the
    text the old `lower(title) LIKE` compared with (SQLite folds ASCII letters only,
    PostgreSQL folds by the database's locale)."""
    window = _window(api)
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(incident.c.incident_id, func.lower(incident.c.title))
                                  .where(incident.c.account_id == who.account_id,
                                         incident.c.deleted_at == 0,
                                         incident.c.start_time >= window["start_time"],
                                         incident.c.start_time < window["end_time"]))
        return {row.incident_id: row[1] for row in rows}


async def _assert_like_brute_force(api: Api, who: Person, queries: list[str]) -> None:
    lowered = await _lowered_titles(api, who)
    for query in queries:
        needle = query.strip().lower()
        expected = {i for i, title in lowered.items() if needle in title}
        found, total = await _search(api, who, query)
        assert (sorted(found), total) == (sorted(expected), len(expected)), query


async def test_results_and_totals_equal_a_brute_force_substring_filter(api: Api) -> None:
    owner = await new_account(api, "Acme")
    other = await new_account(api, "Globex")
    rng = random.Random(20261122)
    titles = [_title(rng) for _ in range(300)]
    await _insert(api, owner, titles)
    # Found by the index too, but outside the caller's account or window.
    await _insert(api, other, titles[:50])
    await _insert(api, owner, ["Disk outside the window"], ago=2 * DAY)

    # Substrings of stored titles, in the case they were written and upper-cased.
    sampled = []
    for title in rng.sample(titles, 25):
        start = rng.randrange(len(title))
        piece = title[start:start + rng.randint(1, 12)]
        sampled += [piece, piece.upper()]
    await _assert_like_brute_force(api, owner, QUERIES + sampled)


async def test_known_answers(api: Api) -> None:
    """A few cases spelled out, so the brute-force comparison is not the only witness."""
    owner = await new_account(api, "Acme")
    ids = dict(zip(["disk", "percent", "under", "slash", "quote", "cafe"], await _insert(
        api, owner, ["Disk_full on db-01", "CPU at 100% now", "a_b test", "path x/y",
                     'say "hi" please', "Café crème"]), strict=True))
    cases = {
        "DISK_F": ["disk"], "100%": ["percent"], "%": ["percent"], "a_b": ["under"],
        "_": ["disk", "under"], "x/y": ["slash"], "/": ["slash"], '"hi"': ["quote"],
        "CAFÉ CR": ["cafe"], "é": ["cafe"], "crèmes": [], "disk full": [],
    }
    for query, names in cases.items():
        found, total = await _search(api, owner, query)
        assert (sorted(found), total) == (sorted(ids[n] for n in names), len(names)), query


async def test_title_changes_and_removals_are_followed(api: Api) -> None:
    owner = await new_account(api, "Acme")
    first = await create(api, owner, title="Payments LATENCY high")
    second = await create(api, owner, title="Checkout errors")

    assert (await _search(api, owner, "LATENCY"))[0] == [first]
    reply = await api.call("/incident/reset", {"incident_id": first,
                                               "title": "Ledger BACKLOG growing"},
                           key=owner.key)
    assert reply.status == 200, reply.body
    assert await _search(api, owner, "latency") == ([], 0)
    assert (await _search(api, owner, "ledger BACK"))[0] == [first]

    reply = await api.call("/incident/merge", {"target_incident_id": second,
                                               "source_incident_ids": [first],
                                               "title": "Checkout and ledger"},
                           key=owner.key)
    assert reply.status == 200, reply.body
    assert sorted((await _search(api, owner, "ledger"))[0]) == sorted([first, second])
    assert await _search(api, owner, "errors") == ([], 0)

    reply = await api.call("/incident/remove", {"incident_ids": [second]}, key=owner.key)
    assert reply.status == 200, reply.body
    assert await _search(api, owner, "and ledger") == ([], 0)
    assert await _search(api, owner, "ledger") == ([first], 1)
    await _assert_like_brute_force(api, owner, ["ledger", "CHECKOUT", "e", "growing"])


async def _vacuum(db: Database) -> None:
    """VACUUM runs outside a transaction: on SQLite on a plain connection of its own (the
    app's connections always begin one)."""
    if db.is_sqlite:
        path = make_url(str(db.engine.url)).database
        assert path is not None

        def run() -> None:
            with closing(sqlite3.connect(path, isolation_level=None)) as raw:
                raw.execute("VACUUM")

        await anyio.to_thread.run_sync(run)
        return
    async with db.engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await auto.execute(text("VACUUM incident"))


async def test_deleted_rows_and_vacuum_keep_the_index_right(api: Api) -> None:
    """Rows deleted outright leave the index (the delete trigger), also when the next rows
    take their rowids again, and a VACUUM, which may renumber the rowids the SQLite index is
    keyed by, changes no answer."""
    owner = await new_account(api, "Acme")
    titles = [f"Old {n} GONE {n}" for n in range(40)] + [f"Kept {n} STAYS {n}" for n in range(80)]
    ids = await _insert(api, owner, titles)
    gone = ids[10:20] + ids[-20:]  # the last ones' rowids are reused by the next insert
    async with api.runtime.db.transaction() as conn:
        await conn.execute(delete(incident).where(incident.c.incident_id.in_(gone)))
    await _insert(api, owner, [f"New {n} ARRIVES {n}" for n in range(30)], ago=1_000)
    queries = ["gone", "stays 7", "s 79", "arrives", "d 1", "new 2", "ol", "S"]
    await _assert_like_brute_force(api, owner, queries)

    await _vacuum(api.runtime.db)
    await _assert_like_brute_force(api, owner, queries)


async def test_sqlite_counts_a_window_from_the_two_indexes(sqlite_url: str) -> None:
    """The plan behind the page's total: the window read from the covering list index alone,
    each entry checked against the rowids the FTS table matched (no row is read)."""
    stmt = select(func.count()).select_from(incident).where(
        incident.c.account_id == 1, incident.c.deleted_at == 0, incident.c.start_time >= 0,
        incident.c.start_time < 100, title_contains("disk"))
    db = Database(sqlite_url)
    try:
        async with db.transaction(write=False) as conn:
            sql = str(stmt.compile(conn.sync_connection, compile_kwargs={"literal_binds": True}))
            plan = [row[3] for row in await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)]
    finally:
        await db.dispose()
    # ix_incident_list or the insight index (both lead with account, deleted, start time and
    # cover the count): either way no incident row is read.
    assert any(step.startswith("SEARCH incident USING COVERING INDEX ix_incident_")
               for step in plan), plan
    assert any(step.startswith("SCAN incident_title_fts VIRTUAL TABLE") for step in plan), plan


async def test_postgres_plans_each_title_search_for_its_pattern(api: Api) -> None:
    """PostgreSQL may keep one generic plan for a prepared statement, blind to the pattern
    (with the trigram index: every match read and sorted for a page). A title search asks
    for plans made with its values, before its page (the statement that also counts the
    list); other lists do not."""
    owner = await new_account(api, "Acme")
    await _insert(api, owner, ["disk full"])
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    engine = api.runtime.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        for _ in range(7):
            assert (await _search(api, owner, "disk"))[1] == 1
        searched = statements[:]
        statements.clear()
        reply = await api.call("/incident/list", _window(api), key=owner.key)
        assert reply.status == 200, reply.body
        plain = statements[:]
    finally:
        event.remove(engine, "before_cursor_execute", record)

    def kinds(seen: list[str]) -> list[str]:
        return ["SET" if s.startswith("SET LOCAL plan_cache_mode = force_custom_plan")
                else "count" if s.startswith("SELECT count(*)") and "FROM incident" in s
                else "page" if s.startswith("SELECT incident.") else "" for s in seen]

    if api.runtime.db.is_sqlite:
        assert "SET" not in kinds(searched)
    else:
        assert [k for k in kinds(searched) if k] == ["SET", "page"] * 7
    assert "SET" not in kinds(plain)
