"""incident title search index

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 03:45:00.000000

Written by hand: autogenerate knows neither FTS5 tables nor expression GIN indexes. The
objects made here are listed in db/tables/meta.py (HAND_MADE_TABLES, HAND_MADE_INDEXES) so
that autogenerate and the schema comparison test leave them out.

/incident/list's `query` is a case-insensitive substring match on the title
(`lower(title) LIKE '%…%'`), which without an index reads every title of the time window.

- SQLite: a contentless FTS5 table with the trigram tokenizer (SQLite >= 3.34) holding
  lower(title), keyed by incident's rowid (incident is a rowid table: its primary key is
  text). Triggers keep it in step with every insert, title change and delete, whoever writes.
  A later migration that rebuilds `incident` in batch mode (move and copy) drops these
  triggers and may renumber rowids: it must recreate them and refill the index (drop and
  create the FTS table, then the INSERT ... SELECT below).
- PostgreSQL: a pg_trgm GIN index on lower(title), which the existing LIKE uses as it is.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence

from alembic import op
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("dutyline.migrations")

_SQLITE_UPGRADE = [
    # Contentless (content=''): the index keeps only the trigrams, never a copy of the text.
    # It holds lower(title) and matches case-sensitively, so a MATCH of the lowered query is
    # exactly the LIKE it replaces (SQLite's lower() and LIKE fold ASCII letters only; the
    # tokenizer's own folding would also fold other scripts and change the results).
    # columnsize=0: no per-row sizes, which only ranking would read.
    "CREATE VIRTUAL TABLE incident_title_fts USING fts5("
    "title, content='', columnsize=0, tokenize='trigram case_sensitive 1')",
    # The 'delete' command is given the indexed text again: a contentless index finds the
    # entries to remove by tokenizing what it is told.
    "CREATE TRIGGER incident_title_fts_insert AFTER INSERT ON incident BEGIN "
    "INSERT INTO incident_title_fts(rowid, title) VALUES (new.rowid, lower(new.title)); END",
    "CREATE TRIGGER incident_title_fts_update AFTER UPDATE OF title ON incident BEGIN "
    "INSERT INTO incident_title_fts(incident_title_fts, rowid, title) "
    "VALUES ('delete', old.rowid, lower(old.title)); "
    "INSERT INTO incident_title_fts(rowid, title) VALUES (new.rowid, lower(new.title)); END",
    "CREATE TRIGGER incident_title_fts_delete AFTER DELETE ON incident BEGIN "
    "INSERT INTO incident_title_fts(incident_title_fts, rowid, title) "
    "VALUES ('delete', old.rowid, lower(old.title)); END",
    # The incidents stored before this migration.
    "INSERT INTO incident_title_fts(rowid, title) SELECT rowid, lower(title) FROM incident",
]

_SQLITE_DOWNGRADE = [
    "DROP TRIGGER IF EXISTS incident_title_fts_delete",
    "DROP TRIGGER IF EXISTS incident_title_fts_update",
    "DROP TRIGGER IF EXISTS incident_title_fts_insert",
    "DROP TABLE IF EXISTS incident_title_fts",
]

_PG_INDEX = ("CREATE INDEX IF NOT EXISTS ix_incident_title_trgm "
             "ON incident USING gin (lower(title) gin_trgm_ops)")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _sqlite_upgrade()
    elif bind.dialect.name == "postgresql":
        _postgres_upgrade()


def _sqlite_upgrade() -> None:
    create, *rest = _SQLITE_UPGRADE
    try:
        op.execute(create)
    except OperationalError as exc:  # "no such module: fts5" / "no such tokenizer: trigram"
        raise RuntimeError(
            f"dutyline needs SQLite 3.34 or later with FTS5 (this Python has SQLite "
            f"{sqlite3.sqlite_version}): {exc.orig}") from exc
    for statement in rest:
        op.execute(statement)


def _postgres_upgrade() -> None:
    # pg_trgm ships with PostgreSQL (contrib) and is a trusted extension since PostgreSQL 13:
    # the database owner may create it without superuser. An operator may still run dutyline
    # with a role that cannot, or on a server without contrib. Then the search stays correct
    # (the same LIKE, without an index: slower on large accounts) and the migration goes on;
    # a superuser can add the index later with the two statements logged below.
    bind = op.get_bind()
    installed = bind.execute(
        text("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")).first() is not None
    if not installed:
        try:
            with bind.begin_nested():
                bind.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
        except DBAPIError as exc:
            log.warning(
                "pg_trgm is not available (%s): /incident/list title search works without "
                "its index. To add it: CREATE EXTENSION pg_trgm; %s;",
                str(exc.orig).strip(), _PG_INDEX)
            return
    op.execute(_PG_INDEX)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _SQLITE_DOWNGRADE:
            op.execute(statement)
    elif bind.dialect.name == "postgresql":
        # The extension stays: other objects of the database may use it by now.
        op.execute("DROP INDEX IF EXISTS ix_incident_title_trgm")
