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
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Connection,
    Date,
    DateTime,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    select,
)
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.db.migrate import pending, upgrade
from dutyline.db.tables.meta import HAND_MADE_TABLES
from tests.fixtures import databases as dbs
from tests.fixtures.server import backends, run_cli

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


def _data_tables(conn: Connection) -> list[Table]:
    meta = MetaData()
    meta.reflect(conn)
    return [t for t in meta.sorted_tables
            if t.name != "alembic_version" and not t.name.startswith(HAND_MADE_TABLES)]


def _value(table: Table, column: Any) -> Any:
    """A value of the column's type, different from column to column (a swapped or dropped
    column shows), short enough for any length limit."""
    seed = zlib.crc32(f"{table.name}.{column.name}".encode())
    kind = column.type
    if isinstance(kind, Boolean):
        return bool(seed % 2)
    if isinstance(kind, Integer):
        return 1 + seed % 30_000
    if isinstance(kind, Float | Numeric):
        return float(seed % 1000) + 0.5
    if isinstance(kind, DateTime | Date | LargeBinary | JSON):
        raise AssertionError(f"{table.name}.{column.name}: no value for {kind!r} yet")
    if isinstance(kind, String):  # Text too
        text = f"{seed:x}"
        return text[: kind.length] if kind.length else text
    raise AssertionError(f"{table.name}.{column.name}: no value for {kind!r}")


def _rows(tables: list[Table]) -> dict[str, dict[str, Any]]:
    """One row per table; a foreign key takes the value its parent's column got."""
    rows: dict[str, dict[str, Any]] = {}
    for table in tables:
        row = {c.name: _value(table, c) for c in table.columns}
        for fk in table.foreign_keys:
            row[fk.parent.name] = rows[fk.column.table.name][fk.column.name]
        rows[table.name] = row
    return rows


def _fill(conn: Connection) -> dict[str, dict[str, Any]]:
    tables = _data_tables(conn)
    rows = _rows(tables)
    for table in tables:
        conn.execute(table.insert().values(rows[table.name]))
    return rows


def _read(conn: Connection, wanted: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each table's rows, in the columns the old schema had."""
    tables = {t.name: t for t in _data_tables(conn)}
    found = {}
    for name, old in wanted.items():
        table = tables[name]
        columns = [table.c[c] for c in old]
        found[name] = [dict(r._mapping) for r in conn.execute(select(*columns))]
    return found  # type: ignore[return-value]


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
        written = asyncio.run(_sync(url, _fill))
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
        assert asyncio.run(_sync(url, _read, written)) == {
            name: [row] for name, row in written.items()}
