"""The incident list's live updates fanned out: 100 open event streams of the console's list
(`/console/incidents/stream`, one console session each), incidents created through the API
one after another, and the time from each push to each stream receiving the incident's row.

    .venv/bin/python -m bench.console_live [--postgres] [--streams 100] [--pushes 30]
                                           [--interval 0.5] [--incidents 0]

One `dutyline serve` (job loops off, rate limits off) on a fresh SQLite file or PostgreSQL
database (bench/harness.py), pinned to CPU 0 while this process (the streams and the pushes,
one event loop, httpx over loopback) runs on CPU 1 (`--no-pin` to leave both free). The
owner's sessions are made directly in the database, as a sign-in makes them. `--incidents N`
first bulk-inserts N incidents over the 60 days before now (bench/incident_list.py), so each
stream's re-read of the list and its counts works on a full table.

A push is `POST /incident/create` with the owner's app key; t0 is just before the request
is sent. Each stream's latency for a push is when its `incident-new` event naming the
incident arrived, minus t0: the commit, the server learning of the event (NOTIFY on
PostgreSQL, a poll every 0.25 s on SQLite), each stream re-reading the incident and the
counts through the list's services, and this process reading 100 streams. Reported: p50,
p99 and max over every (push, stream), events missing at the end, and the pushes' own
response times as the reference of the same run."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import sys
import time
from typing import Any

import httpx

from bench.harness import Bench, scratch_database, venv_bin
from bench.in_process import _p
from bench.incident_list import seed

_ROW = re.compile(r'<li id="incident-([^"]+)"')


class Arrived:
    """Set once every stream has received `expected` new rows."""

    def __init__(self, streams: int, expected: int) -> None:
        self.streams, self.expected = streams, expected
        self.complete: set[int] = set()
        self.all_in = asyncio.Event()

    def received(self, stream: int, rows: int) -> None:
        if rows >= self.expected:
            self.complete.add(stream)
            if len(self.complete) == self.streams:
                self.all_in.set()


async def _sessions(url: str, count: int) -> list[str]:
    """`count` console sessions of the owner (their tokens)."""
    from sqlalchemy import select

    from dutyline.db.engine import Database
    from dutyline.db.tables.platform import member
    from dutyline.kit.clock import SystemClock
    from dutyline.web import service as signin

    db, clock = Database(url), SystemClock()
    try:
        async with db.transaction() as conn:
            owner = (await conn.execute(select(member.c.account_id, member.c.member_id).where(
                member.c.email == "o@bench.example"))).one()
            caller = await signin.caller_of(conn, account_id=owner.account_id,
                                            person_id=owner.member_id)
            assert caller is not None
            tokens = []
            for _ in range(count):
                actor = signin.person_actor(caller, clock)
                tokens.append(await signin.start_session(conn, actor, user_agent="bench",
                                                         ip="127.0.0.1"))
    finally:
        await db.dispose()
    return tokens


async def _stream(base: str, token: str, arrivals: dict[str, float],
                  ready: asyncio.Event, connected: list[int], arrived: Arrived, index: int
                  ) -> None:
    """Reads one stream until cancelled: the arrival time of every new incident's row."""
    from dutyline.web import security

    headers = {"Cookie": f"{security.SESSION_COOKIE}={token}"}
    timeout = httpx.Timeout(10.0, read=None)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout,
                                 trust_env=False) as client, \
            client.stream("GET", "/console/incidents/stream") as answer:
        assert answer.status_code == 200, answer.status_code
        event, counted = "", False
        async for line in answer.aiter_lines():
            if not counted and line.startswith("id:"):
                counted = True  # the stream has read its position: what comes next is new
                connected[0] += 1
                if connected[0] == connected[1]:
                    ready.set()
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "incident-new":
                now = time.perf_counter()
                for incident_id in _ROW.findall(line):
                    arrivals.setdefault(incident_id, now)
                arrived.received(index, len(arrivals))
            elif line == "":
                event = ""


