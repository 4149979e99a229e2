"""The console's incident list (`GET /console/incidents`, signed in as the owner) with 100,000
incidents stored, against the API's `/incident/list` of the same page in the same run; and the
database statements each costs.

    .venv/bin/python -m bench.console_list [--postgres] [--incidents 100000] [--requests 200]

The incidents are bulk-inserted as bench/incident_list.py inserts them (one account, 10
channels, spread over the 60 days before now, a tenth of the rows in other accounts), so the
page's default window (the last 7 days) holds about 10,500 of the account's incidents. The
owner's console session is made directly (as a sign-in makes one), and the page is asked for
over httpx's ASGI transport, in-process, one request at a time, alternating with the API
call it is built from (`/incident/list`: the same filters, the same 25 rows). So the wall
time is the server's whole work for the request (session, roles, queries, template) with no
network; the process CPU per request is given too, steadier on a shared machine.

Statements are counted with SQLAlchemy's `before_cursor_execute` on the app's engine: for the
page, for `/incident/list`, and for each service the page calls, run alone in one read
transaction (`progress_counts` is not an API operation; the page's counts come from it)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench.harness import scratch_database
from bench.in_process import _p
from bench.incident_list import seed

WINDOW_S = 7 * 86_400  # the page's default window
PAGE_SIZE = 25


class Statements:
    """Counts the statements the database sends (and keeps the last request's, to print): on
    both engines of a SQLite database (the read units run on its sync one)."""

    def __init__(self, db: Any) -> None:
        from sqlalchemy import event

        self.count = 0
        self.last: list[str] = []
        engines = [db.engine.sync_engine]
        if db._sync is not None:
            engines.append(db._sync.engine)
        for engine in engines:
            event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        self.count += 1
        self.last.append(" ".join(statement.split())[:110])

    def start(self) -> None:
        self.count, self.last = 0, []


async def owner_session(runtime: Any) -> str:
    """A console session of the owner (its cookie's value), started as a sign-in starts one:
    in a unit of work."""
    from sqlalchemy import select

    from dutyline.api.unit import Call, unit
    from dutyline.db.tables.platform import member
    from dutyline.web import service as signin

    async with runtime.db.transaction() as conn:
        row = (await conn.execute(select(member.c.account_id, member.c.member_id).where(
            member.c.email == "o@bench.example"))).one()
        caller = await signin.caller_of(conn, account_id=row.account_id, person_id=row.member_id)
    assert caller is not None
    actor = signin.person_actor(caller, runtime.clock)
    async with unit(runtime, actor, write=True, call=Call("bench", "127.0.0.1", "")) as work:
        return str(await signin.start_session(work.conn, actor, user_agent="bench",
                                              ip="127.0.0.1"))


async def _session(runtime: Any) -> tuple[str, str]:
    """A console session of the owner, started as a sign-in starts one (in a unit of work):
    (cookie value, CSRF token)."""
    from dutyline.web import security

    token = await owner_session(runtime)
    keys = security.ConsoleKeys(runtime.settings)
    await keys.load()
    return token, security.csrf_token(keys, "session", token)


async def _service_statements(runtime: Any, stmts: Statements, key_owner: tuple[int, int]
                              ) -> dict[str, int]:
    """Statements of each service the page calls, alone, inside one read transaction."""
    from sqlalchemy import Connection

    from dutyline.channel import service as channels
    from dutyline.channel.service import ChannelQuery
    from dutyline.incident.service import query as incidents
    from dutyline.platform.team import service as teams
    from dutyline.web import service as signin

    now = int(runtime.clock.now())
    filters: dict[str, Any] = {"start_time": now + 1 - WINDOW_S, "end_time": now + 1}
    out: dict[str, int] = {}
    async with runtime.db.connect() as conn:
        caller = await signin.caller_of(conn, account_id=key_owner[0], person_id=key_owner[1])
        actor = signin.person_actor(caller, runtime.clock)  # type: ignore[arg-type]
        # The sync services the page calls, as the console does (one unit of work each here).
        calls: dict[str, Callable[[Connection], Any]] = {
            "list_incidents (25 rows)": lambda sync: incidents.list_incidents_sync(
                sync, actor, **filters, limit=PAGE_SIZE, deps=runtime.deps),
            "progress_counts": lambda sync: incidents.progress_counts_sync(
                sync, actor, **filters),
            "live_cursor": lambda sync: incidents.live_cursor_sync(sync, actor),
            "list_channels (filter options)": lambda sync: channels.list_channels_sync(
                sync, actor, q=ChannelQuery(is_brief=True, orderby="channel_name", asc=True),
                offset=0, limit=200),
            "list_teams (filter options)": lambda sync: teams.list_teams_sync(
                sync, actor, orderby="team_name", asc=True, offset=0, limit=200),
        }
        for name, call in calls.items():
            stmts.start()
            await conn.run_sync(call)
            out[name] = stmts.count
    return out


async def measure(url: str, key: str, requests: int) -> dict[str, Any]:
    from sqlalchemy import select

    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.db.tables.platform import member
    from dutyline.web import security

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    runtime = app.state.runtime
    timings: dict[str, list[float]] = {"page": [], "page (CPU)": [], "api": [], "api (CPU)": []}
    statements: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        stmts = Statements(runtime.db)
        token, _ = await _session(runtime)
        async with runtime.db.connect() as conn:
            owner = (await conn.execute(select(member.c.account_id, member.c.member_id).where(
                member.c.email == "o@bench.example"))).one()
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            client.headers["Cookie"] = f"{security.SESSION_COOKIE}={token}"

            async def page() -> httpx.Response:
                return await client.get("/console/incidents")

            async def api() -> httpx.Response:
                now = int(time.time())
                return await client.post("/incident/list", params={"app_key": key}, json={
                    "start_time": now + 1 - WINDOW_S, "end_time": now + 1, "limit": PAGE_SIZE})

            first = await page()  # warm-up, and checks that both show a full page
            assert first.status_code == 200, first.status_code
            rows = first.text.count('<li id="incident-')
            assert rows == PAGE_SIZE, f"{rows} rows on the page"
            listed = (await api()).json()["data"]
            assert len(listed["items"]) == PAGE_SIZE, listed
            statements["in window"] = listed.get("total")
            for name, call in (("page", page), ("api", api)):
                stmts.start()
                r = await call()
                assert r.status_code == 200
                statements[name] = stmts.count
                statements[f"{name} SQL"] = stmts.last
            statements["services"] = await _service_statements(
                runtime, stmts, (owner.account_id, owner.member_id))
            for _ in range(requests):
                for name, call in (("api", api), ("page", page)):
                    started, cpu = time.perf_counter(), time.process_time()
                    r = await call()
                    timings[name].append((time.perf_counter() - started) * 1000)
                    timings[f"{name} (CPU)"].append((time.process_time() - cpu) * 1000)
                    assert r.status_code == 200, r.status_code
    return {"timings": timings, "statements": statements}


def report(backend: str, incidents: int, seeded: float, requests: int,
           result: dict[str, Any], show_sql: bool) -> None:
    t, s = result["timings"], result["statements"]
    print(f"{backend}: {incidents:,} incidents (seeded in {seeded:.0f} s), "
          f"{requests} requests each, alternating, one at a time, in-process\n")
    print("| request | wall p50 ms | wall p99 ms | CPU p50 ms | CPU p99 ms | statements |\n"
          "|---|---:|---:|---:|---:|---:|")
    names = {"api": "`POST /incident/list` (baseline)", "page": "`GET /console/incidents`"}
    for name in ("api", "page"):
        print(f"| {names[name]} | {_p(t[name], 0.5):.1f} | {_p(t[name], 0.99):.1f} | "
              f"{_p(t[name + ' (CPU)'], 0.5):.1f} | {_p(t[name + ' (CPU)'], 0.99):.1f} | "
              f"{s[name]} |")
    print(f"\npage / API: wall p50 {_p(t['page'], 0.5) / _p(t['api'], 0.5):.2f}x, "
          f"p99 {_p(t['page'], 0.99) / _p(t['api'], 0.99):.2f}x, "
          f"CPU p50 {_p(t['page (CPU)'], 0.5) / _p(t['api (CPU)'], 0.5):.2f}x")
    print("statements of each service the page calls, alone: " + ", ".join(
        f"{k} {v}" for k, v in s["services"].items()))
    if show_sql:
        for name in ("page", "api"):
            print(f"\n{name} statements:\n  " + "\n  ".join(s[f"{name} SQL"]))


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.console_list")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--incidents", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--show-sql", action="store_true", help="print the statements of each")
    args = p.parse_args()
    with scratch_database("console-list", args.postgres) as url:
        started = time.perf_counter()
        key, _ = asyncio.run(seed(url, args.incidents, now=int(time.time())))
        seeded = time.perf_counter() - started
        result = asyncio.run(measure(url, key, args.requests))
    report("PostgreSQL" if args.postgres else "SQLite", args.incidents, seeded, args.requests,
           result, args.show_sql)
    return 0


if __name__ == "__main__":
    sys.exit(main())
