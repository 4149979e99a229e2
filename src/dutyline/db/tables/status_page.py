"""Status pages: structure (sections, components), changes (incidents and maintenances) with
their timeline updates, email subscribers, and migration jobs from Atlassian Statuspage.
Times are Unix seconds."""

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

from dutyline.db.tables.meta import metadata

status_page = Table(
    "status_page",
    metadata,
    Column("page_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("page_name", String(128), nullable=False),
    # The public address /status/{url_name}: unique across the whole server.
    Column("url_name", String(64), nullable=False, unique=True),
    Column("page_type", String(16), nullable=False, server_default="public"),  # public|internal
    Column("description", String(1024), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("time_zone", String(64), nullable=False, server_default="UTC"),
    # Internal pages: visitors need a login token; only its hash is kept.
    Column("access_token_hash", String(64), nullable=False, server_default=""),
    Column("settings", Text, nullable=False, server_default="{}"),  # JSON: branding, links...
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_page_account", "account_id"),
)

status_section = Table(
    "status_section",
    metadata,
    Column("section_id", String(24), primary_key=True),
    Column("page_id", BigInteger, nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("name", String(255), nullable=False),
    Column("description", String(1024), nullable=False, server_default=""),
    Column("order_id", Integer, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_section_page", "page_id", "order_id"),
)

status_component = Table(
    "status_component",
    metadata,
    Column("component_id", String(24), primary_key=True),
    Column("page_id", BigInteger, nullable=False),
    Column("section_id", String(24), nullable=False, server_default=""),
    Column("account_id", BigInteger, nullable=False),
    Column("name", String(255), nullable=False),
    Column("description", String(1024), nullable=False, server_default=""),
    # operational | degraded | partial_outage | full_outage | under_maintenance
    Column("status", String(24), nullable=False, server_default="operational"),
    Column("order_id", Integer, nullable=False, server_default="0"),
    Column("available_since_seconds", BigInteger, nullable=False, server_default="0"),
    Column("hide_uptime", Boolean, nullable=False, server_default="0"),
    Column("hide_all", Boolean, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_component_page", "page_id", "section_id", "order_id"),
)

status_change = Table(
    "status_change",
    metadata,
    Column("change_id", BigInteger, primary_key=True, autoincrement=False),
    Column("page_id", BigInteger, nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("type", String(16), nullable=False),  # incident | maintenance
    Column("title", String(512), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    # incident: investigating identified monitoring resolved; maintenance: scheduled ongoing
    # completed. Derived from the latest timeline entry.
    Column("status", String(16), nullable=False),
    Column("affected_components", Text, nullable=False, server_default="[]"),  # JSON
    Column("responder_ids", Text, nullable=False, server_default="[]"),  # JSON
    Column("linked_change_ids", Text, nullable=False, server_default="[]"),  # JSON
    Column("start_at_seconds", BigInteger, nullable=False),
    Column("close_at_seconds", BigInteger, nullable=False, server_default="0"),
    # The close time the caller set (maintenance window end, retrospective close); 0: none.
    # close_at_seconds is derived from it and the timeline, so a deleted entry can undo a close.
    Column("scheduled_close_at_seconds", BigInteger, nullable=False, server_default="0"),
    Column("is_retrospective", Boolean, nullable=False, server_default="0"),
    Column("notify_subscribers", Boolean, nullable=False, server_default="0"),
    Column("auto_update_by_schedule", Boolean, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_change_page", "page_id", "start_at_seconds"),
)

status_change_update = Table(
    "status_change_update",
    metadata,
    Column("update_id", String(24), primary_key=True),
    Column("change_id", BigInteger, nullable=False),
    Column("page_id", BigInteger, nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("at_seconds", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("component_changes", Text, nullable=False, server_default="[]"),  # JSON
    # Insertion order within the change: breaks ties between entries of the same second.
    Column("seq", Integer, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_status_change_update_change", "change_id", "at_seconds"),
)

status_subscriber = Table(
    "status_subscriber",
    metadata,
    Column("subscriber_id", String(24), primary_key=True),
    Column("page_id", BigInteger, nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("email", String(255), nullable=False),  # lower-cased
    Column("status", String(16), nullable=False),  # pending | confirmed | unsubscribed
    # Double opt-in and one-click unsubscribe: tokens are random; only hashes are kept.
    Column("confirm_token_hash", String(64), nullable=False, server_default=""),
    Column("unsubscribe_token_hash", String(64), nullable=False, server_default=""),
    Column("source", String(16), nullable=False, server_default="web"),  # web|import|migration
    Column("locale", String(16), nullable=False, server_default=""),
    # JSON list of component ids the subscriber follows; empty: every component.
    Column("component_ids", Text, nullable=False, server_default="[]"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("page_id", "email", name="uq_status_subscriber_page_email"),
    # The public page finds a subscriber from the token in a confirm or unsubscribe link.
    Index("ix_status_subscriber_confirm", "confirm_token_hash"),
    Index("ix_status_subscriber_unsubscribe", "unsubscribe_token_hash"),
)

status_template = Table(
    "status_template",
    metadata,
    Column("template_id", String(24), primary_key=True),
    Column("page_id", BigInteger, nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("name", String(255), nullable=False),
    Column("title", String(512), nullable=False, server_default=""),
    Column("body", Text, nullable=False, server_default=""),
    Column("update_status", String(16), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_template_page", "page_id"),
)

# What a migration already imported: source object -> our object, per target page, so a
# resumed or re-run job skips what exists instead of duplicating it.
status_import_ref = Table(
    "status_import_ref",
    metadata,
    Column("page_id", BigInteger, primary_key=True),
    Column("kind", String(16), primary_key=True),  # section component incident update ...
    Column("source_id", String(128), primary_key=True),
    Column("target_id", String(64), nullable=False),
)

status_migration_job = Table(
    "status_migration_job",
    metadata,
    Column("job_id", String(26), primary_key=True),  # ULID
    Column("account_id", BigInteger, nullable=False),
    Column("person_id", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),  # structure | subscribers
    Column("source_page_id", String(128), nullable=False),
    Column("target_page_id", BigInteger, nullable=False, server_default="0"),
    Column("phase", String(16), nullable=False),  # structure | history | subscribers
    Column("status", String(16), nullable=False),  # pending running completed failed cancelled
    Column("progress", Text, nullable=False, server_default="{}"),  # JSON: MigrationProgress
    Column("checkpoint", Text, nullable=False, server_default="{}"),  # JSON: where to resume
    Column("error", Text, nullable=False, server_default=""),
    # The third-party key, sealed with the server key while the job needs it; erased after.
    Column("api_key_sealed", Text, nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_status_migration_job_account", "account_id", "created_at"),
)
