"""An upgrade from the previous release's schema: a database migrated to that revision, with
a row in every table it has (made from the reflected tables, so a table added later is
covered without a line here), migrates to head on both databases and reads back the same;
`dutyline migrate --check` says whether migrations are pending.

The previous release is `PREVIOUS_RELEASE`: the head of the last round of migrations merged
before the current one (0027z, before 0028v and later). A database made by any build of that
round is at this revision, so it is the oldest schema an operator upgrading by one release
brings; older revisions are covered by the migrations test building head from nothing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.db.migrate import pending, upgrade
from tests.fixtures import databases as dbs
from tests.fixtures.server import backends, run_cli
from tests.fixtures.table_rows import fill, read_back

PREVIOUS_RELEASE = "0027z"


@contextlib.contextmanager
def database_at(backend: str, tmp_path: Path, revision: str) -> Iterator[str]:
    if backend == "sqlite":
        url = dbs.sqlite_url(tmp_path / "old.db")
        upgrade(url, revision)
        yield url
        return
    admin = dbs.postgres_admin_url()
    assert admin is not None
    url = dbs.create_postgres_database(admin, revision)
    try:
        yield url
    finally:
        dbs.drop_postgres_database(admin, url)


async def _sync(url: str, fn: Any, *args: Any) -> Any:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(fn, *args)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", backends())
def test_a_previous_release_database_with_data_everywhere_upgrades_to_head(
        backend: str, tmp_path: Path) -> None:
    with database_at(backend, tmp_path, PREVIOUS_RELEASE) as url:
        written = asyncio.run(_sync(url, fill))
        assert len(written) > 60  # every table of that release, not a handful
        env = {"DUTYLINE_DATABASE_URL": url}
        check = run_cli(["migrate", "--check"], env)
        assert check.returncode == 1, check.stderr
        assert "migrations pending: 0028v" in check.stdout
        assert pending(url)[0] == "0028v"

        done = run_cli(["migrate"], env)
        assert done.returncode == 0, done.stderr
        assert pending(url) == []
        check = run_cli(["migrate", "--check"], env)
        assert (check.returncode, check.stdout.strip()) == (
            0, "database is up to date: no migration pending")
        assert asyncio.run(_sync(url, read_back, written)) == {
            name: [row] for name, row in written.items()}
