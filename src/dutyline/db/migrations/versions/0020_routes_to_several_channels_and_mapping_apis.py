"""routes to several channels, and mapping APIs

Revision ID: 0020
Revises: 0024
Create Date: 2026-11-23 15:10:00.000000

A route may deliver one event to several channels (matching cases with `fallthrough`), each
keeping its own active alert of the key: the active-key index takes the channel. Mapping
APIs (`/enrichment/mapping/api/*`) get their table.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0020'
down_revision: str | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ACTIVE = sa.text('end_time = 0')


def upgrade() -> None:
    op.create_table(
        'mapping_api',
        sa.Column('api_id', sa.String(length=24), nullable=False),
        sa.Column('account_id', sa.BigInteger(), nullable=False),
        sa.Column('team_id', sa.BigInteger(), server_default='0', nullable=False),
        sa.Column('api_name', sa.String(length=199), nullable=False),
        sa.Column('description', sa.Text(), server_default='', nullable=False),
        sa.Column('url', sa.String(length=500), nullable=False),
        sa.Column('headers_sealed', sa.Text(), server_default='', nullable=False),
        sa.Column('timeout', sa.Integer(), server_default='2', nullable=False),
        sa.Column('retry_count', sa.Integer(), server_default='0', nullable=False),
        sa.Column('insecure_skip_verify', sa.Boolean(), server_default='0', nullable=False),
        sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
        sa.Column('creator_id', sa.BigInteger(), nullable=False),
        sa.Column('updated_by', sa.BigInteger(), nullable=False),
        sa.Column('created_at', sa.BigInteger(), nullable=False),
        sa.Column('updated_at', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('api_id'),
    )
    op.create_index('uq_mapping_api_name', 'mapping_api', ['account_id', 'api_name'],
                    unique=True)
    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.drop_index('uq_alert_active_key', sqlite_where=_ACTIVE,
                            postgresql_where=_ACTIVE)
        batch_op.create_index('uq_alert_active_key',
                              ['integration_id', 'alert_key', 'channel_id'], unique=True,
                              sqlite_where=_ACTIVE, postgresql_where=_ACTIVE)


def downgrade() -> None:
    op.drop_index('uq_mapping_api_name', table_name='mapping_api')
    op.drop_table('mapping_api')
    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.drop_index('uq_alert_active_key', sqlite_where=_ACTIVE,
                            postgresql_where=_ACTIVE)
        batch_op.create_index('uq_alert_active_key', ['integration_id', 'alert_key'],
                              unique=True, sqlite_where=_ACTIVE, postgresql_where=_ACTIVE)
