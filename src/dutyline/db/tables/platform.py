"""Accounts, members, roles, app keys, teams and the audit log."""

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
    UniqueConstraint,
    text,
)

from dutyline.db.tables.meta import AutoBigInt, metadata

account = Table(
    "account",
    metadata,
    Column("account_id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_name", String(255), nullable=False),
    Column("email", String(255), nullable=False, server_default=""),
    Column("domain", String(255), nullable=False, server_default=""),
    Column("locale", String(16), nullable=False, server_default="en-US"),
    Column("time_zone", String(64), nullable=False, server_default="UTC"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

member = Table(
    "member",
    metadata,
    Column("member_id", BigInteger, primary_key=True, autoincrement=False),
    Column(
        "account_id",
        BigInteger,
        ForeignKey("account.account_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("member_name", String(64), nullable=False),
    # Lower-cased so uniqueness is case-insensitive on both databases.
    Column("email", String(255), nullable=False, server_default=""),
    Column("phone", String(32), nullable=False, server_default=""),
    Column("country_code", String(8), nullable=False, server_default=""),
    Column("avatar", String(512), nullable=False, server_default=""),
    Column("locale", String(16), nullable=False, server_default=""),
    Column("time_zone", String(64), nullable=False, server_default=""),
    Column("ref_id", String(128), nullable=False, server_default=""),
    Column("is_external", Boolean, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_member_account_status", "account_id", "status"),
    # An email names one live member per account; deleted members free theirs for reuse.
    # The service checks first for a clear message; this index settles concurrent invites.
    Index(
        "uq_member_account_email",
        "account_id",
        "email",
        unique=True,
        sqlite_where=text("email != '' AND status != 'deleted'"),
        postgresql_where=text("email != '' AND status != 'deleted'"),
    ),
)

role = Table(
    "role",
    metadata,
    Column("role_id", BigInteger, primary_key=True, autoincrement=False),
    Column(
        "account_id",
        BigInteger,
        ForeignKey("account.account_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("role_name", String(64), nullable=False),
    Column("description", String(512), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    # "owner", "admin", "member" for the built-in roles, "" for custom ones.
    Column("builtin", String(16), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("account_id", "role_name", name="uq_role_account_name"),
)

role_permission = Table(
    "role_permission",
    metadata,
    Column("role_id", BigInteger, ForeignKey("role.role_id", ondelete="CASCADE"), primary_key=True),
    Column("permission_id", Integer, primary_key=True),
)

member_role = Table(
    "member_role",
    metadata,
    Column(
        "member_id",
        BigInteger,
        ForeignKey("member.member_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("role_id", BigInteger, ForeignKey("role.role_id", ondelete="CASCADE"), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Index("ix_member_role_role", "role_id"),
)

app_key = Table(
    "app_key",
    metadata,
    Column("key_id", BigInteger, primary_key=True, autoincrement=False),
    Column(
        "account_id",
        BigInteger,
        ForeignKey("account.account_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "person_id", BigInteger, ForeignKey("member.member_id", ondelete="CASCADE"), nullable=False
    ),
    Column("key_name", String(64), nullable=False),
    # SHA-256 of the key: keys are 256-bit random, so a fast hash cannot be brute-forced, and
    # looking a key up by its hash never compares the secret itself.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("suffix", String(8), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("last_used_at", BigInteger, nullable=False, server_default="0"),
    Index("ix_app_key_person", "account_id", "person_id"),
)

team = Table(
    "team",
    metadata,
    Column("team_id", BigInteger, primary_key=True, autoincrement=False),
    Column(
        "account_id",
        BigInteger,
        ForeignKey("account.account_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("team_name", String(64), nullable=False),
    # team_name lower-cased: names are unique per account regardless of case.
    Column("name_key", String(64), nullable=False),
    Column("description", String(512), nullable=False, server_default=""),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("ref_id", String(128), nullable=False, server_default=""),
    Column("creator_id", BigInteger, nullable=False),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("account_id", "name_key", name="uq_team_account_name"),
    Index("ix_team_account_created", "account_id", "created_at"),
)

team_member = Table(
    "team_member",
    metadata,
    Column("team_id", BigInteger, ForeignKey("team.team_id", ondelete="CASCADE"), primary_key=True),
    Column(
        "person_id",
        BigInteger,
        ForeignKey("member.member_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("account_id", BigInteger, nullable=False),
    Index("ix_team_member_person", "account_id", "person_id"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("account_id", BigInteger, nullable=False),
    Column("member_id", BigInteger, nullable=False),
    Column("member_name", String(64), nullable=False, server_default=""),
    Column("key_suffix", String(8), nullable=False, server_default=""),
    # How the member proved who they were: app_key, session, signed_link or system.
    Column("credential", String(16), nullable=False, server_default="app_key"),
    Column("request_id", String(64), nullable=False),
    Column("ip", String(64), nullable=False, server_default=""),
    Column("operation", String(128), nullable=False),
    Column("target_ids", Text, nullable=False, server_default="[]"),
    Column("body", Text, nullable=False, server_default=""),
    Column("outcome", String(32), nullable=False),
    Column("is_write", Boolean, nullable=False),
    Column("is_dangerous", Boolean, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),  # Unix milliseconds, as the reference
    Index("ix_audit_account_time", "account_id", "created_at"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_audit_created", "created_at"),
)
