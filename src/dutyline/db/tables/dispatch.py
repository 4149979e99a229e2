"""Escalation rules, the escalation engine's per-incident state, and notification deliveries
with every attempt (the webhook history is read from the attempts)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import AutoBigInt, metadata

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

# One row per (notification, recipient, channel): its own durable job, so a slow receiver
# delays nobody else.
notify_delivery = Table(
    "notify_delivery",
    metadata,
    Column("delivery_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("incident_id", String(24), nullable=False),
    Column("channel_id", BigInteger, nullable=False, server_default="0"),
    Column("rule_id", String(24), nullable=False, server_default=""),
    Column("rule_name", String(64), nullable=False, server_default=""),
    Column("layer_idx", Integer, nullable=False, server_default="0"),
    Column("fire_type", String(8), nullable=False, server_default="fire"),
    Column("channel", String(32), nullable=False),  # email | webhook | slack | feishu ...
    Column("person_id", BigInteger, nullable=False, server_default="0"),
    Column("address", Text, nullable=False, server_default=""),  # e-mail or redacted URL
    # JSON: what the adapter needs; secrets in it are sealed.
    Column("content", Text, nullable=False, server_default="{}"),
    Column("status", String(16), nullable=False),  # pending | success | failed
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_notify_delivery_incident", "incident_id", "created_at"),
)

notify_attempt = Table(
    "notify_attempt",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("delivery_id", String(24), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("incident_id", String(24), nullable=False),
    Column("channel_id", BigInteger, nullable=False, server_default="0"),
    Column("channel", String(32), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("endpoint", Text, nullable=False, server_default=""),
    Column("request_headers", Text, nullable=False, server_default=""),
    Column("request_body", Text, nullable=False, server_default=""),
    Column("status", String(16), nullable=False),  # success | failed
    Column("status_code", Integer, nullable=False, server_default="0"),
    Column("error_message", Text, nullable=False, server_default=""),
    Column("response_headers", Text, nullable=False, server_default=""),
    Column("response_body", Text, nullable=False, server_default=""),
    Column("duration_ms", Integer, nullable=False, server_default="0"),
    Column("event_time_ms", BigInteger, nullable=False),
    Index("ix_notify_attempt_account_time", "account_id", "event_time_ms"),
    Index("ix_notify_attempt_delivery", "delivery_id", "attempt"),
)
