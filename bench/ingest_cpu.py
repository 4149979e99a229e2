"""Process CPU per alert push, in-process: the standard push endpoint driven over httpx's ASGI
transport with bench/ingest.py's mix (80 % updates of active keys, 15 % new keys, 5 %
recoveries) after 600 seeded keys and 300 warm-up pushes, on a fresh SQLite database.

    .venv/bin/python -m bench.ingest_cpu [--pushes 2000] [--label NAME]

Less disturbed by a loaded machine than wrk's events/s: to compare two versions of the code,
run each in turn (an older tree's `src` first on PYTHONPATH) several times, alternating."""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time

import httpx

SEED_KEYS = 600
WARM_UP = 300


async def measure(pushes: int) -> float:
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.db.engine import Database
    from dutyline.db.migrate import upgrade
    from dutyline.platform.account.service import create_account

    tmp = tempfile.mkdtemp(prefix="dutyline-ingest-cpu-")
    url = f"sqlite+aiosqlite:///{tmp}/ingest.db"
    try:
        await asyncio.to_thread(upgrade, url)
        db = Database(url)
        async with db.transaction() as conn:
            made = await create_account(conn, account_name="Bench", owner_name="Owner",
                                        owner_email="o@bench.example", now_s=int(time.time()))
        await db.dispose()
        app = create_app(Settings(database_url=url, secret_key="bench", rate_limit_per_second=0,
                                  rate_limit_per_minute=0, run_workers=False,
                                  log_level="warning"))
        rng = random.Random(5)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
            owner = {"app_key": made.app_key}
            channel = (await client.post("/channel/create", params=owner, json={
                "channel_name": "ingest",
                "group": {"method": "p", "equals": [["labels.svc"]], "time_window": 60},
            })).json()["data"]
            key = (await client.post("/integration/create", params=owner, json={
                "channel_id": channel["channel_id"], "integration_name": "bench",
            })).json()["data"]["integration_key"]

            async def push(alert_key: str, status: str) -> None:
                reply = await client.post(
                    "/event/push/alert/standard", params={"integration_key": key},
                    json={"title_rule": "$svc latency high", "event_status": status,
                          "alert_key": alert_key,
                          "labels": {"host": alert_key, "svc": f"svc-{len(alert_key) % 20}"}})
                assert reply.status_code == 200, reply.text

            active = [f"seed-{i}" for i in range(SEED_KEYS)]
            for alert_key in active:
                await push(alert_key, "Warning")
            for _ in range(WARM_UP):
                await push(rng.choice(active), "Warning")
            fresh = 0
            started = time.process_time()
            for _ in range(pushes):
                draw = rng.random()
                if draw < 0.80:
                    await push(rng.choice(active), rng.choice(["Warning", "Critical"]))
                elif draw < 0.95:
                    fresh += 1
                    active.append(f"new-{fresh}")
                    await push(active[-1], "Warning")
                else:
                    await push(active.pop(rng.randrange(len(active))), "Ok")
            return (time.process_time() - started) / pushes * 1e6
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ingest_cpu")
    p.add_argument("--pushes", type=int, default=2000)
    p.add_argument("--label", default="this tree")
    args = p.parse_args()
    per_push = asyncio.run(measure(args.pushes))
    print(f"{args.label}: {per_push:.0f} µs CPU per push over {args.pushes} pushes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
