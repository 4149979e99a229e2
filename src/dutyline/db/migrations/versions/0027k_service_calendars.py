"""service calendars and their events

Revision ID: 0027k
Revises: 0027w
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027k'
down_revision: str | None = '0027w'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "calendar",
        sa.Column("cal_id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("team_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("cal_name", sa.String(64), nullable=False),
        sa.Column("description", sa.String(500), server_default="", nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("workdays", sa.String(32), server_default="", nullable=False),
        sa.Column("creator_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("cal_id", name="pk_calendar"),
    )
    with op.batch_alter_table("calendar") as batch:
        batch.create_index("ix_calendar_account", ["account_id", "created_at"], unique=False)
    op.create_table(
        "calendar_event",
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("cal_id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("summary", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("start_date", sa.String(10), nullable=False),
        sa.Column("end_date", sa.String(10), nullable=False),
        sa.Column("is_off", sa.Boolean(), nullable=False),
        sa.Column("creator_id", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["cal_id"], ["calendar.cal_id"], ondelete="CASCADE",
                                name="fk_calendar_event_cal_id_calendar"),
        sa.PrimaryKeyConstraint("event_id", name="pk_calendar_event"),
    )
    with op.batch_alter_table("calendar_event") as batch:
        batch.create_index("ix_calendar_event_day", ["cal_id", "start_date"], unique=False)


def downgrade() -> None:
    op.drop_table("calendar_event")
    op.drop_table("calendar")
