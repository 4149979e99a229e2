"""Apply Alembic migrations from code (serve, migrate, worker and the tests all call this).

Several processes may start at once against one database, so the upgrade runs under a lock:
a PostgreSQL advisory lock (taken in migrations/env.py) or, for a SQLite file, an exclusive
file lock beside it.
"""

from __future__ import annotations

import asyncio
import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import NullPool
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.kit.private_files import private_file

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    with _sqlite_file_lock(url):
        command.upgrade(alembic_config(url), revision)


@contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        yield
        return
    db_path = Path(database)
    private_file(db_path)
    lock_path = db_path.with_name(db_path.name + ".migrate.lock")
    private_file(lock_path)
    with open(lock_path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def pending(url: str) -> list[str]:
    """The revisions `upgrade` would apply, oldest first (none: the database is at head)."""
    script = ScriptDirectory.from_config(alembic_config(url))
    current = _current_heads(url)
    heads = tuple(script.get_heads())
    if set(current) == set(heads):
        return []
    lower = current or ("base",)
    return [r.revision for r in reversed(list(script.iterate_revisions(heads, lower)))]


def _current_heads(url: str) -> tuple[str, ...]:
    parsed = make_url(url)
    file = parsed.database not in (None, "", ":memory:")
    if parsed.get_backend_name() == "sqlite" and file and not Path(str(parsed.database)).exists():
        return ()  # not made yet: reading it would create an empty file

    async def read() -> tuple[str, ...]:
        engine = create_async_engine(url, poolclass=NullPool)
        try:
            async with engine.connect() as conn:
                return tuple(await conn.run_sync(
                    lambda sync: MigrationContext.configure(sync).get_current_heads()))
        finally:
            await engine.dispose()

    return asyncio.run(read())
