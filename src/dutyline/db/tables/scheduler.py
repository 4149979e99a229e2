"""The durable scheduler's rows (work/scheduler.py): one per recurring schedule of any domain."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text, UniqueConstraint

from dutyline.db.tables.meta import AutoBigInt, metadata

work_schedule = Table(
    "work_schedule",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    # Which handler fires it ("automation.rule", "monit.rule"...) and for which record.
    Column("kind", String(64), nullable=False),
    Column("owner_id", String(64), nullable=False),
    # Either a cron expression (in `timezone`) or a fixed interval.
    Column("cron_expr", String(128), nullable=False, server_default=""),
    Column("interval_ms", BigInteger, nullable=False, server_default="0"),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    # Unix ms of the next due fire; NULL while paused.
    Column("next_fire_at", BigInteger, nullable=True),
    Column("last_fire_at", BigInteger, nullable=True),
    Column("fire_count", BigInteger, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("kind", "owner_id"),
    Index("ix_work_schedule_due", "next_fire_at"),
)
