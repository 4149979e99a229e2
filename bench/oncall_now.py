""""Who is on call now" for 500 schedules, against a bare indexed SELECT of one row.

    .venv/bin/python -m bench.oncall_now [--postgres] [--schedules 500] [--rounds 5]

Seeds one account with 1,500 members and N schedules made through the service (each: a daily
rotation of 4 groups with two roles per group, in Europe/Berlin with a 09:00 handoff; a weekly
office-hours layer above it; an override layer with two windows), then, in-process on one
connection (as the escalation engine would call it, inside its own transaction):

- `service.oncall_for_schedules(conn, actor, schedule_role_ids={sid: [1]}, at_s=…)` for every
  schedule, one call at a time, at instants spread over the next 3 days (warm cache:
  compiled schedules in memory, the window moving);
- the same right after `oncall.CACHE.clear()` (cold: every schedule parsed and compiled);
- `service.oncall_for_schedules(…)` with all N schedules at once, per schedule;
- baseline: `SELECT revision FROM schedule WHERE schedule_id = ? AND account_id = ?` on the
  same connection, one row at a time, interleaved with the warm calls.

Per-call times are wall clock (time.perf_counter) around each await."""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time

from bench.harness import scratch_database

NOW = 1_774_252_800  # Monday 2026-03-23 09:00 Europe/Berlin
DAY = 86_400


async def seed(url: str, schedules: int) -> tuple[int, list[int]]:
    from sqlalchemy import insert

    from dutyline.api.actor import Actor
    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.db.tables.platform import member
    from dutyline.kit.clock import FixedClock
    from dutyline.kit.ids import numeric_id
    from dutyline.kit.secretbox import SecretBox
    from dutyline.platform.account.service import create_account
    from dutyline.schedule import service
    from dutyline.schedule.schemas import LayerIn, ScheduleGroup, ScheduleMember

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    rng = random.Random(7)
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                           owner_email="o@bench.example", now_s=NOW)
            people = [numeric_id() for _ in range(1500)]
            await conn.execute(insert(member), [
                {"member_id": p, "account_id": created.account_id, "member_name": f"m{i}",
                 "email": f"m{i}@bench.example", "created_at": NOW, "updated_at": NOW}
                for i, p in enumerate(people)])
            actor = Actor.system(created.account_id, FixedClock(NOW))
            box = SecretBox("bench")
            ids = []
            for n in range(schedules):
                def group(name: str) -> ScheduleGroup:
                    return ScheduleGroup(group_name=name, members=[
                        ScheduleMember(1, [rng.choice(people)]),
                        ScheduleMember(2, rng.sample(people, 2))])

                layers = [
                    LayerIn(layer_name="daily", groups=[group(c) for c in "ABCD"],
                            rotation_unit="day", handoff_time=9 * 3600,
                            enable_time=NOW - 90 * DAY),
                    LayerIn(layer_name="office", groups=[group("O1"), group("O2")],
                            rotation_unit="week", enable_time=NOW - 30 * DAY, restrict_mode=1,
                            restrict_periods=None, restrict_start=9 * 3600,
                            restrict_end=17 * 3600, weight=1),
                    LayerIn(layer_name="cover", mode=1, groups=[
                        ScheduleGroup(group_name="x", members=[ScheduleMember(1, [people[n]])],
                                      start=NOW + DAY, end=NOW + DAY + 7200),
                        ScheduleGroup(group_name="y", members=[ScheduleMember(1, [people[-n]])],
                                      start=NOW + 2 * DAY, end=NOW + 2 * DAY + 3600)]),
                ]
                ids.append(await service.create_schedule(
                    conn, actor, schedule_name=f"s{n}", description=None, team_id=None,
                    time_zone="Europe/Berlin", layers=layers, notify=None, secrets=box))
    finally:
        await db.dispose()
    return created.account_id, ids


def stats(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, int(len(values) * 0.99))]


async def measure(url: str, account_id: int, ids: list[int],
                  rounds: int) -> dict[str, list[float]]:
    from sqlalchemy import bindparam, select

    from dutyline.api.actor import Actor
    from dutyline.db.engine import Database
    from dutyline.db.tables.schedule import schedule
    from dutyline.kit.clock import FixedClock
    from dutyline.schedule import oncall, service

    db = Database(url)
    actor = Actor.system(account_id, FixedClock(NOW))
    bare = select(schedule.c.revision).where(
        schedule.c.schedule_id == bindparam("sid"), schedule.c.account_id == account_id)
    names = ["bare SELECT of one row (baseline)", "one schedule, warm cache",
             "one schedule, cold cache (parse + compile)",
             "oncall_for_schedules, all at once, per schedule"]
    timings: dict[str, list[float]] = {n: [] for n in names}
    rng = random.Random(3)
    nobody = 0
    try:
        async with db.connect() as conn:
            for _ in range(rounds):
                oncall.CACHE.clear()
                for sid in ids:
                    started = time.perf_counter()
                    await service.oncall_for_schedules(conn, actor,
                                                       schedule_role_ids={sid: [1]}, at_s=NOW)
                    timings[names[2]].append((time.perf_counter() - started) * 1e6)
                for sid in ids:
                    at = NOW + rng.randrange(3 * DAY)
                    started = time.perf_counter()
                    (await conn.execute(bare, {"sid": sid})).scalar_one()
                    timings[names[0]].append((time.perf_counter() - started) * 1e6)
                    started = time.perf_counter()
                    found = (await service.oncall_for_schedules(
                        conn, actor, schedule_role_ids={sid: [1]}, at_s=at)).get(sid)
                    timings[names[1]].append((time.perf_counter() - started) * 1e6)
                    nobody += not found
                at = NOW + rng.randrange(3 * DAY)
                started = time.perf_counter()
                batch = await service.oncall_for_schedules(
                    conn, actor, schedule_role_ids={sid: [1] for sid in ids}, at_s=at)
                timings[names[3]].append((time.perf_counter() - started) * 1e6 / len(ids))
                assert len(batch) == len(ids)
                await conn.rollback()
    finally:
        await db.dispose()
    print(f"(warm calls that found nobody on call: {nobody} of {len(timings[names[1]])})")
    return timings


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.oncall_now")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--schedules", type=int, default=500)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    with scratch_database("oncall", args.postgres) as url:
        account_id, ids = asyncio.run(seed(url, args.schedules))
        timings = asyncio.run(measure(url, account_id, ids, args.rounds))
    backend = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{backend}: {args.schedules} schedules (3 layers each, Europe/Berlin), "
          f"{args.rounds} rounds, one call at a time\n")
    print("| call | p50 µs | p99 µs | p50 / baseline |\n|---|---:|---:|---:|")
    base = stats(timings[next(iter(timings))])[0]
    for name, values in timings.items():
        p50, p99 = stats(values)
        print(f"| {name} | {p50:.0f} | {p99:.0f} | {p50 / base:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
