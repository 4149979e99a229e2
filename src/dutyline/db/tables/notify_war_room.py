"""Incident war rooms (notify/war_room): a group chat the server's chat app opened for an
incident, one per incident and IM integration. Times are Unix seconds."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, String, Table, Text

from dutyline.db.tables.meta import metadata

war_room = Table(
    "war_room",
    metadata,
    Column("war_room_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("incident_id", String(24), nullable=False),
    # The IM integration: one of the server's chat apps (notify/war_room/integrations.py).
    Column("integration_id", BigInteger, nullable=False),
    Column("plugin_type", String(32), nullable=False),
    Column("chat_id", String(128), nullable=False),
    Column("chat_name", String(255), nullable=False, server_default=""),
    Column("share_link", String(1024), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    # dutyline members invited so far (JSON array of ids).
    Column("member_ids", Text, nullable=False, server_default="[]"),
    Column("created_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Index("uq_war_room_incident_integration", "account_id", "incident_id", "integration_id",
          unique=True),
    Index("ix_war_room_chat", "account_id", "integration_id", "chat_id"),
)
