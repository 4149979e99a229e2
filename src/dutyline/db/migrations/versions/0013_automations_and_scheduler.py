"""automation rules, triggers, runs and steps; the durable scheduler's rows

Revision ID: 0013
Revises: 0011
Create Date: 2026-11-23 09:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0013'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_AUTO = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table('work_schedule',
    sa.Column('id', _AUTO, autoincrement=True, nullable=False),
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('owner_id', sa.String(length=64), nullable=False),
    sa.Column('cron_expr', sa.String(length=128), server_default='', nullable=False),
    sa.Column('interval_ms', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('timezone', sa.String(length=64), server_default='UTC', nullable=False),
    sa.Column('next_fire_at', sa.BigInteger(), nullable=True),
    sa.Column('last_fire_at', sa.BigInteger(), nullable=True),
    sa.Column('fire_count', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_work_schedule')),
    sa.UniqueConstraint('kind', 'owner_id', name=op.f('uq_work_schedule_kind_owner_id'))
    )
    with op.batch_alter_table('work_schedule', schema=None) as batch_op:
        batch_op.create_index('ix_work_schedule_due', ['next_fire_at'], unique=False)

    op.create_table('automation_rule',
    sa.Column('rule_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('team_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('owner_id', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('enabled', sa.Boolean(), server_default='0', nullable=False),
    sa.Column('cron_expr', sa.String(length=128), nullable=False),
    sa.Column('timezone', sa.String(length=64), server_default='UTC', nullable=False),
    sa.Column('prompt', sa.Text(), nullable=False),
    sa.Column('environment_kind', sa.String(length=16), server_default='', nullable=False),
    sa.Column('environment_id', sa.String(length=128), server_default='', nullable=False),
    sa.Column('last_manual_run_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('rule_id', name=op.f('pk_automation_rule'))
    )
    with op.batch_alter_table('automation_rule', schema=None) as batch_op:
        batch_op.create_index('ix_automation_rule_account_team', ['account_id', 'team_id'], unique=False)
        batch_op.create_index('ix_automation_rule_account_owner', ['account_id', 'owner_id'], unique=False)

    op.create_table('automation_trigger',
    sa.Column('trigger_id', sa.String(length=40), nullable=False),
    sa.Column('rule_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('enabled', sa.Boolean(), server_default='1', nullable=False),
    sa.Column('token_hash', sa.String(length=64), server_default='', nullable=False),
    sa.Column('channel_ids', sa.Text(), server_default='[]', nullable=False),
    sa.Column('severities', sa.Text(), server_default='[]', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('trigger_id', name=op.f('pk_automation_trigger')),
    sa.UniqueConstraint('rule_id', 'kind', name=op.f('uq_automation_trigger_rule_id_kind'))
    )
    with op.batch_alter_table('automation_trigger', schema=None) as batch_op:
        batch_op.create_index('ix_automation_trigger_account_kind', ['account_id', 'kind'], unique=False)

    op.create_table('automation_run',
    sa.Column('run_id', sa.String(length=40), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('rule_id', sa.String(length=40), nullable=False),
    sa.Column('trigger_kind', sa.String(length=16), nullable=False),
    sa.Column('trigger_id', sa.String(length=40), server_default='', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='queued', nullable=False),
    sa.Column('context', sa.Text(), server_default='{}', nullable=False),
    sa.Column('due_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('missed_fires', sa.Integer(), server_default='0', nullable=False),
    sa.Column('session_id', sa.String(length=40), server_default='', nullable=False),
    sa.Column('answer', sa.Text(), server_default='', nullable=False),
    sa.Column('error', sa.Text(), server_default='', nullable=False),
    sa.Column('created_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('started_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('finished_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('run_id', name=op.f('pk_automation_run'))
    )
    with op.batch_alter_table('automation_run', schema=None) as batch_op:
        batch_op.create_index('ix_automation_run_rule', ['account_id', 'rule_id', 'created_at'], unique=False)

    op.create_table('automation_run_step',
    sa.Column('id', _AUTO, autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=40), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=255), server_default='', nullable=False),
    sa.Column('content', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_automation_run_step'))
    )
    with op.batch_alter_table('automation_run_step', schema=None) as batch_op:
        batch_op.create_index('ix_automation_run_step_run', ['run_id', 'seq'], unique=False)


def downgrade() -> None:
    for table, indexes in (
        ('automation_run_step', ['ix_automation_run_step_run']),
        ('automation_run', ['ix_automation_run_rule']),
        ('automation_trigger', ['ix_automation_trigger_account_kind']),
        ('automation_rule', ['ix_automation_rule_account_owner', 'ix_automation_rule_account_team']),
        ('work_schedule', ['ix_work_schedule_due']),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name in indexes:
                batch_op.drop_index(name)
        op.drop_table(table)
