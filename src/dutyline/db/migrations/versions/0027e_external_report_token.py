"""a channel's external report token, kept as a SHA-256 hash

Revision ID: 0027e
Revises: 0027c
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027e'
down_revision: str | None = '0027c'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('channel') as batch:
        batch.add_column(sa.Column('external_report_token_hash', sa.String(64),
                                   server_default='', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('channel') as batch:
        batch.drop_column('external_report_token_hash')
