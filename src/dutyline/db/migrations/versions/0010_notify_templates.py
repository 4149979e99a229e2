"""notification templates

Revision ID: 0010
Revises: 0013
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHANNELS = (
    "email", "sms", "voice", "dingtalk", "wecom", "feishu", "feishu_app", "dingtalk_app",
    "wecom_app", "slack_app", "teams_app", "telegram", "slack", "zoom",
)


def upgrade() -> None:
    op.create_table(
        "notify_template",
        sa.Column("template_id", sa.String(length=24), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("team_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("template_name", sa.String(length=39), nullable=False),
        sa.Column("name_key", sa.String(length=64), nullable=False),
        sa.Column("description", sa.String(length=500), server_default="", nullable=False),
        *(sa.Column(name, sa.Text(), server_default="", nullable=False) for name in _CHANNELS),
        sa.Column("status", sa.String(length=16), server_default="enabled", nullable=False),
        sa.Column("creator_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("deleted_at", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("template_id", name=op.f("pk_notify_template")),
    )
    with op.batch_alter_table("notify_template", schema=None) as batch_op:
        batch_op.create_index("uq_notify_template_account_name", ["account_id", "name_key"],
                              unique=True)
        batch_op.create_index("ix_notify_template_account_updated",
                              ["account_id", "updated_at"], unique=False)
        batch_op.create_index("ix_notify_template_account_created",
                              ["account_id", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("notify_template", schema=None) as batch_op:
        batch_op.drop_index("ix_notify_template_account_created")
        batch_op.drop_index("ix_notify_template_account_updated")
        batch_op.drop_index("uq_notify_template_account_name")
    op.drop_table("notify_template")
