"""Migration 0005 (the title search index): incidents stored before it are found after it, it
goes down and up again, and on PostgreSQL a role that may not create pg_trgm still migrates
(the search then runs without the index, with the same answers)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import insert, inspect, text
from sqlalchemy.engine import make_url

from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.db.migrate import alembic_config, upgrade
from dutyline.db.tables import metadata
from dutyline.db.tables.incident import incident
from dutyline.db.tables.meta import include_name
from dutyline.kit.ids import hex_id
from dutyline.platform.account.service import create_account
from tests.fixtures import databases as dbs
from tests.fixtures.api import Api, make_api

pytestmark = pytest.mark.anyio

T0 = 1_700_000_000
WINDOW = {"start_time": T0 - 86_400, "end_time": T0 + 86_400}
TITLES = ["Disk FULL on db-01", "disk_full", "CPU 100% on api", "École fermée", "x/y down"]


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if dbs.postgres_admin_url() else ["sqlite"]


@pytest.fixture(params=_backends())
def database_at_0004(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of its own, migrated up to the revision before the title index."""
    if request.param == "sqlite":
        url = dbs.sqlite_url(tmp_path / "at-0004.db")
        upgrade(url, "0004")
        yield url
        return
    admin = dbs.postgres_admin_url()
    assert admin is not None
    url = dbs.create_postgres_database(admin, "0004")
    try:
        yield url
    finally:
        dbs.drop_postgres_database(admin, url)


@asynccontextmanager
async def _app(url: str) -> AsyncIterator[Api]:
    settings = Settings(database_url=url, secret_key="test-secret-key", run_workers=False,
                        rate_limit_per_second=100_000, rate_limit_per_minute=1_000_000,
                        log_level="warning")
    async with make_api(settings) as api:
        yield api


async def _seed(url: str, titles: list[str], account_id: int | None = None) -> tuple[int, str]:
    """Incidents written straight to the table (in a new account unless one is given)."""
    db = Database(url)
    key = ""
    try:
        async with db.transaction() as conn:
            if account_id is None:
                created = await create_account(conn, account_name="Acme", owner_name="Owner",
                                               owner_email="o@acme.example", now_s=T0)
                account_id, key = created.account_id, created.app_key
            await conn.execute(insert(incident), [
                {"incident_id": hex_id(), "account_id": account_id, "num": secrets.token_hex(4),
                 "title": title, "incident_severity": "Info", "incident_status": "Info",
                 "start_time": T0 + n, "last_time": T0 + n, "created_at": T0,
                 "updated_at": T0} for n, title in enumerate(titles)])
    finally:
        await db.dispose()
    return account_id, key


async def _found(url: str, key: str, query: str) -> list[str]:
    async with _app(url) as api:
        reply = await api.call("/incident/list", {**WINDOW, "query": query, "limit": 100},
                               key=key)
    assert reply.status == 200, reply.body
    assert reply.data["total"] == len(reply.data["items"])
    return sorted(item["title"] for item in reply.data["items"])


async def _search_objects(url: str) -> list[str]:
    """The title index's objects in the database: FTS table, shadow tables and triggers on
    SQLite, the trigram index on PostgreSQL."""
    db = Database(url)
    try:
        async with db.transaction(write=False) as conn:
            if db.is_sqlite:
                rows = await conn.execute(text(
                    "SELECT name FROM sqlite_master WHERE name LIKE 'incident_title_fts%'"))
            else:
                rows = await conn.execute(text(
                    "SELECT indexname FROM pg_indexes WHERE indexname = 'ix_incident_title_trgm'"))
            return sorted(row[0] for row in rows)
    finally:
        await db.dispose()


async def _schema_diff(url: str) -> list[object]:
    """The differences between the database and the table modules, over the tables the
    database has: tables of migrations newer than the one it is at are not differences."""
    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            diff = await conn.run_sync(lambda sync: compare_metadata(MigrationContext.configure(
                sync, opts={"include_name": include_name}), metadata))
    finally:
        await db.dispose()
    later = {d[1].name for d in diff if isinstance(d, tuple) and d[0] == "add_table"}
    return [d for d in diff if not (isinstance(d, tuple) and (
        d[0] == "add_table" or (d[0] == "add_index" and d[1].table.name in later)))]


