"""channel notification rules, and the incident events each rule has notified

Revision ID: 0027n
Revises: 0027k
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027n'
down_revision: str | None = '0027k'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "channel_notify_rule",
        sa.Column("rule_id", sa.String(24), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("channel_id", sa.BigInteger(), nullable=False),
        sa.Column("rule_name", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("events", sa.Text(), server_default="[]", nullable=False),
        sa.Column("template_id", sa.String(24), server_default="", nullable=False),
        sa.Column("target", sa.Text(), server_default="{}", nullable=False),
        sa.Column("time_filters", sa.Text(), server_default="[]", nullable=False),
        sa.Column("filters", sa.Text(), server_default="[]", nullable=False),
        sa.Column("status", sa.String(16), server_default="enabled", nullable=False),
        sa.Column("updated_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("rule_id", name="pk_channel_notify_rule"),
    )
    with op.batch_alter_table("channel_notify_rule") as batch:
        batch.create_index("ix_channel_notify_rule_channel",
                           ["account_id", "channel_id", "status"], unique=False)
    op.create_table(
        "channel_notify_sent",
        sa.Column("rule_id", sa.String(24), nullable=False),
        sa.Column("event_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("incident_id", sa.String(24), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("rule_id", "event_id", name="pk_channel_notify_sent"),
    )


def downgrade() -> None:
    op.drop_table("channel_notify_sent")
    with op.batch_alter_table("channel_notify_rule") as batch:
        batch.drop_index("ix_channel_notify_rule_channel")
    op.drop_table("channel_notify_rule")
