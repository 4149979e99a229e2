"""Escalation rules and the escalation engine's per-incident state."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

escalate_rule = Table(
    "escalate_rule",
    metadata,
    Column("rule_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("rule_name", String(64), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("aggr_window", Integer, nullable=False, server_default="0"),
    Column("template_id", String(24), nullable=False, server_default=""),
    # JSON: layers as given, except webhook secrets, which are sealed (runtime.secrets).
    Column("layers", Text, nullable=False, server_default="[]"),
    Column("time_filters", Text, nullable=False, server_default="[]"),
    Column("filters", Text, nullable=False, server_default="[]"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_escalate_rule_channel", "account_id", "channel_id", "priority"),
)

# One row per incident: where its escalation stands. Every timer is a job carrying the `seq`
# it was scheduled for; a job whose seq is no longer the row's does nothing, so a step runs
# once even when a timer is delivered twice or an event moved the escalation meanwhile.
# `layer_started_at`, `last_notified_at` and `next_at` are epoch MILLISECONDS (the planned
# timeline, migration 0024); `created_at` and `updated_at` are seconds like everywhere else.
dispatch_state = Table(
    "dispatch_state",
    metadata,
    Column("incident_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("run_id", String(24), nullable=False),  # one dispatch (new, reopen, assign)
    Column("assign_type", String(16), nullable=False, server_default="assign"),
    Column("rule", Text, nullable=False, server_default="{}"),  # JSON: the rule's snapshot
    Column("status", String(16), nullable=False),  # waiting|running|paused|stopped|done
    Column("seq", Integer, nullable=False, server_default="0"),
    Column("layer_idx", Integer, nullable=False, server_default="0"),
    Column("layer_started_at", BigInteger, nullable=False, server_default="0"),
    Column("times", Integer, nullable=False, server_default="0"),  # notices in this layer
    Column("last_notified_at", BigInteger, nullable=False, server_default="0"),
    Column("next_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# Channel notification rules (dispatch/notify_rule): who is told of which incident events of
# a channel, beside escalation. `events` is a JSON array of incident feed types (`i_new`,
# `i_ack`...); `target` a JSON escalation target, webhook secrets sealed.
channel_notify_rule = Table(
    "channel_notify_rule",
    metadata,
    Column("rule_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("rule_name", String(64), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("events", Text, nullable=False, server_default="[]"),
    Column("template_id", String(24), nullable=False, server_default=""),
    Column("target", Text, nullable=False, server_default="{}"),
    Column("time_filters", Text, nullable=False, server_default="[]"),
    Column("filters", Text, nullable=False, server_default="[]"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_channel_notify_rule_channel", "account_id", "channel_id", "status"),
)

# One row per (rule, incident event) a rule has notified: its deliveries are made once,
# whatever runs the event's job again.
channel_notify_sent = Table(
    "channel_notify_sent",
    metadata,
    Column("rule_id", String(24), primary_key=True),
    Column("event_id", BigInteger, primary_key=True, autoincrement=False),
    Column("incident_id", String(24), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    # Retention prunes by this column (work/retention.py).
    Index("ix_channel_notify_sent_created", "created_at"),
)
