"""Notification templates (notify/template), and notification deliveries with every attempt
(notify/delivery; the webhook history is read from the attempts). Times are Unix seconds
unless a column says milliseconds."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import AutoBigInt, metadata

# The channel body columns, in the reference's order (TemplateItem).
from dutyline.kit.channels import TEMPLATE_CHANNELS as TEMPLATE_CHANNELS

notify_template = Table(
    "notify_template",
    metadata,
    Column("template_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),  # 0: account-wide
    Column("template_name", String(39), nullable=False),
    # lower-cased name, unique per account; a deleted template's key becomes
    # "~deleted~<id>" so its name can be used again.
    Column("name_key", String(64), nullable=False),
    Column("description", String(500), nullable=False, server_default=""),
    *(Column(name, Text, nullable=False, server_default="") for name in TEMPLATE_CHANNELS),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("deleted_at", BigInteger, nullable=False, server_default="0"),
    Index("uq_notify_template_account_name", "account_id", "name_key", unique=True),
    Index("ix_notify_template_account_updated", "account_id", "updated_at"),
    Index("ix_notify_template_account_created", "account_id", "created_at"),
)

# A member's own ways of being paged (notify/preference): chat handles by IM type
# (`{"telegram": "<chat id>"}`, JSON) and the channels they want per incident severity
# (JSON arrays), read when a layer says `by.follow_preference`. E-mail and phone stay on the
# member record. No row: e-mail for every severity.
member_notify = Table(
    "member_notify",
    metadata,
    Column("member_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("im", Text, nullable=False, server_default="{}"),
    Column("critical", Text, nullable=False, server_default="[]"),
    Column("warning", Text, nullable=False, server_default="[]"),
    Column("info", Text, nullable=False, server_default="[]"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_member_notify_account", "account_id"),
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
    # The on-call notification report: an account's deliveries of a window, by kind and
    # channel from the index alone.
    Index("ix_notify_delivery_account_created", "account_id", "created_at", "channel",
          "channel_id"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_notify_delivery_created", "created_at"),
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
    # Retention prunes by this column (work/retention.py).
    Index("ix_notify_attempt_time", "event_time_ms"),
)
