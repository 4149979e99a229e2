"""channel noise rules: inhibit, silence and drop rules, the inhibit source index

Revision ID: 0009
Revises: 0012
Create Date: 2026-11-23 09:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('noise_rule',
    sa.Column('rule_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('priority', sa.Integer(), server_default='0', nullable=False),
    sa.Column('rule_name', sa.String(length=39), nullable=False),
    sa.Column('description', sa.String(length=500), server_default='', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('config', sa.Text(), server_default='{}', nullable=False),
    sa.Column('dropped_cnt', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('rule_id', name=op.f('pk_noise_rule'))
    )
    with op.batch_alter_table('noise_rule', schema=None) as batch_op:
        batch_op.create_index('ix_noise_rule_channel', ['channel_id', 'kind', 'priority'], unique=False)

    op.create_table('inhibit_source',
    sa.Column('rule_id', sa.String(length=24), nullable=False),
    sa.Column('match_key', sa.String(length=32), nullable=False),
    sa.Column('alert_id', sa.String(length=24), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('rule_id', 'match_key', 'alert_id', name=op.f('pk_inhibit_source'))
    )
    with op.batch_alter_table('inhibit_source', schema=None) as batch_op:
        batch_op.create_index('ix_inhibit_source_alert', ['alert_id'], unique=False)

    # Plain ADD COLUMNs (no table rebuild on SQLite: the incident title triggers of 0005 are
    # on `incident`, untouched here).
    with op.batch_alter_table('channel', schema=None) as batch_op:
        batch_op.add_column(sa.Column('noise_version', sa.BigInteger(), server_default='0', nullable=False))

    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.add_column(sa.Column('inhibit_rule_id', sa.String(length=24), server_default='', nullable=False))
        batch_op.add_column(sa.Column('inhibited_by', sa.String(length=24), server_default='', nullable=False))
        batch_op.add_column(sa.Column('silence_rule_id', sa.String(length=24), server_default='', nullable=False))
        batch_op.create_index('ix_alert_inhibited_by', ['inhibited_by'], unique=False, sqlite_where=sa.text("inhibited_by != ''"), postgresql_where=sa.text("inhibited_by != ''"))


def downgrade() -> None:
    with op.batch_alter_table('alert', schema=None) as batch_op:
        batch_op.drop_index('ix_alert_inhibited_by', sqlite_where=sa.text("inhibited_by != ''"), postgresql_where=sa.text("inhibited_by != ''"))
        batch_op.drop_column('silence_rule_id')
        batch_op.drop_column('inhibited_by')
        batch_op.drop_column('inhibit_rule_id')

    with op.batch_alter_table('channel', schema=None) as batch_op:
        batch_op.drop_column('noise_version')

    with op.batch_alter_table('inhibit_source', schema=None) as batch_op:
        batch_op.drop_index('ix_inhibit_source_alert')

    op.drop_table('inhibit_source')
    with op.batch_alter_table('noise_rule', schema=None) as batch_op:
        batch_op.drop_index('ix_noise_rule_channel')

    op.drop_table('noise_rule')
