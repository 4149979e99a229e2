"""post-mortems: the reports written after closed incidents

Revision ID: 0027p
Revises: 0026
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027p'
down_revision: str | None = '0026'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "post_mortem",
        sa.Column("post_mortem_id", sa.String(32), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("template_id", sa.String(64), nullable=False),
        sa.Column("incident_ids", sa.Text(), nullable=False),
        sa.Column("author_ids", sa.Text(), server_default="[]", nullable=False),
        sa.Column("team_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("channel_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("is_private", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("basics", sa.Text(), server_default="{}", nullable=False),
        sa.Column("content", sa.Text(), server_default="", nullable=False),
        sa.Column("follow_ups", sa.Text(), server_default="", nullable=False),
        sa.Column("media_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("drafted_by", sa.String(16), server_default="template", nullable=False),
        sa.Column("model_draft", sa.String(16), server_default="none", nullable=False),
        sa.Column("model_name", sa.String(128), server_default="", nullable=False),
        sa.Column("model_error", sa.Text(), server_default="", nullable=False),
        sa.Column("revision", sa.Integer(), server_default="1", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("published_at", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("post_mortem_id", name="pk_post_mortem"),
    )
    with op.batch_alter_table("post_mortem") as batch:
        batch.create_index("ix_post_mortem_account_created", ["account_id", "created_at"],
                           unique=False)
        batch.create_index("ix_post_mortem_account_updated", ["account_id", "updated_at"],
                           unique=False)


def downgrade() -> None:
    with op.batch_alter_table("post_mortem") as batch:
        batch.drop_index("ix_post_mortem_account_updated")
        batch.drop_index("ix_post_mortem_account_created")
    op.drop_table("post_mortem")
