"""Migration of the realistic Statuspage page (100 components in 10 groups, 1,000 incidents with
5,000 updates, 50 maintenances, 12 templates, 10,000 subscribers of mixed modes) from the fake
Statuspage on loopback into a fresh SQLite file, in-process.

    .venv/bin/python -m bench.statuspage_migration [--paced] [--runs 3]

Default: the source's rate limit and our pacing are both lifted; the migration's steps run one
after another in an in-process worker (claim, run, commit, as `serve` does), and the bench
reports the source requests made against the minimum the page sizes require, the wall time of
each phase, and incidents (changes) imported per second in the history phase.

`--paced`: the fake enforces the real 1 request/second and our client paces at 1/s, to show
the request count and the 420/429 answers under the real limit (about 80 s)."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.fixtures.fake_statuspage import FakeConfig, FakeStatuspage


async def run_once(fake: FakeStatuspage, base_url: str, paced: bool) -> dict[str, Any]:
    import dutyline.status_page.migration.tasks  # noqa: F401  (registers the job kind)
    from dutyline.app import create_app
    from dutyline.config import Settings
    from dutyline.db.migrate import upgrade
    from dutyline.platform.account.service import create_account
    from dutyline.status_page.migration import repository as repo
    from dutyline.work.registry import registry
    from dutyline.work.worker import Worker

    tmp = Path(tempfile.mkdtemp(prefix="bench-spmig-"))
    url = f"sqlite+aiosqlite:///{tmp}/bench.db"
    await asyncio.to_thread(upgrade, url)
    settings = Settings(database_url=url, secret_key="bench", allow_private_network=True,
                        rate_limit_per_second=0, rate_limit_per_minute=0, run_workers=False,
                        log_level="warning", statuspage_api_url=base_url,
                        statuspage_rate_per_second=1.0 if paced else 0)
    app = create_app(settings)
    fake.requests = 0
    fake.log.clear()
    result: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        runtime = app.state.runtime
        async with runtime.db.transaction() as conn:
            created = await create_account(conn, account_name="Bench", owner_name="Owner",
                                           owner_email="o@bench.example", now_s=int(time.time()))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            async def call(path: str, body: dict[str, Any]) -> Any:
                reply = await client.post(path, params={"app_key": created.app_key}, json=body)
                return reply.json()["data"]

            worker = Worker(runtime, registry=registry, worker_id="bench")

            async def drain(job_id: str) -> dict[str, float]:
                """Run the job's steps; wall time per phase (phase of the step that ran)."""
                phases: dict[str, float] = {}
                while True:
                    async with runtime.db.transaction(write=False) as conn:
                        phase = (await repo.get_job(conn, job_id)).phase
                    claimed = await worker.claim(1)
                    if not claimed:
                        return phases
                    started = time.perf_counter()
                    await worker.execute(claimed[0])
                    phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - started

            started = time.perf_counter()
            job_id = (await call("/status-page/migrate-structure",
                                 {"api_key": fake.config.api_key,
                                  "source_page_id": fake.config.page_id}))["job_id"]
            phases = await drain(job_id)
            result["structure_wall_s"] = time.perf_counter() - started
            job = await call("/status-page/migration/status", {"job_id": job_id})
            assert job["status"] == "completed", job
            progress = job["progress"]
            changes = progress["incidents_imported"] + progress["maintenances_imported"]
            result["changes"] = changes
            result["incidents"] = progress["incidents_imported"]
            result["history_s"] = phases.get("history", 0.0)
            result["structure_s"] = phases.get("structure", 0.0)
            result["incidents_per_s"] = progress["incidents_imported"] / result["history_s"]
            result["changes_per_s"] = changes / result["history_s"]
            result["structure_requests"] = fake.requests

            started = time.perf_counter()
            sub_id = (await call("/status-page/migrate-email-subscribers", {
                "api_key": fake.config.api_key, "source_page_id": fake.config.page_id,
                "target_page_id": job["target_page_id"]}))["job_id"]
            await drain(sub_id)
            result["subscribers_s"] = time.perf_counter() - started
            sub = await call("/status-page/migration/status", {"job_id": sub_id})
            assert sub["status"] == "completed", sub
            result["subscribers_imported"] = sub["progress"]["subscribers_imported"]
            result["subscribers_skipped"] = sub["progress"]["subscribers_skipped"]
    result["requests"] = fake.requests
    result["limited"] = sum(1 for _, _, s in fake.log if s in (420, 429))
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--paced", action="store_true")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    fake = FakeStatuspage(FakeConfig(rate_per_second=1.0 if args.paced else None))
    runs = []
    with fake.serve() as base_url:
        for _ in range(1 if args.paced else args.runs):
            runs.append(await run_once(fake, base_url, args.paced))
    minimum = fake.minimum_requests()
    print(f"source requests: {runs[0]['requests']} (structure {runs[0]['structure_requests']}),"
          f" minimum the page sizes require: {minimum} "
          f"(structure {fake.minimum_requests(subscribers=False)}); "
          f"420/429 answers: {runs[0]['limited']}")
    for r in runs:
        print(f"structure+history {r['structure_wall_s']:.2f}s (structure steps "
              f"{r['structure_s']:.2f}s, history {r['history_s']:.2f}s): "
              f"{r['incidents']} incidents, {r['incidents_per_s']:.0f} incidents/s, "
              f"{r['changes_per_s']:.0f} changes/s; subscribers {r['subscribers_s']:.2f}s "
              f"({r['subscribers_imported']} imported, {r['subscribers_skipped']} skipped)")
    if len(runs) > 1:
        print(f"median incidents/s: {statistics.median(r['incidents_per_s'] for r in runs):.0f}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
