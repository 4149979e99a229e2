"""Channels (collaboration spaces), their integrations (where alerts come in), and the
integrations' alert pipelines and routes."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from dutyline.db.tables.meta import metadata

channel = Table(
    "channel",
    metadata,
    Column("channel_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("managing_team_ids", Text, nullable=False, server_default="[]"),  # JSON array
    Column("creator_id", BigInteger, nullable=False),
    Column("channel_name", String(64), nullable=False),
    # channel_name lower-cased: unique per account among channels that are not deleted.
    Column("name_key", String(64), nullable=False),
    Column("description", String(512), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("auto_resolve_timeout", Integer, nullable=False, server_default="0"),  # seconds
    Column("auto_resolve_mode", String(16), nullable=False, server_default="trigger"),
    Column("is_private", Boolean, nullable=False, server_default="0"),
    Column("disable_outlier_detection", Boolean, nullable=False, server_default="0"),
    Column("disable_auto_close", Boolean, nullable=False, server_default="0"),
    Column("is_external_report_enabled", Boolean, nullable=False, server_default="0"),
    # The token external reporters are given: shown once (create/update), kept as a hash.
    Column("external_report_token_hash", String(64), nullable=False, server_default=""),
    Column("group_config", Text, nullable=False, server_default="{}"),  # JSON: reference Group
    Column("flapping", Text, nullable=False, server_default="{}"),  # JSON: reference Flapping
    Column("last_incident_at", BigInteger, nullable=False, server_default="0"),
    # Bumped by every write to the channel's inhibit/silence/drop rules (channel/noise):
    # ingestion reads it with the settings and recompiles its cached rules when it moved.
    Column("noise_version", BigInteger, nullable=False, server_default="0"),
    Column("deleted_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_channel_account", "account_id", "status"),
    Index(
        "uq_channel_account_name",
        "account_id",
        "name_key",
        unique=True,
        sqlite_where=Column("deleted_at") == 0,
        postgresql_where=Column("deleted_at") == 0,
    ),
)

integration = Table(
    "integration",
    metadata,
    Column("integration_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("integration_name", String(128), nullable=False),
    Column("integration_type", String(32), nullable=False, server_default="standard"),
    # SHA-256 of the integration key: shown once at creation, like app keys.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("key_suffix", String(8), nullable=False),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("creator_id", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_integration_channel", "account_id", "channel_id"),
    # Deleted integrations stay (alerts still name them) but free their name.
    Index(
        "uq_integration_channel_name",
        "channel_id",
        "integration_name",
        unique=True,
        sqlite_where=Column("status") != "deleted",
        postgresql_where=Column("status") != "deleted",
    ),
)


# Custom actions (channel/integration): an integration of type `custom_action` takes no alerts;
# a member runs it on an incident of its channel (/incident/custom-action/do), which POSTs the
# incident to `url`, signed with the integration's own key (sealed with the server key: it is
# needed in clear to sign, and shown once, at creation).
integration_custom_action = Table(
    "integration_custom_action",
    metadata,
    Column("integration_id", BigInteger,
           ForeignKey("integration.integration_id", ondelete="CASCADE"), primary_key=True,
           autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("url", Text, nullable=False),
    Column("signing_secret_sealed", Text, nullable=False),
)


# Alert pipelines (channel/pipeline): per-integration title/description/severity rewrites and
# drops, run on every event before enrichment. The same shape as the enrichment settings (one rule
# list per integration, versioned for ingestion's cache: db/per_integration.py).
alert_pipeline = Table(
    "alert_pipeline",
    metadata,
    Column("integration_id", BigInteger, primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("rules", Text, nullable=False, server_default="[]"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("version", BigInteger, nullable=False, server_default="1"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# Routes (channel/route): a shared integration's cases sending alerts to other channels.
integration_route = Table(
    "integration_route",
    metadata,
    Column("integration_id", BigInteger, primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    # JSON {cases, sections, default}, as written (checked).
    Column("config", Text, nullable=False, server_default="{}"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("version", BigInteger, nullable=False, server_default="1"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# Each saved version of an integration's route (channel/route): who saved it, when, and what.
# The newest versions of each integration are kept (route service, HISTORY_KEPT).
integration_route_history = Table(
    "integration_route_history",
    metadata,
    Column("integration_id", BigInteger, primary_key=True, autoincrement=False),
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("config", Text, nullable=False, server_default="{}"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", BigInteger, nullable=False),
)
