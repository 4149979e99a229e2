"""Notification templates (notify/template). Times are Unix seconds."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text

from dutyline.db.tables.meta import metadata

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