async def _snapshot(url: str) -> dict[str, tuple[list[str], list[str]]]:
    """Every table with its columns and indexes, as the database has them."""
    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            def read(sync: object) -> dict[str, tuple[list[str], list[str]]]:
                found = inspect(sync)
                return {t: (sorted(c["name"] for c in found.get_columns(t)),
                            sorted(str(i["name"]) for i in found.get_indexes(t)))
                        for t in found.get_table_names()}
            return await conn.run_sync(read)
    finally:
        await db.dispose()


async def test_incidents_stored_before_the_migration_are_found(database_at_0004: str) -> None:
    url = database_at_0004
    at_0004 = await _snapshot(url)
    account_id, key = await _seed(url, TITLES)
    await anyio.to_thread.run_sync(upgrade, url)
    assert await _search_objects(url)
    assert await _found(url, key, "disk") == ["Disk FULL on db-01", "disk_full"]
    assert await _found(url, key, "K_F") == ["disk_full"]
    assert await _found(url, key, "100% ON") == ["CPU 100% on api"]
    assert await _found(url, key, "FERMÉE") == ["École fermée"]
    assert await _found(url, key, "x/y") == ["x/y down"]

    # Down: the index goes and the schema is 0004's again (later migrations go down too).
    await anyio.to_thread.run_sync(command.downgrade, alembic_config(url), "0004")
    assert await _search_objects(url) == []
    assert await _snapshot(url) == at_0004
    # Up again: what was written in between is indexed too.
    await _seed(url, ["Disk written while down"], account_id)
    await anyio.to_thread.run_sync(upgrade, url)
    assert await _found(url, key, "DISK") == [
        "Disk FULL on db-01", "Disk written while down", "disk_full"]
    assert await _schema_diff(url) == []


async def test_a_role_that_may_not_create_pg_trgm_still_migrates() -> None:
    """pg_trgm needs the CREATE right on the database (it is a trusted extension). Without it
    the migration goes on without the trigram index, and the search gives the same answers,
    only without the index."""
    admin = dbs.postgres_admin_url()
    if admin is None:
        pytest.skip(f"{dbs.POSTGRES_ENV} is not set: this test is about PostgreSQL rights")
    name = f"dutyline_test_{secrets.token_hex(6)}"
    role, password = f"dutyline_limited_{secrets.token_hex(4)}", secrets.token_hex(12)
    admin_db = make_url(admin)
    url = admin_db.set(drivername="postgresql+asyncpg", database=name, username=role,
                       password=password).render_as_string(hide_password=False)
    await _admin(admin, f"CREATE ROLE {role} LOGIN PASSWORD '{password}'",
                 f'CREATE DATABASE "{name}"')
    try:
        # Tables in public, but not the right to create extensions in the database.
        await _admin(admin_db.set(database=name).render_as_string(hide_password=False),
                     f"GRANT USAGE, CREATE ON SCHEMA public TO {role}")
        await anyio.to_thread.run_sync(upgrade, url)
        assert await _search_objects(url) == []
        assert await _schema_diff(url) == []
        _, key = await _seed(url, TITLES)
        assert await _found(url, key, "disk") == ["Disk FULL on db-01", "disk_full"]
        assert await _found(url, key, "ÉCOLE") == ["École fermée"]
    finally:
        await _admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
                     f"DROP ROLE IF EXISTS {role}")


async def _admin(url: str, *statements: str) -> None:
    db = Database(str(make_url(url).set(drivername="postgresql+asyncpg")
                      .render_as_string(hide_password=False)))
    try:
        async with db.engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for statement in statements:
                await auto.execute(text(statement))
    finally:
        await db.dispose()
