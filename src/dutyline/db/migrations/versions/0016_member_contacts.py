"""members' contact methods and notification preferences

Revision ID: 0016
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "member_notify",
        sa.Column("member_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("im", sa.Text(), server_default="{}", nullable=False),
        sa.Column("critical", sa.Text(), server_default="[]", nullable=False),
        sa.Column("warning", sa.Text(), server_default="[]", nullable=False),
        sa.Column("info", sa.Text(), server_default="[]", nullable=False),
        sa.Column("updated_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("member_id"),
    )
    with op.batch_alter_table("member_notify", schema=None) as batch_op:
        batch_op.create_index("ix_member_notify_account", ["account_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("member_notify", schema=None) as batch_op:
        batch_op.drop_index("ix_member_notify_account")
    op.drop_table("member_notify")
