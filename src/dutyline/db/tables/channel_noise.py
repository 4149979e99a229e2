"""Noise control of a channel: inhibit, silence and drop (unsubscribe) rules.

The channel's `noise_version` (db/tables/channel.py) counts writes to its rules: ingestion
reads it with the channel's settings and reloads its cached, compiled rules when it moved."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

noise_rule = Table(
    "noise_rule",
    metadata,
    Column("rule_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),  # inhibit | silence | drop
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("rule_name", String(39), nullable=False),
    Column("description", String(500), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    # JSON: the kind's own fields (filters, source_filters, target_filters, equals,
    # is_directly_discard, time_filters, time_filter, from_incident_id), as written.
    Column("config", Text, nullable=False, server_default="{}"),
    # Alerts this rule dropped (not stored) since it was created.
    Column("dropped_cnt", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_noise_rule_channel", "channel_id", "kind", "priority"),
)
