"""Change events (deployments, configuration changes, feature flags) pushed through a
channel's change integration, shown on the channel's incidents that open soon after them."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import AutoBigInt, metadata

# One row per change: the pushes that carry the same change_key through the same integration
# update it (title, status, times), so a deployment's "Processing" then "Done" is one change.
change_record = Table(
    "change_record",
    metadata,
    Column("change_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("integration_id", BigInteger, nullable=False),
    Column("change_key", String(255), nullable=False),
    Column("title", String(512), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("type", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("link", Text, nullable=False, server_default=""),
    Column("labels", Text, nullable=False, server_default="{}"),  # JSON object
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("start_time", BigInteger, nullable=False),
    Column("end_time", BigInteger, nullable=False, server_default="0"),
    Column("event_cnt", Integer, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("uq_change_record_key", "integration_id", "change_key", unique=True),
    # /change/list and the report (latest start first; channel_id: what the caller may
    # see), and the changes before an incident of one channel.
    Index("ix_change_record_account_start", "account_id", "start_time", "channel_id"),
    Index("ix_change_record_channel_start", "account_id", "channel_id", "start_time"),
)

# One row per accepted push (a change event): the on-call report counts them.
change_event = Table(
    "change_event",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("account_id", BigInteger, nullable=False),
    Column("change_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # The report counts from the index alone (channel_id: what the caller may see).
    Index("ix_change_event_account_created", "account_id", "created_at", "channel_id"),
)
