"""AI-SRE connectors: MCP servers and A2A agents. Times are Unix milliseconds (contract)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

mcp_server = Table(
    "mcp_server",
    metadata,
    Column("server_id", String(40), primary_key=True),  # mcp_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),  # 0: account-level
    Column("server_name", String(64), nullable=False),
    # server_name lower-cased: unique per account regardless of case.
    Column("name_key", String(64), nullable=False),
    Column("description", String(1024), nullable=False, server_default=""),
    Column("transport", String(32), nullable=False),  # streamable-http | sse | stdio
    Column("url", String(2048), nullable=False, server_default=""),
    Column("environment_kind", String(16), nullable=False, server_default=""),  # '' cloud byoc
    Column("environment_id", String(128), nullable=False, server_default=""),
    Column("connect_timeout", Integer, nullable=False, server_default="10"),  # seconds
    Column("call_timeout", Integer, nullable=False, server_default="60"),  # seconds
    # Header values are secrets: encrypted with the server key, never returned; the names
    # are kept apart so a masked view can list them.
    Column("headers_encrypted", Text, nullable=False, server_default=""),
    Column("header_names", Text, nullable=False, server_default="[]"),  # JSON array
    Column("auth_mode", String(16), nullable=False, server_default="shared"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("tools", Text, nullable=False, server_default="[]"),  # JSON: [{name, description,
    Column("tool_count", Integer, nullable=False, server_default="0"),  # input_schema}]
    Column("list_error", Text, nullable=False, server_default=""),
    Column("probed_at", BigInteger, nullable=False, server_default="0"),
    Column("created_by", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("uq_mcp_server_account_name", "account_id", "name_key", unique=True),
    Index("ix_mcp_server_account_team", "account_id", "team_id"),
    # Covers the list page (visibility by team, newest first) so it is read from the index.
    Index("ix_mcp_server_account_created", "account_id", "created_at", "server_id", "team_id"),
)

a2a_agent = Table(
    "a2a_agent",
    metadata,
    Column("agent_id", String(40), primary_key=True),  # a2a_<24 hex>
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),  # 0: account-level
    Column("agent_name", String(128), nullable=False),
    Column("instructions", String(2000), nullable=False, server_default=""),
    Column("card_url", String(2048), nullable=False),
    Column("agent_card_name", String(255), nullable=False, server_default=""),
    Column("agent_card_skills", Text, nullable=False, server_default="[]"),  # JSON array
    Column("agent_card", Text, nullable=False, server_default="{}"),  # the resolved card, JSON
    Column("auth_type", String(16), nullable=False, server_default="none"),  # none api_key bearer
    # Encrypted like MCP headers; never returned, logged or audited.
    Column("auth_config_encrypted", Text, nullable=False, server_default=""),
    Column("streaming", Boolean, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("created_by", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_a2a_agent_account_team", "account_id", "team_id"),
)
