"""Durable work: the job table every domain enqueues into."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import AutoBigInt, metadata

job = Table(
    "job",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("kind", String(128), nullable=False),
    Column("payload", Text, nullable=False, server_default="{}"),
    # pending -> running -> done | dead; running -> pending again on failure or lost lease.
    Column("status", String(16), nullable=False, server_default="pending"),
    # Optional: an enqueue with a key that already has an unfinished job is a no-op.
    Column("dedupe_key", String(255), nullable=True, unique=True),
    Column("run_at", BigInteger, nullable=False),  # Unix milliseconds
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("max_attempts", Integer, nullable=False, server_default="10"),
    Column("lease_owner", String(64), nullable=True),
    Column("lease_expires_at", BigInteger, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_job_claim", "status", "run_at"),
    Index("ix_job_lease", "status", "lease_expires_at"),
)
