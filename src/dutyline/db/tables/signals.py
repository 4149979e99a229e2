"""Change signals: one version per name, bumped by every write that makes a cache stale
(db/signals.py). On PostgreSQL the rows are not used: NOTIFY carries the bump."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, String, Table

from dutyline.db.tables.meta import metadata

change_signal = Table(
    "change_signal",
    metadata,
    # "auth", "status_page:<page_id>", and "*" (bumped with every other name: the one row
    # a process polls).
    Column("name", String(128), primary_key=True),
    Column("version", BigInteger, nullable=False, server_default="0"),
)
