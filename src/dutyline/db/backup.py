"""Backups of the configured database while it serves, and restores into an empty one.

SQLite: the online backup API (`sqlite3.Connection.backup`) copies a consistent snapshot
while other processes keep writing (a read transaction in WAL mode blocks no writer); the
copy is written beside the target and renamed into place, so a failed backup leaves no
half file under the target's name. PostgreSQL: `pg_dump --format=custom`, restored with
`pg_restore` in one transaction.

A backup does not hold the server's secret key: on SQLite without DUTYLINE_SECRET_KEY it is
the `secret.key` file beside the database, which the operator keeps with the backups (the
sealed third-party secrets need it; app keys, passwords and incidents do not)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, NullPool, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.db.tables.meta import HAND_MADE_TABLES

# How long a step waits for SQLite's lock before it retries (the writers hold it briefly).
SQLITE_TIMEOUT_S = 30.0
SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"
# Tables that hold no data of the operator's (Alembic's revision, SQLite's own).
NOT_DATA = frozenset({"alembic_version", "sqlite_sequence"})


class BackupError(Exception):
    """Said to the operator as it is, and the command exits non-zero."""


@dataclass(frozen=True)
class Target:
    """The database a command works on, from the configured SQLAlchemy URL."""

    url: URL

    @classmethod
    def of(cls, url: str) -> Target:
        return cls(make_url(url))

    @property
    def is_sqlite(self) -> bool:
        return self.url.get_backend_name() == "sqlite"

    def sqlite_path(self) -> Path:
        database = self.url.database
        if not database or database == ":memory:":
            raise BackupError("an in-memory SQLite database cannot be backed up")
        return Path(database)

    def libpq(self) -> tuple[str, dict[str, str]]:
        """The database as a libpq URI for pg_dump / pg_restore, and the environment that
        carries the password (never on the command line, where `ps` shows it)."""
        plain = self.url.set(drivername="postgresql", password=None, query={})
        env = dict(os.environ)
        if self.url.password:
            env["PGPASSWORD"] = str(self.url.password)
        return plain.render_as_string(hide_password=False), env


# --- backup ------------------------------------------------------------------------------


def backup(database_url: str, file: Path, *, pg_dump: str = "pg_dump") -> None:
    target = Target.of(database_url)
    file = file.resolve()
    partial = file.with_name(file.name + ".partial")
    partial.unlink(missing_ok=True)
    # Made first, readable by the owner alone: the copy holds hashed keys and sealed secrets.
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        if target.is_sqlite:
            _sqlite_copy(target.sqlite_path(), partial)
        else:
            uri, env = target.libpq()
            _run([pg_dump, "--format=custom", "--no-owner", "--no-privileges",
                  f"--file={partial}", f"--dbname={uri}"], env)
        os.replace(partial, file)
    finally:
        partial.unlink(missing_ok=True)


def _sqlite_copy(source: Path, dest: Path) -> None:
    if not source.is_file():
        raise BackupError(f"no SQLite database at {source}")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=SQLITE_TIMEOUT_S)
    try:
        dst = sqlite3.connect(dest, timeout=SQLITE_TIMEOUT_S)
        try:
            # All pages in one step, inside one read transaction: a snapshot as of its start.
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        finally:
            dst.close()
    finally:
        src.close()


def _run(command: list[str], env: dict[str, str]) -> None:
    if shutil.which(command[0]) is None:
        raise BackupError(f"{command[0]} not found: install PostgreSQL's client programs "
                          "of the server's major version (or name one with --pg-dump / "
                          "--pg-restore)")
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{Path(command[0]).name} failed ({done.returncode}): "
                          f"{done.stderr.strip()}")


# --- restore -----------------------------------------------------------------------------


def kind_of(file: Path) -> str:
    """'sqlite' or 'postgresql', from the file's first bytes."""
    with file.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(PG_DUMP_MAGIC):
        return "postgresql"
    raise BackupError(f"{file} is neither a SQLite database nor a pg_dump custom archive")


def tables_with_rows(database_url: str) -> list[str]:
    """The tables of the database that hold a row (none: it is empty)."""
    target = Target.of(database_url)
    if target.is_sqlite and not target.sqlite_path().exists():
        return []
    return asyncio.run(_tables_with_rows(database_url))


async def _tables_with_rows(database_url: str) -> list[str]:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_filled)
    finally:
        await engine.dispose()


def _filled(conn: Connection) -> list[str]:
    quote = conn.dialect.identifier_preparer.quote
    names = [n for n in inspect(conn).get_table_names()
             if n not in NOT_DATA and not n.startswith(HAND_MADE_TABLES)]
    return [name for name in names
            if conn.exec_driver_sql(f"SELECT 1 FROM {quote(name)} LIMIT 1").first()]


def restore(database_url: str, file: Path, *, force: bool = False,
            pg_restore: str = "pg_restore") -> None:
    """Restore a backup made by `backup` into the configured database, which must be empty
    (no table holds a row) unless `force`: then what it held is replaced."""
    target = Target.of(database_url)
    if not file.is_file():
        raise BackupError(f"no backup at {file}")
    kind = kind_of(file)
    backend = "sqlite" if target.is_sqlite else "postgresql"
    if kind != backend:
        raise BackupError(f"{file} is a {kind} backup and the configured database is "
                          f"{backend}: restore it into a {kind} database, then move with "
                          "`dutyline copy-to`")
    filled = tables_with_rows(database_url)
    if filled and not force:
        raise BackupError(
            f"the configured database is not empty ({len(filled)} tables hold rows, e.g. "
            f"{', '.join(sorted(filled)[:3])}): restore into a new database, or pass --force "
            "to replace what it holds")
    if target.is_sqlite:
        _sqlite_restore(file, target.sqlite_path())
        return
    uri, env = target.libpq()
    # --clean drops what the archive is about to create (a migrated or replaced database).
    _run([pg_restore, "--no-owner", "--no-privileges", "--exit-on-error",
          "--single-transaction", "--clean", "--if-exists", f"--dbname={uri}", str(file)], env)


def _sqlite_restore(file: Path, path: Path) -> None:
    """Write the backup's pages over the database through the backup API, which also goes
    through its journal: a stale -wal file beside it cannot mix in old pages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(path, timeout=SQLITE_TIMEOUT_S)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=WAL")
        finally:
            dst.close()
    finally:
        src.close()
