"""change signals: the versions that tell every process a cache is stale

Revision ID: 0027z
Revises: 0027e
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027z'
down_revision: str | None = '0027e'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "change_signal",
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_change_signal"),
    )


def downgrade() -> None:
    op.drop_table("change_signal")
