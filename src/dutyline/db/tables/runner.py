"""BYOC runners: worknodes (a runner inside a customer's network), the keys runners connect
with, and the tasks routed to them. Times are Unix ms."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

runner_worknode = Table(
    "runner_worknode",
    metadata,
    Column("worknode_id", String(40), primary_key=True),  # wn_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    # Managed here and sent to the runner in `welcome` (the runner echoes them back).
    Column("name", String(255), nullable=False),
    Column("labels", Text, nullable=False, server_default="[]"),  # JSON array of strings
    Column("description", String(1024), nullable=False, server_default=""),
    # Reported by the runner's heartbeats: older runners configure their own name and labels
    # (plus os:/arch:/hostname: ones) and report them; newer ones echo the managed ones.
    Column("runner_name", String(255), nullable=False, server_default=""),
    Column("runner_labels", Text, nullable=False, server_default="[]"),
    Column("version", String(64), nullable=False, server_default=""),
    Column("environment", Text, nullable=False, server_default="{}"),  # JSON EnvironmentInfo
    Column("metrics", Text, nullable=False, server_default="{}"),  # JSON HeartbeatMetrics
    # Which server process holds the runner's socket ('' when none) and since when.
    Column("holder", String(64), nullable=False, server_default=""),
    Column("connected_at", BigInteger, nullable=False, server_default="0"),
    Column("last_heartbeat_at", BigInteger, nullable=False, server_default="0"),
    Column("disconnected_at", BigInteger, nullable=False, server_default="0"),
    Column("created_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_runner_worknode_account", "account_id", "created_at"),
)

runner_key = Table(
    "runner_key",
    metadata,
    Column("key_id", String(40), primary_key=True),  # rkey_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("worknode_id", String(40), nullable=False),
    Column("name", String(255), nullable=False, server_default=""),
    # SHA-256 of the key; the key itself is shown once, in the response that creates it.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("key_suffix", String(8), nullable=False, server_default=""),
    Column("revoked", Boolean, nullable=False, server_default="0"),
    Column("revoked_at", BigInteger, nullable=False, server_default="0"),
    Column("last_used_at", BigInteger, nullable=False, server_default="0"),
    Column("created_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_runner_key_account_worknode", "account_id", "worknode_id"),
)

# One task sent to a runner (task.request), whichever process holds its socket: the process
# that runs the agent loop writes the row, the holder sends it and writes the outcome back.
runner_task = Table(
    "runner_task",
    metadata,
    Column("task_id", String(40), primary_key=True),  # rtask_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("worknode_id", String(40), nullable=False),
    Column("run_id", String(40), nullable=False, server_default=""),
    Column("operation", String(32), nullable=False),
    Column("args", Text, nullable=False, server_default="{}"),  # JSON
    # pending -> sent -> succeeded | failed | timed_out ; cancel: a cancel to send
    Column("status", String(16), nullable=False, server_default="pending"),
    Column("cancel_requested", Boolean, nullable=False, server_default="0"),
    Column("output", Text, nullable=False, server_default=""),  # streamed task.output chunks
    Column("output_seq", Integer, nullable=False, server_default="0"),
    Column("result", Text, nullable=False, server_default=""),  # JSON result of task.result
    Column("error", Text, nullable=False, server_default=""),
    Column("exit_code", Integer, nullable=False, server_default="0"),
    Column("deadline_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_runner_task_worknode_status", "worknode_id", "status"),
)
