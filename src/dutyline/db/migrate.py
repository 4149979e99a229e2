"""Apply Alembic migrations from code (serve, migrate, worker and the tests all call this).

Several processes may start at once against one database, so the upgrade runs under a lock:
a PostgreSQL advisory lock (taken in migrations/env.py) or, for a SQLite file, an exclusive
file lock beside it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url

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
