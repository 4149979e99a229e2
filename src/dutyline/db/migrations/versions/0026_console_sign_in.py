"""the console's sign-in: passwords, sessions, one-time links, sign-in failures

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0026'
down_revision: str | None = '0025'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None



def upgrade() -> None:
    op.create_table(
        "console_credential",
        sa.Column("member_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("totp_secret", sa.Text(), server_default="", nullable=False),
        sa.Column("totp_last_step", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["member.member_id"], ondelete="CASCADE",
                                name="fk_console_credential_member_id_member"),
        sa.PrimaryKeyConstraint("member_id", name="pk_console_credential"),
    )
    op.create_table(
        "console_session",
        sa.Column("session_hash", sa.String(64), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("user_agent", sa.String(255), server_default="", nullable=False),
        sa.Column("ip", sa.String(64), server_default="", nullable=False),
        sa.Column("second_factor_pending", sa.Boolean(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["member.member_id"], ondelete="CASCADE",
                                name="fk_console_session_member_id_member"),
        sa.PrimaryKeyConstraint("session_hash", name="pk_console_session"),
    )
    with op.batch_alter_table("console_session") as batch:
        batch.create_index("ix_console_session_member", ["member_id"], unique=False)
    op.create_table(
        "console_link",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("used_at", sa.BigInteger(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(["member_id"], ["member.member_id"], ondelete="CASCADE",
                                name="fk_console_link_member_id_member"),
        sa.PrimaryKeyConstraint("token_hash", name="pk_console_link"),
    )
    with op.batch_alter_table("console_link") as batch:
        batch.create_index("ix_console_link_member", ["member_id"], unique=False)
    op.create_table(
        "console_sign_in_failure",
        sa.Column("subject", sa.String(320), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", sa.BigInteger(), nullable=False),
        sa.Column("locked_until", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("subject", name="pk_console_sign_in_failure"),
    )


def downgrade() -> None:
    op.drop_table("console_sign_in_failure")
    with op.batch_alter_table("console_link") as batch:
        batch.drop_index("ix_console_link_member")
    op.drop_table("console_link")
    with op.batch_alter_table("console_session") as batch:
        batch.drop_index("ix_console_session_member")
    op.drop_table("console_session")
    op.drop_table("console_credential")
