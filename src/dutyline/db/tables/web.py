"""The console's own records: people's passwords and second factors, their signed-in
sessions, one-time links (welcome, password reset) and sign-in failures for the lock-out.

Every secret here is stored so that reading the table gives nobody a way in: passwords as
Argon2id hashes, session and link tokens as SHA-256 hashes (they are 256-bit random, so a
fast hash cannot be brute-forced), TOTP secrets sealed with the server key."""

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

# One row per member who set a password; the API's member record knows nothing of it.
console_credential = Table(
    "console_credential",
    metadata,
    Column(
        "member_id", BigInteger, ForeignKey("member.member_id", ondelete="CASCADE"),
        primary_key=True, autoincrement=False,
    ),
    Column("account_id", BigInteger, nullable=False),
    Column("password_hash", String(255), nullable=False),
    # The TOTP secret sealed with the server key; "" while no second factor is enrolled.
    Column("totp_secret", Text, nullable=False, server_default=""),
    # The last TOTP time step accepted: a code is good once, even inside its window.
    Column("totp_last_step", BigInteger, nullable=False, server_default="0"),
    Column("updated_at", BigInteger, nullable=False),
)

console_session = Table(
    "console_session",
    metadata,
    # SHA-256 (hex) of the cookie's token: the token itself is never stored.
    Column("session_hash", String(64), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column(
        "member_id", BigInteger, ForeignKey("member.member_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("created_at", BigInteger, nullable=False),
    Column("last_seen_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("user_agent", String(255), nullable=False, server_default=""),
    Column("ip", String(64), nullable=False, server_default=""),
    # The password was right but the second factor is still to be given: such a session
    # opens nothing but the code's page.
    Column("second_factor_pending", Boolean, nullable=False, server_default="0"),
    Index("ix_console_session_member", "member_id"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_console_session_expires", "expires_at"),
)

# One-time links: welcome (set a first password) and password reset.
console_link = Table(
    "console_link",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("purpose", String(16), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column(
        "member_id", BigInteger, ForeignKey("member.member_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("created_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("used_at", BigInteger, nullable=False, server_default="0"),
    Index("ix_console_link_member", "member_id"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_console_link_expires", "expires_at"),
)

# Failed sign-ins per e-mail address and per client address, for the lock-out's back-off.
console_sign_in_failure = Table(
    "console_sign_in_failure",
    metadata,
    Column("subject", String(320), primary_key=True),  # "email:<address>" | "ip:<address>"
    Column("failures", Integer, nullable=False),
    Column("last_failure_at", BigInteger, nullable=False),
    Column("locked_until", BigInteger, nullable=False, server_default="0"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_console_sign_in_failure_last", "last_failure_at"),
)
