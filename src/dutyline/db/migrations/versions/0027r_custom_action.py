"""custom actions: the webhook address and signing key of a custom-action integration

Revision ID: 0027r
Revises: 0027n
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027r'
down_revision: str | None = '0027n'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "integration_custom_action",
        sa.Column("integration_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("signing_secret_sealed", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["integration_id"], ["integration.integration_id"], ondelete="CASCADE",
            name="fk_integration_custom_action_integration_id_integration"),
        sa.PrimaryKeyConstraint("integration_id", name="pk_integration_custom_action"),
    )


def downgrade() -> None:
    op.drop_table("integration_custom_action")