async def run(base: str, app_key: str, tokens: list[str], pushes: int,
              interval: float) -> dict[str, Any]:
    arrivals: list[dict[str, float]] = [{} for _ in tokens]
    ready, connected = asyncio.Event(), [0, len(tokens)]
    arrived = Arrived(len(tokens), pushes)
    readers = [asyncio.create_task(_stream(base, token, got, ready, connected, arrived, n))
               for n, (token, got) in enumerate(zip(tokens, arrivals, strict=True))]
    try:
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait([waiter, *readers], timeout=60, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            waiter.cancel()
            broken = next((t.exception() for t in readers if t.done()), None)
            raise RuntimeError(f"{connected[0]} of {len(tokens)} streams open") from broken
        pushed: dict[str, float] = {}
        answered: list[float] = []
        async with httpx.AsyncClient(base_url=base, timeout=30, trust_env=False) as api:
            for n in range(pushes):
                t0 = time.perf_counter()
                r = await api.post("/incident/create", params={"app_key": app_key}, json={
                    "title": f"fan-out {n}", "incident_severity": "Critical"})
                answered.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text
                pushed[r.json()["data"]["incident_id"]] = t0
                await asyncio.sleep(interval)
        # Whatever has not arrived 5 s after the last push counts as missing.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await arrived.all_in.wait()
    finally:
        for task in readers:
            task.cancel()
        failed = [r for r in await asyncio.gather(*readers, return_exceptions=True)
                  if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
    latencies = [(got[i] - t0) * 1000 for got in arrivals for i, t0 in pushed.items() if i in got]
    missing = sum(1 for got in arrivals for i in pushed if i not in got)
    return {"latencies": latencies, "missing": missing, "answered": answered,
            "failed": failed}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.console_live")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--streams", type=int, default=100)
    p.add_argument("--pushes", type=int, default=30)
    p.add_argument("--interval", type=float, default=0.5, help="seconds between pushes")
    p.add_argument("--incidents", type=int, default=0, help="incidents stored beforehand")
    p.add_argument("--no-pin", dest="pin", action="store_false")
    args = p.parse_args()
    bench = Bench(argparse.Namespace(pin=args.pin, server_cpus="0", wrk_cpus="1"))
    try:
        with scratch_database("console-live", args.postgres) as url:
            key, _ = asyncio.run(seed(url, args.incidents, now=int(time.time())))
            tokens = asyncio.run(_sessions(url, args.streams))
            env = {**bench.dutyline_env(url), "DUTYLINE_SECRET_KEY": "bench-console-live"}
            server = bench.start("dutyline", [venv_bin("dutyline"), "serve"], env)
            if bench.pinned:
                os.sched_setaffinity(0, {1})
            try:
                result = asyncio.run(run(f"http://127.0.0.1:{server.port}", key, tokens,
                                         args.pushes, args.interval))
            except Exception:
                print(server.log_tail(60), file=sys.stderr)
                raise
            bench.close()
    finally:
        bench.close()
    lat, answered = result["latencies"], result["answered"]
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {args.streams} streams, {args.pushes} pushes {args.interval} s apart, "
          f"{args.incidents:,} incidents stored, "
          f"{'server CPU 0 / client CPU 1' if bench.pinned else 'not pinned'}\n")
    print("| | p50 ms | p99 ms | max ms | count |\n|---|---:|---:|---:|---:|")
    print(f"| push to stream (each push x stream) | {_p(lat, 0.5):.0f} | {_p(lat, 0.99):.0f} | "
          f"{max(lat):.0f} | {len(lat)} |" if lat else "| push to stream | - | - | - | 0 |")
    print(f"| `/incident/create` answered (reference) | {_p(answered, 0.5):.0f} | "
          f"{_p(answered, 0.99):.0f} | {max(answered):.0f} | {len(answered)} |")
    print(f"\nmissing: {result['missing']}, streams failed: {len(result['failed'])}"
          + (f" ({result['failed'][0]!r})" if result["failed"] else ""))
    return 0 if not result["missing"] and not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
