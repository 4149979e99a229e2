"""The restart proof: a real `dutyline serve` (workers on) migrates the realistic page, is
SIGKILLed mid-job, is started again, and the job completes from its checkpoint with exactly
the right counts and no duplicates; then the same for the e-mail subscribers."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_import_ref,
    status_section,
    status_subscriber,
    status_template,
)
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.fake_statuspage import FakeStatuspage
from tests.fixtures.server import Server, running_server
from tests.status_page.migration_support import KEY, PAGE, count, fake, job_row, settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]
__all__ = ["fake", "settings"]

# The source's limit shortened (and our pacing matched to it) so the test stays short while
# every step still waits on the source: a kill lands mid-job, not after it.
RATE = "15"
LIVENESS_S = 90.0


@pytest.mark.parametrize("fake", [{"rate_per_second": float(RATE)}], indirect=True)
async def test_a_migration_survives_sigkill_and_resumes_from_its_checkpoint(
    api: Api, owner: Person, fake: FakeStatuspage, database_url: str
) -> None:
    env = {
        "DUTYLINE_DATABASE_URL": database_url, "DUTYLINE_SECRET_KEY": "restart-test-key",
        "DUTYLINE_RUN_WORKERS": "1", "DUTYLINE_JOB_LEASE_SECONDS": "2",
        "DUTYLINE_ALLOW_PRIVATE_NETWORK": "1",
        "DUTYLINE_STATUSPAGE_API_URL": fake.base_url,  # type: ignore[attr-defined]
        "DUTYLINE_STATUSPAGE_RATE_PER_SECOND": RATE,
        "DUTYLINE_RATE_LIMIT_PER_SECOND": "0", "DUTYLINE_RATE_LIMIT_PER_MINUTE": "0",
    }
    exp = fake.expected

    # Structure and history: killed once the history is partly imported.
    with running_server(env) as server:
        job_id = await _start(server, owner, "/status-page/migrate-structure",
                              {"api_key": KEY, "source_page_id": PAGE})
        seen = await _wait(server, owner, job_id,
                           lambda j: j["progress"]["incidents_imported"] > 0)
        _kill(server)
    assert seen["status"] == "running" and seen["phase"] == "history"
    interrupted = await job_row(api, job_id)
    assert interrupted.status == "running" and interrupted.api_key_sealed

    with running_server(env) as server:
        done = await _wait(server, owner, job_id, lambda j: j["status"] != "running")
    assert done["status"] == "completed", done
    page_id = done["target_page_id"]
    progress = done["progress"]
    assert (progress["sections_imported"], progress["components_imported"],
            progress["templates_imported"], progress["incidents_imported"],
            progress["maintenances_imported"], progress["completed_steps"]) == (
        exp.sections, exp.components, exp.templates, exp.incidents, exp.maintenances, 5)
    on_page = status_change.c.page_id == page_id
    assert await count(api, status_change, on_page) == exp.incidents + exp.maintenances
    assert await count(api, status_change_update,
                       status_change_update.c.page_id == page_id) == exp.updates
    assert await count(api, status_section, status_section.c.page_id == page_id) == exp.sections
    assert await count(api, status_component,
                       status_component.c.page_id == page_id) == exp.components
    assert await count(api, status_template,
                       status_template.c.page_id == page_id) == exp.templates
    assert await count(api, status_import_ref, status_import_ref.c.page_id == page_id) == (
        exp.sections + exp.components + exp.templates + exp.incidents + exp.maintenances)
    assert (await job_row(api, job_id)).api_key_sealed == ""

    # E-mail subscribers: killed once some pages are in.
    with running_server(env) as server:
        sub_id = await _start(server, owner, "/status-page/migrate-email-subscribers",
                              {"api_key": KEY, "source_page_id": PAGE,
                               "target_page_id": page_id})
        await _wait(server, owner, sub_id,
                    lambda j: j["progress"]["subscribers_imported"] > 0)
        _kill(server)
    with running_server(env) as server:
        sub = await _wait(server, owner, sub_id, lambda j: j["status"] != "running")
    assert sub["status"] == "completed", sub
    assert (sub["progress"]["subscribers_imported"], sub["progress"]["subscribers_skipped"]) \
        == (exp.email_subscribers, exp.email_duplicates)
    assert await count(api, status_subscriber,
                       status_subscriber.c.page_id == page_id) == exp.email_subscribers


def _kill(server: Server) -> None:
    server.process.send_signal(signal.SIGKILL)  # no shutdown, no release of the lease
    server.process.wait(15)


async def _start(server: Server, owner: Person, path: str, body: dict[str, Any]) -> str:
    async with httpx.AsyncClient(base_url=server.base_url, trust_env=False) as client:
        reply = (await client.post(path, params={"app_key": owner.key}, json=body)).json()
    return str(reply["data"]["job_id"])


async def _wait(server: Server, owner: Person, job_id: str,
                until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Poll the job's status until `until` holds (a liveness bound, not a timing claim)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LIVENESS_S
    async with httpx.AsyncClient(base_url=server.base_url, trust_env=False) as client:
        while True:
            reply = await client.get("/status-page/migration/status",
                                     params={"app_key": owner.key, "job_id": job_id})
            record: dict[str, Any] = reply.json()["data"]
            if until(record) or record["status"] in ("failed", "cancelled"):
                return record
            if loop.time() > deadline:
                raise AssertionError(f"job still not there after {LIVENESS_S}s: {record}\n"
                                     f"{server.stderr()[-4000:]}")
            await asyncio.sleep(0.05)
