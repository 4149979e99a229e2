"""each saved version of an integration's route, for /route/history/list

Revision ID: 0028v
Revises: 0027z
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0028v'
down_revision: str | None = '0027z'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "integration_route_history",
        sa.Column("integration_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("config", sa.Text(), server_default="{}", nullable=False),
        sa.Column("updated_by", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("integration_id", "version",
                                name="pk_integration_route_history"),
    )
    # A route saved before versions were kept has its current version as its history.
    op.execute(
        "INSERT INTO integration_route_history"
        " (integration_id, version, account_id, config, updated_by, updated_at)"
        " SELECT integration_id, version, account_id, config, updated_by, updated_at"
        " FROM integration_route")


def downgrade() -> None:
    op.drop_table("integration_route_history")
