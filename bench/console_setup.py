"""The console's setup pages (signed in as the owner) on an account of 500 channels (each with
an integration and an escalation rule), 200 schedules (a weekly layer of two people each),
2,000 members, a few teams and templates: the size at which each page's p99 should stay
under 50 ms.

    .venv/bin/python -m bench.console_setup [--postgres] [--channels 500] [--schedules 200] \
        [--members 2000] [--requests 100]

The account is made as `dutyline init` makes one and its channels are bulk-inserted (as
bench/console_channels.py does); everything else is written through the services the API
operations call, in units of work of the system actor (members 20 at a time, as the invite
takes them). The pages are asked for over httpx's ASGI transport, in-process, one request at
a time, in turn (as bench/console_list.py does): the wall time is the server's whole work for
the request (session, roles, queries, template) with no network. Two baselines are measured
in the same rounds: the console's stylesheet served by the same app (no session, no
database), and the Teams page (a list page of the same kind over 5 teams)."""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import time
from typing import Any

import httpx

from bench.console_list import Statements, owner_session
from bench.harness import scratch_database
from bench.in_process import _p, seed_account

DAY = 86_400
WEEK = 7 * DAY
BASELINES = ("stylesheet (baseline)", "teams (baseline)")


async def seed(runtime: Any, channel_ids: list[int], account_id: int, *, schedules: int,
               members: int, teams: int = 5, templates: int = 5) -> dict[str, Any]:
    """Members, teams, templates, schedules, then an integration and an escalation rule per
    channel, through the services in units of work: the ids the pages are asked for."""
    from dutyline.api.unit import Call, system_actor, unit
    from dutyline.channel.integration import service as integrations
    from dutyline.dispatch import service as dispatch
    from dutyline.dispatch.schemas import EscalateLayer, EscalateTarget, NotifyBy
    from dutyline.notify.template import service as templates_service
    from dutyline.platform.member import service as members_service
    from dutyline.platform.member.schemas import NewMember
    from dutyline.platform.team import service as teams_service
    from dutyline.platform.team.schemas import TeamChanges
    from dutyline.schedule import service as schedules_service
    from dutyline.schedule.schemas import LayerIn, ScheduleGroup, ScheduleMember

    rng = random.Random(36)
    call = Call("bench-seed", "127.0.0.1", "")
    now = int(runtime.clock.now())

    def work() -> Any:
        return unit(runtime, system_actor(account_id, runtime.clock), write=True, call=call)

    people: list[int] = []
    for start in range(0, members, 200):
        async with work() as u:
            for batch in range(start, min(start + 200, members), 20):
                made = await members_service.invite_members(u.conn, u.actor, members=[
                    NewMember(member_name=f"Person {n:04}", email=f"p{n}@bench.example")
                    for n in range(batch, min(batch + 20, members))])
                people.extend(m.member_id for m in made)
    async with work() as u:
        team_ids = [await teams_service.upsert_team(u.conn, u.actor, team=TeamChanges(
            team_name=f"Team {n}", person_ids=rng.sample(people, 20))) for n in range(teams)]
        template_ids = []
        for n in range(templates):
            made_t = await templates_service.create_template(
                u.conn, u.actor, template_name=f"Template {n}", team_id=0, description="",
                bodies={"email": "<b>{{.Title}}</b>\n<p>{{.Description}}</p>",
                        "sms": "{{.Title}}"}, deps=runtime.deps)
            template_ids.append(made_t.template_id)
    schedule_ids: list[int] = []
    for start in range(0, schedules, 50):
        async with work() as u:
            for n in range(start, min(start + 50, schedules)):
                pair = rng.sample(people, 2)
                layer = LayerIn(layer_name="Primary", mode=0, groups=[
                    ScheduleGroup(members=[ScheduleMember(person_ids=[p])]) for p in pair],
                    rotation_unit="week", rotation_value=1, handoff_time=9 * 3600,
                    enable_time=now - 4 * WEEK)
                schedule_ids.append(await schedules_service.create_schedule(
                    u.conn, u.actor, schedule_name=f"Rota {n:03}", description=None,
                    team_id=rng.choice(team_ids), time_zone="Europe/Berlin", layers=[layer],
                    notify=None, deps=runtime.deps))
    integration_ids: list[int] = []
    rule_ids: list[str] = []
    for start in range(0, len(channel_ids), 100):
        async with work() as u:
            for channel_id in channel_ids[start:start + 100]:
                made_i = await integrations.create_integration(
                    u.conn, u.actor, channel_id=channel_id, integration_name="Alertmanager")
                integration_ids.append(made_i.integration_id)
                layers = [
                    EscalateLayer(target=EscalateTarget(
                        schedule_to_role_ids={rng.choice(schedule_ids): [0]},
                        by=NotifyBy(follow_preference=True)), escalate_window=15),
                    EscalateLayer(target=EscalateTarget(
                        person_ids=rng.sample(people, 2), team_ids=[rng.choice(team_ids)],
                        by=NotifyBy(follow_preference=True))),
                ]
                made_r = await dispatch.create_rule(
                    u.conn, u.actor, deps=runtime.deps, channel_id=channel_id,
                    rule_name="Default", description="", priority=0, aggr_window=0,
                    layers=layers, time_filters=[], filters=[])
                rule_ids.append(made_r.rule_id)
    return {"channel": channel_ids[0], "integration": integration_ids[0], "rule": rule_ids[0],
            "schedule": schedule_ids[0], "template": template_ids[0]}


