"""escalation rules, dispatch state, notification deliveries and attempts

Revision ID: 0012
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0012'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_auto_big = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade() -> None:
    op.create_table('escalate_rule',
    sa.Column('rule_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), nullable=False),
    sa.Column('rule_name', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), server_default='', nullable=False),
    sa.Column('priority', sa.Integer(), server_default='0', nullable=False),
    sa.Column('aggr_window', sa.Integer(), server_default='0', nullable=False),
    sa.Column('template_id', sa.String(length=24), server_default='', nullable=False),
    sa.Column('layers', sa.Text(), server_default='[]', nullable=False),
    sa.Column('time_filters', sa.Text(), server_default='[]', nullable=False),
    sa.Column('filters', sa.Text(), server_default='[]', nullable=False),
    sa.Column('status', sa.String(length=16), server_default='enabled', nullable=False),
    sa.Column('updated_by', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('rule_id')
    )
    with op.batch_alter_table('escalate_rule', schema=None) as batch_op:
        batch_op.create_index('ix_escalate_rule_channel', ['account_id', 'channel_id', 'priority'], unique=False)

    op.create_table('dispatch_state',
    sa.Column('incident_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('run_id', sa.String(length=24), nullable=False),
    sa.Column('assign_type', sa.String(length=16), server_default='assign', nullable=False),
    sa.Column('rule', sa.Text(), server_default='{}', nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('seq', sa.Integer(), server_default='0', nullable=False),
    sa.Column('layer_idx', sa.Integer(), server_default='0', nullable=False),
    sa.Column('layer_started_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('times', sa.Integer(), server_default='0', nullable=False),
    sa.Column('last_notified_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('next_at', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('incident_id')
    )

    op.create_table('notify_delivery',
    sa.Column('delivery_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('incident_id', sa.String(length=24), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('rule_id', sa.String(length=24), server_default='', nullable=False),
    sa.Column('rule_name', sa.String(length=64), server_default='', nullable=False),
    sa.Column('layer_idx', sa.Integer(), server_default='0', nullable=False),
    sa.Column('fire_type', sa.String(length=8), server_default='fire', nullable=False),
    sa.Column('channel', sa.String(length=32), nullable=False),
    sa.Column('person_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('address', sa.Text(), server_default='', nullable=False),
    sa.Column('content', sa.Text(), server_default='{}', nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('last_error', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('delivery_id')
    )
    with op.batch_alter_table('notify_delivery', schema=None) as batch_op:
        batch_op.create_index('ix_notify_delivery_incident', ['incident_id', 'created_at'], unique=False)

    op.create_table('notify_attempt',
    sa.Column('id', _auto_big, autoincrement=True, nullable=False),
    sa.Column('delivery_id', sa.String(length=24), nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('incident_id', sa.String(length=24), nullable=False),
    sa.Column('channel_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('channel', sa.String(length=32), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('endpoint', sa.Text(), server_default='', nullable=False),
    sa.Column('request_headers', sa.Text(), server_default='', nullable=False),
    sa.Column('request_body', sa.Text(), server_default='', nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_code', sa.Integer(), server_default='0', nullable=False),
    sa.Column('error_message', sa.Text(), server_default='', nullable=False),
    sa.Column('response_headers', sa.Text(), server_default='', nullable=False),
    sa.Column('response_body', sa.Text(), server_default='', nullable=False),
    sa.Column('duration_ms', sa.Integer(), server_default='0', nullable=False),
    sa.Column('event_time_ms', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('notify_attempt', schema=None) as batch_op:
        batch_op.create_index('ix_notify_attempt_account_time', ['account_id', 'event_time_ms'], unique=False)
        batch_op.create_index('ix_notify_attempt_delivery', ['delivery_id', 'attempt'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('notify_attempt', schema=None) as batch_op:
        batch_op.drop_index('ix_notify_attempt_delivery')
        batch_op.drop_index('ix_notify_attempt_account_time')
    op.drop_table('notify_attempt')
    with op.batch_alter_table('notify_delivery', schema=None) as batch_op:
        batch_op.drop_index('ix_notify_delivery_incident')
    op.drop_table('notify_delivery')
    op.drop_table('dispatch_state')
    with op.batch_alter_table('escalate_rule', schema=None) as batch_op:
        batch_op.drop_index('ix_escalate_rule_channel')
    op.drop_table('escalate_rule')
