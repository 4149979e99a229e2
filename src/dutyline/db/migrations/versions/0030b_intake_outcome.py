"""the last events each integration received and their outcome, for its console page

Revision ID: 0030b
Revises: 0029g
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0030b'
down_revision: str | None = '0029g'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "intake_outcome",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True,
                  nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("integration_id", sa.BigInteger(), nullable=False),
        sa.Column("received_at", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=512), server_default="", nullable=False),
        sa.Column("alert_key", sa.String(length=255), server_default="", nullable=False),
        sa.Column("incident_id", sa.String(length=24), server_default="", nullable=False),
        sa.Column("reason", sa.String(length=512), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_intake_outcome"),
    )
    op.create_index("ix_intake_outcome_integration", "intake_outcome",
                    ["integration_id", "id"])
    op.create_index("ix_intake_outcome_received", "intake_outcome", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_intake_outcome_received", table_name="intake_outcome")
    op.drop_index("ix_intake_outcome_integration", table_name="intake_outcome")
    op.drop_table("intake_outcome")
