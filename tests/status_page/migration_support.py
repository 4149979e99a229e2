"""Fixtures and helpers of the migration tests: the fake Statuspage on loopback, settings
pointing at it, a worker that runs the migration's steps in-process, and row counts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.sql import ColumnElement

from dutyline.config import Settings
from dutyline.db.tables.status_page import status_migration_job
from dutyline.work.registry import registry
from dutyline.work.worker import Worker
from tests.fixtures.api import Api, Reply
from tests.fixtures.fake_statuspage import FakeConfig, FakeStatuspage

KEY = FakeConfig().api_key
PAGE = FakeConfig().page_id
SMALL = {"groups": 3, "components": 12, "incidents": 30, "incident_updates": 150,
         "maintenances": 4, "templates": 3, "subscribers": 120, "duplicate_emails": 5}


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeStatuspage]:
    """The fake source; parametrize indirectly with FakeConfig fields to change it. The
    rate limit is lifted unless a test asks for it."""
    options: dict[str, Any] = {"rate_per_second": None, **getattr(request, "param", {})}
    source = FakeStatuspage(FakeConfig(**options))
    with source.serve() as base_url:
        source.base_url = base_url  # type: ignore[attr-defined]
        yield source


@pytest.fixture
def settings(database_url: str, fake: FakeStatuspage) -> Settings:
    return Settings(
        database_url=database_url, secret_key="test-secret-key", allow_private_network=True,
        rate_limit_per_second=100_000, rate_limit_per_minute=1_000_000, run_workers=False,
        log_level="warning", statuspage_api_url=fake.base_url,  # type: ignore[attr-defined]
        # Our pacing is lifted so the tests are quick; the fake's own limit, when a test
        # turns it on, is what the client must then cope with.
        statuspage_rate_per_second=0,
    )


async def run_jobs(api: Api, limit: int = 1000) -> list[str]:
    """Run due jobs one by one, as a worker would, until none is due."""
    import dutyline.status_page.migration.tasks  # noqa: F401  (registers the job kind)

    worker = Worker(api.runtime, registry=registry, worker_id="test-worker")
    outcomes: list[str] = []
    for _ in range(limit):
        claimed = await worker.claim(1)
        if not claimed:
            break
        outcomes.append(await worker.execute(claimed[0]))
    return outcomes


async def start_structure(api: Api, key: str, *, api_key: str = KEY,
                          source_page_id: str = PAGE) -> str:
    reply = await api.call("/status-page/migrate-structure",
                           {"api_key": api_key, "source_page_id": source_page_id}, key=key)
    return str(reply.data["job_id"])


async def start_subscribers(api: Api, key: str, target_page_id: int, *,
                            api_key: str = KEY) -> str:
    reply = await api.call("/status-page/migrate-email-subscribers", {
        "api_key": api_key, "source_page_id": PAGE, "target_page_id": target_page_id}, key=key)
    return str(reply.data["job_id"])


async def status(api: Api, key: str, job_id: str) -> Reply:
    return await api.call("/status-page/migration/status", {"job_id": job_id}, key=key)


async def job_row(api: Api, job_id: str) -> Any:
    async with api.runtime.db.transaction(write=False) as conn:
        return (await conn.execute(select(status_migration_job).where(
            status_migration_job.c.job_id == job_id))).one()


async def count(api: Api, table: Any, *where: ColumnElement[bool]) -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(
            select(func.count()).select_from(table).where(*where))).scalar_one())


async def rows(api: Api, query: Any) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(query))
