"""on-call schedules, their persons and calendar feeds

Revision ID: 0011
Revises: 0008
Create Date: 2026-11-23 10:15:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('schedule',
    sa.Column('schedule_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('team_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('schedule_name', sa.String(length=64), nullable=False),
    sa.Column('description', sa.String(length=512), server_default='', nullable=False),
    sa.Column('time_zone', sa.String(length=64), server_default='UTC', nullable=False),
    sa.Column('layers', sa.Text(), server_default='[]', nullable=False),
    sa.Column('notify', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_by', sa.BigInteger(), nullable=False),
    sa.Column('updated_by', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.Column('revision', sa.BigInteger(), server_default='1', nullable=False),
    sa.PrimaryKeyConstraint('schedule_id', name=op.f('pk_schedule'))
    )
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.create_index('ix_schedule_account_created', ['account_id', 'created_at'],
                              unique=False)

    op.create_table('schedule_person',
    sa.Column('schedule_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('person_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('schedule_id', 'person_id', name=op.f('pk_schedule_person'))
    )
    with op.batch_alter_table('schedule_person', schema=None) as batch_op:
        batch_op.create_index('ix_schedule_person_person', ['account_id', 'person_id'],
                              unique=False)

    op.create_table('schedule_feed',
    sa.Column('person_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('person_id', name=op.f('pk_schedule_feed')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_schedule_feed_token_hash'))
    )


def downgrade() -> None:
    op.drop_table('schedule_feed')
    with op.batch_alter_table('schedule_person', schema=None) as batch_op:
        batch_op.drop_index('ix_schedule_person_person')
    op.drop_table('schedule_person')
    with op.batch_alter_table('schedule', schema=None) as batch_op:
        batch_op.drop_index('ix_schedule_account_created')
    op.drop_table('schedule')
