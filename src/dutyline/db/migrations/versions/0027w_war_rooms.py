"""incident war rooms: the group chats opened for incidents through the chat apps

Revision ID: 0027w
Revises: 0027p
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027w'
down_revision: str | None = '0027p'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "war_room",
        sa.Column("war_room_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("incident_id", sa.String(24), nullable=False),
        sa.Column("integration_id", sa.BigInteger(), nullable=False),
        sa.Column("plugin_type", sa.String(32), nullable=False),
        sa.Column("chat_id", sa.String(128), nullable=False),
        sa.Column("chat_name", sa.String(255), server_default="", nullable=False),
        sa.Column("share_link", sa.String(1024), server_default="", nullable=False),
        sa.Column("status", sa.String(16), server_default="enabled", nullable=False),
        sa.Column("member_ids", sa.Text(), server_default="[]", nullable=False),
        sa.Column("created_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("war_room_id", name="pk_war_room"),
    )
    with op.batch_alter_table("war_room") as batch:
        batch.create_index("uq_war_room_incident_integration",
                           ["account_id", "incident_id", "integration_id"], unique=True)
        batch.create_index("ix_war_room_chat", ["account_id", "integration_id", "chat_id"],
                           unique=False)


def downgrade() -> None:
    op.drop_table("war_room")
