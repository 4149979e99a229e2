"""`INSERT ... ON CONFLICT` for the connection's database: PostgreSQL and SQLite spell it the
same way, but each through its own dialect's insert construct."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection


def insert_for(conn: Connection | AsyncConnection | str) -> Any:
    """The dialect's `insert`, which has `on_conflict_do_nothing` / `_do_update`; given a
    connection or a dialect's name (for statements built once per dialect)."""
    name = conn if isinstance(conn, str) else conn.dialect.name
    return postgresql.insert if name == "postgresql" else sqlite.insert