async def measure(url: str, channel_ids: list[int], account_id: int, args: argparse.Namespace
                  ) -> dict[str, Any]:
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.web import security

    settings = Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                        rate_limit_per_minute=0, run_workers=False, log_level="warning")
    app = create_app(settings)
    runtime = app.state.runtime
    async with app.router.lifespan_context(app):
        started = time.perf_counter()
        ids = await seed(runtime, channel_ids, account_id, schedules=args.schedules,
                         members=args.members)
        seeded = time.perf_counter() - started
        stmts = Statements(runtime.db)
        token = await owner_session(runtime)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            client.headers["Cookie"] = f"{security.SESSION_COOKIE}={token}"
            teams = await client.get("/console/teams")
            css = re.search(r'href="([^"]*console\.css[^"]*)"', teams.text)
            assert css, "no stylesheet on the Teams page"
            c, r = ids["channel"], ids["rule"]
            paths = {
                "stylesheet (baseline)": css.group(1),
                "teams (baseline)": "/console/teams",
                "channels": "/console/channels",
                "a channel": f"/console/channels/{c}",
                "escalation rules of a channel": f"/console/channels/{c}/escalation-rules",
                "an escalation rule": f"/console/channels/{c}/escalation-rules/{r}",
                "an escalation rule's edit form":
                    f"/console/channels/{c}/escalation-rules/{r}/edit",
                "an integration": f"/console/channels/{c}/integrations/{ids['integration']}",
                "schedules": "/console/schedules",
                "a schedule": f"/console/schedules/{ids['schedule']}",
                "a schedule's edit form": f"/console/schedules/{ids['schedule']}/edit",
                "templates": "/console/templates",
                "a template's edit form": f"/console/templates/{ids['template']}",
                "members": "/console/members",
                "roles": "/console/roles",
                "app keys": "/console/app-keys",
                "settings": "/console/settings",
            }
            timings: dict[str, list[float]] = {name: [] for name in paths}
            statements: dict[str, int] = {}
            sizes: dict[str, int] = {}
            for name, path in paths.items():  # warm-up, a check, and the statements of each
                stmts.start()
                got = await client.get(path)
                assert got.status_code == 200, (path, got.status_code)
                statements[name], sizes[name] = stmts.count, len(got.content)
            for _ in range(args.requests):
                for name, path in paths.items():
                    started = time.perf_counter()
                    got = await client.get(path)
                    timings[name].append((time.perf_counter() - started) * 1000)
                    assert got.status_code == 200, (path, got.status_code)
            for name in args.profile:
                await _profile(client, name, paths[name], args.requests)
    shown = {name: path.replace(str(c), "{channel}").replace(r, "{rule}").replace(
        str(ids["integration"]), "{integration}").replace(str(ids["schedule"]), "{schedule}")
        .replace(ids["template"], "{template}") for name, path in paths.items()}
    return {"timings": timings, "statements": statements, "sizes": sizes, "seeded": seeded,
            "paths": shown}


async def _profile(client: httpx.AsyncClient, name: str, path: str, requests: int) -> None:
    """cProfile over `requests` more requests of one page: the 25 costliest functions by
    cumulative time, to stderr."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(requests):
        await client.get(path)
    profiler.disable()
    print(f"\n--- profile of {name} ({path}), {requests} requests", file=sys.stderr)
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)


async def prepare(url: str, channels: int) -> tuple[int, list[int]]:
    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade

    await asyncio.to_thread(upgrade, url)
    db = Database(url)
    try:
        async with db.transaction() as conn:
            created, channel_ids = await seed_account(conn, int(time.time()),
                                                      channels=channels)
    finally:
        await db.dispose()
    return created.account_id, channel_ids


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.console_setup")
    p.add_argument("--postgres", action="store_true")
    p.add_argument("--channels", type=int, default=500)
    p.add_argument("--schedules", type=int, default=200)
    p.add_argument("--members", type=int, default=2000)
    p.add_argument("--requests", type=int, default=100)
    p.add_argument("--profile", action="append", default=[], metavar="PAGE",
                   help="after the figures, profile this page (a name of the table)")
    args = p.parse_args()
    with scratch_database("console-setup", args.postgres) as url:
        account_id, channel_ids = asyncio.run(prepare(url, args.channels))
        result = asyncio.run(measure(url, channel_ids, account_id, args))
    t, s, z = result["timings"], result["statements"], result["sizes"]
    print(f"{'PostgreSQL' if args.postgres else 'SQLite'}: {args.channels} channels (an "
          f"integration and an escalation rule each), {args.schedules} schedules, "
          f"{args.members:,} members, 5 teams, 5 templates (seeded in {result['seeded']:.0f} s); "
          f"{args.requests} requests of each page, in turn, one at a time, in-process\n")
    base = {b: _p(t[b], 0.5) for b in BASELINES}
    print("| page | path | wall p50 ms | wall p99 ms | p50 / stylesheet | p50 / teams | "
          "statements | KB |\n|---|---|---:|---:|---:|---:|---:|---:|")
    for name, values in t.items():
        p50 = _p(values, 0.5)
        print(f"| {name} | `{result['paths'][name]}` | {p50:.1f} | "
              f"{_p(values, 0.99):.1f} | {p50 / base[BASELINES[0]]:.1f} | "
              f"{p50 / base[BASELINES[1]]:.2f} | {s[name]} | {z[name] / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
