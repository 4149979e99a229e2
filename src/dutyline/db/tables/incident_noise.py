"""The index of possible inhibit sources among the alerts (incident/ingest/noise.py)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, PrimaryKeyConstraint, String, Table

from dutyline.db.tables.meta import metadata

# One row per (enabled inhibit rule, active alert matching its source_filters): `match_key`
# hashes the alert's values at the rule's `equals` paths, so a target alert finds its
# possible sources with one indexed lookup of (rule_id, its own values' hash).
inhibit_source = Table(
    "inhibit_source",
    metadata,
    Column("rule_id", String(24), nullable=False),
    Column("match_key", String(32), nullable=False),
    Column("alert_id", String(24), nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    PrimaryKeyConstraint("rule_id", "match_key", "alert_id"),
    Index("ix_inhibit_source_alert", "alert_id"),
)
