"""`INSERT ... ON CONFLICT` for the connection's database: PostgreSQL and SQLite spell it the
same way, but each through its own dialect's insert construct."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection


def insert_for(conn: Connection | AsyncConnection) -> Any:
    """The dialect's `insert`, which has `on_conflict_do_nothing` / `_do_update`."""
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
