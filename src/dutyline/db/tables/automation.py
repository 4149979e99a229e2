"""AI-SRE automations: rules, their triggers, runs and run steps. Times are Unix ms."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from dutyline.db.tables.meta import AutoBigInt, metadata

automation_rule = Table(
    "automation_rule",
    metadata,
    Column("rule_id", String(40), primary_key=True),  # arule_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),  # 0: personal
    Column("owner_id", BigInteger, nullable=False),  # the creator
    Column("name", String(255), nullable=False),
    Column("enabled", Boolean, nullable=False, server_default="0"),
    Column("cron_expr", String(128), nullable=False),  # normalised 5 fields
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    Column("prompt", Text, nullable=False),
    Column("environment_kind", String(16), nullable=False, server_default=""),
    Column("environment_id", String(128), nullable=False, server_default=""),
    # The last manual run (ms): one per minute per rule.
    Column("last_manual_run_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_automation_rule_account_team", "account_id", "team_id"),
    Index("ix_automation_rule_account_owner", "account_id", "owner_id"),
)

# Up to one trigger of each kind per rule: schedule, http_post, oncall_incident.
automation_trigger = Table(
    "automation_trigger",
    metadata,
    Column("trigger_id", String(40), primary_key=True),  # atrig_<24 hex>
    Column("rule_id", String(40), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("enabled", Boolean, nullable=False, server_default="1"),
    # http_post: SHA-256 of the bearer token (the token itself is shown once, never stored).
    Column("token_hash", String(64), nullable=False, server_default=""),
    # oncall_incident: JSON arrays of channel ids and severities.
    Column("channel_ids", Text, nullable=False, server_default="[]"),
    Column("severities", Text, nullable=False, server_default="[]"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("rule_id", "kind"),
    Index("ix_automation_trigger_account_kind", "account_id", "kind"),
)

automation_run = Table(
    "automation_run",
    metadata,
    Column("run_id", String(40), primary_key=True),  # trun_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("rule_id", String(40), nullable=False),
    # schedule | http_post | oncall_incident | manual
    Column("trigger_kind", String(16), nullable=False),
    Column("trigger_id", String(40), nullable=False, server_default=""),
    # queued -> running -> succeeded | failed | skipped
    Column("status", String(16), nullable=False, server_default="queued"),
    Column("context", Text, nullable=False, server_default="{}"),  # JSON
    # Schedule fires: the due time, and how many earlier due times this run stands for.
    Column("due_at", BigInteger, nullable=False, server_default="0"),
    Column("missed_fires", Integer, nullable=False, server_default="0"),
    Column("session_id", String(40), nullable=False, server_default=""),
    Column("answer", Text, nullable=False, server_default=""),
    Column("error", Text, nullable=False, server_default=""),
    Column("created_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=False, server_default="0"),
    Column("finished_at", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_automation_run_rule", "account_id", "rule_id", "created_at"),
)

automation_run_step = Table(
    "automation_run_step",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("run_id", String(40), nullable=False),
    Column("seq", Integer, nullable=False),
    # llm_request | llm_response | tool_call | tool_result | answer | error
    Column("kind", String(16), nullable=False),
    Column("name", String(255), nullable=False, server_default=""),
    Column("content", Text, nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_automation_run_step_run", "run_id", "seq"),
)
