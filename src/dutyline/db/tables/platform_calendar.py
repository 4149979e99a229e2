"""Service calendars: an account's working days and the events (holidays, make-up working
days) that override them. Time conditions of silence and escalation rules name them."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, ForeignKey, Index, String, Table, Text

from dutyline.db.tables.meta import metadata

calendar = Table(
    "calendar",
    metadata,
    Column("cal_id", String(64), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("cal_name", String(64), nullable=False),
    Column("description", String(500), nullable=False, server_default=""),
    Column("timezone", String(64), nullable=False),
    # Weekdays worked, 0 = Sunday ... 6 = Saturday, as a comma-separated list ("1,2,3,4,5").
    Column("workdays", String(32), nullable=False, server_default=""),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_calendar_account", "account_id", "created_at"),
)

calendar_event = Table(
    "calendar_event",
    metadata,
    Column("event_id", String(64), primary_key=True),
    Column("cal_id", String(64),
           ForeignKey("calendar.cal_id", ondelete="CASCADE"), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("summary", String(64), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    # Dates YYYY-MM-DD; `end_date` is exclusive. ISO dates compare as text in date order.
    Column("start_date", String(10), nullable=False),
    Column("end_date", String(10), nullable=False),
    Column("is_off", Boolean, nullable=False),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_calendar_event_day", "cal_id", "start_date"),
)
