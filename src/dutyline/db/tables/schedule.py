"""On-call schedules, who appears in them, and the per-person iCalendar feeds."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text

from dutyline.db.tables.meta import metadata

schedule = Table(
    "schedule",
    metadata,
    Column("schedule_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("schedule_name", String(64), nullable=False),
    Column("description", String(512), nullable=False, server_default=""),
    # IANA zone the layers' handoffs, restrictions and day masks are read in.
    Column("time_zone", String(64), nullable=False, server_default="UTC"),
    Column("layers", Text, nullable=False, server_default="[]"),  # JSON: reference ScheduleLayer
    Column("notify", Text, nullable=False, server_default="{}"),  # JSON: reference ScheduleNotify
    Column("created_by", BigInteger, nullable=False),
    Column("updated_by", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # +1 on every write: the in-process cache of compiled schedules is keyed by
    # (schedule_id, revision) (updated_at has a one-second grain: two writes in one second
    # would leave a stale entry).
    Column("revision", BigInteger, nullable=False, server_default="1"),
    Index("ix_schedule_account_created", "account_id", "created_at"),
)

# Every person named anywhere in a schedule's layers: /schedule/self and the calendar feed
# find a person's schedules through it. Rewritten with the layers on every write.
schedule_person = Table(
    "schedule_person",
    metadata,
    Column("schedule_id", BigInteger, primary_key=True, autoincrement=False),
    Column("person_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Index("ix_schedule_person_person", "account_id", "person_id"),
)

# One secret calendar-feed URL per person. Only the token's SHA-256 is stored.
schedule_feed = Table(
    "schedule_feed",
    metadata,
    Column("person_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
)
