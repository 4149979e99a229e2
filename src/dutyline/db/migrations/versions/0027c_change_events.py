"""change events: changes, their pushes, and the delivery index of the on-call report

Revision ID: 0027c
Revises: 0027r
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0027c'
down_revision: str | None = '0027r'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_auto_big = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table('change_record',
    sa.Column('change_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), nullable=False),
    sa.Column('integration_id', sa.BigInteger(), nullable=False),
    sa.Column('change_key', sa.String(length=255), nullable=False),
    sa.Column('title', sa.String(length=512), nullable=False),
    sa.Column('description', sa.Text(), server_default='', nullable=False),
    sa.Column('type', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('link', sa.Text(), server_default='', nullable=False),
    sa.Column('labels', sa.Text(), server_default='{}', nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('start_time', sa.BigInteger(), nullable=False),
    sa.Column('end_time', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('event_cnt', sa.Integer(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('change_id', name='pk_change_record')
    )
    with op.batch_alter_table('change_record', schema=None) as batch_op:
        batch_op.create_index('uq_change_record_key', ['integration_id', 'change_key'],
                              unique=True)
        batch_op.create_index('ix_change_record_account_start',
                              ['account_id', 'start_time', 'channel_id'], unique=False)
        batch_op.create_index('ix_change_record_channel_start',
                              ['account_id', 'channel_id', 'start_time'], unique=False)

    op.create_table('change_event',
    sa.Column('id', _auto_big, autoincrement=True, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('change_id', sa.BigInteger(), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name='pk_change_event')
    )
    with op.batch_alter_table('change_event', schema=None) as batch_op:
        batch_op.create_index('ix_change_event_account_created',
                              ['account_id', 'created_at', 'channel_id'], unique=False)

    with op.batch_alter_table('notify_delivery', schema=None) as batch_op:
        batch_op.create_index('ix_notify_delivery_account_created',
                              ['account_id', 'created_at', 'channel', 'channel_id'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('notify_delivery', schema=None) as batch_op:
        batch_op.drop_index('ix_notify_delivery_account_created')
    with op.batch_alter_table('change_event', schema=None) as batch_op:
        batch_op.drop_index('ix_change_event_account_created')
    op.drop_table('change_event')
    with op.batch_alter_table('change_record', schema=None) as batch_op:
        batch_op.drop_index('ix_change_record_channel_start')
        batch_op.drop_index('ix_change_record_account_start')
        batch_op.drop_index('uq_change_record_key')
    op.drop_table('change_record')
