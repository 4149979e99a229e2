"""Shared fixtures: databases on both backends, the app in-process, accounts and callers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dutyline.api import observe
from dutyline.config import Settings
from tests.fixtures import databases as dbs
from tests.fixtures.api import Api, make_api, share_service_pages

# capture_logs must see every logger, whichever test used it first (see observe.py).
observe.CACHE_LOGGERS = False
# Each app a test creates gets the process's one OpenAPI document.
share_service_pages()

pytest_plugins = ["tests.fixtures.accounts", "tests.fixtures.browser", "tests.fixtures.redis",
                  "tests.fixtures.smtp"]


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dbs.make_sqlite_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str | None]:
    admin = dbs.postgres_admin_url()
    if admin is None:
        yield None
        return
    url = dbs.create_postgres_database(admin)
    yield url
    dbs.drop_postgres_database(admin, url)


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if dbs.postgres_admin_url() else ["sqlite"]


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    return dbs.fresh_sqlite(sqlite_template, tmp_path)


@pytest.fixture(params=_backends())
def database_url(request: pytest.FixtureRequest, sqlite_template: Path, tmp_path: Path) -> str:
    """A migrated, empty database: SQLite always, PostgreSQL too when configured.

    Sync on purpose: it runs outside the test's event loop, so it may use asyncio.run."""
    if request.param == "sqlite":
        return dbs.fresh_sqlite(sqlite_template, tmp_path)
    url: str = request.getfixturevalue("postgres_database")
    asyncio.run(dbs.truncate_all(url))
    return url


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Test settings: generous rate limits (limit tests set their own) and no workers."""
    return Settings(
        database_url=database_url,
        secret_key="test-secret-key",
        allow_private_network=True,
        rate_limit_per_second=100_000,
        rate_limit_per_minute=1_000_000,
        run_workers=False,
        log_level="warning",
    )


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with make_api(settings) as client:
        yield client
