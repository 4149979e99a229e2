"""BYOC runners: worknodes, runner keys and the tasks routed to runners

Revision ID: 0017
Revises: 0006
Create Date: 2026-11-23 12:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('runner_worknode',
    sa.Column('worknode_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('labels', sa.Text(), server_default='[]', nullable=False),
    sa.Column('description', sa.String(length=1024), server_default='', nullable=False),
    sa.Column('runner_name', sa.String(length=255), server_default='', nullable=False),
    sa.Column('runner_labels', sa.Text(), server_default='[]', nullable=False),
    sa.Column('version', sa.String(length=64), server_default='', nullable=False),
    sa.Column('environment', sa.Text(), server_default='{}', nullable=False),
    sa.Column('metrics', sa.Text(), server_default='{}', nullable=False),
    sa.Column('holder', sa.String(length=64), server_default='', nullable=False),
    sa.Column('connected_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('last_heartbeat_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('disconnected_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('worknode_id', name=op.f('pk_runner_worknode'))
    )
    with op.batch_alter_table('runner_worknode', schema=None) as batch_op:
        batch_op.create_index('ix_runner_worknode_account', ['account_id', 'created_at'], unique=False)

    op.create_table('runner_key',
    sa.Column('key_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('worknode_id', sa.String(length=40), nullable=False),
    sa.Column('name', sa.String(length=255), server_default='', nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('key_suffix', sa.String(length=8), server_default='', nullable=False),
    sa.Column('revoked', sa.Boolean(), server_default='0', nullable=False),
    sa.Column('revoked_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('last_used_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('key_id', name=op.f('pk_runner_key')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_runner_key_key_hash'))
    )
    with op.batch_alter_table('runner_key', schema=None) as batch_op:
        batch_op.create_index('ix_runner_key_account_worknode', ['account_id', 'worknode_id'], unique=False)

    op.create_table('runner_task',
    sa.Column('task_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('worknode_id', sa.String(length=40), nullable=False),
    sa.Column('run_id', sa.String(length=40), server_default='', nullable=False),
    sa.Column('operation', sa.String(length=32), nullable=False),
    sa.Column('args', sa.Text(), server_default='{}', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='pending', nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), server_default='0', nullable=False),
    sa.Column('output', sa.Text(), server_default='', nullable=False),
    sa.Column('output_seq', sa.Integer(), server_default='0', nullable=False),
    sa.Column('result', sa.Text(), server_default='', nullable=False),
    sa.Column('error', sa.Text(), server_default='', nullable=False),
    sa.Column('exit_code', sa.Integer(), server_default='0', nullable=False),
    sa.Column('deadline_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('task_id', name=op.f('pk_runner_task'))
    )
    with op.batch_alter_table('runner_task', schema=None) as batch_op:
        batch_op.create_index('ix_runner_task_worknode_status', ['worknode_id', 'status'], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ('runner_task', ['ix_runner_task_worknode_status']),
        ('runner_key', ['ix_runner_key_account_worknode']),
        ('runner_worknode', ['ix_runner_worknode_account']),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in indexes:
                batch_op.drop_index(name)
        op.drop_table(table)
