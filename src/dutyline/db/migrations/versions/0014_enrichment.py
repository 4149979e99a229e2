"""enrichment: mapping schemas and rows, enrichment settings, alert pipelines, routes

Revision ID: 0014
Revises: 0006
Create Date: 2026-11-23 12:00:12.609917
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('integration_route',
    sa.Column('integration_id', sa.BigInteger(), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('config', sa.Text(), server_default='{}', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('version', sa.BigInteger(), server_default='1', nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('integration_id', name=op.f('pk_integration_route'))
    )
    op.create_table('alert_pipeline',
    sa.Column('integration_id', sa.BigInteger(), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('rules', sa.Text(), server_default='[]', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('version', sa.BigInteger(), server_default='1', nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('integration_id', name=op.f('pk_alert_pipeline'))
    )
    op.create_table('enrichment_schema_ref',
    sa.Column('integration_id', sa.BigInteger(), nullable=False),
    sa.Column('schema_id', sa.String(length=24), nullable=False),
    sa.PrimaryKeyConstraint('integration_id', 'schema_id', name=op.f('pk_enrichment_schema_ref'))
    )
    with op.batch_alter_table('enrichment_schema_ref', schema=None) as batch_op:
        batch_op.create_index('ix_enrichment_schema_ref_schema', ['schema_id'], unique=False)

    op.create_table('enrichment_setting',
    sa.Column('integration_id', sa.BigInteger(), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('rules', sa.Text(), server_default='[]', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('version', sa.BigInteger(), server_default='1', nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('integration_id', name=op.f('pk_enrichment_setting'))
    )
    op.create_table('mapping_row',
    sa.Column('schema_id', sa.String(length=24), nullable=False),
    sa.Column('row_key', sa.Text(), nullable=False),
    sa.Column('vals', sa.Text(), nullable=False),
    sa.Column('csv_line', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('schema_id', 'row_key', name=op.f('pk_mapping_row'))
    )
    with op.batch_alter_table('mapping_row', schema=None) as batch_op:
        batch_op.create_index('ix_mapping_row_updated', ['schema_id', 'updated_at'], unique=False)

    op.create_table('mapping_schema',
    sa.Column('schema_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('team_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('schema_name', sa.String(length=39), nullable=False),
    sa.Column('description', sa.String(length=500), server_default='', nullable=False),
    sa.Column('source_labels', sa.Text(), nullable=False),
    sa.Column('result_labels', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('data_version', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('schema_id', name=op.f('pk_mapping_schema')),
    sa.UniqueConstraint('account_id', 'schema_name', name=op.f('uq_mapping_schema_account_id_schema_name'))
    )


def downgrade() -> None:
    op.drop_table('mapping_schema')
    with op.batch_alter_table('mapping_row', schema=None) as batch_op:
        batch_op.drop_index('ix_mapping_row_updated')

    op.drop_table('mapping_row')
    op.drop_table('enrichment_setting')
    with op.batch_alter_table('enrichment_schema_ref', schema=None) as batch_op:
        batch_op.drop_index('ix_enrichment_schema_ref_schema')

    op.drop_table('enrichment_schema_ref')
    op.drop_table('alert_pipeline')
    op.drop_table('integration_route')
