"""monit rule audit trail, rule-count samples and the rule repository

Revision ID: 0019
Revises: 0020
Create Date: 2026-11-23 15:05:00.000000

`monit_rule_audit` keeps a snapshot of an alert rule after each change (create, update,
update/fields, move, import, delete) for /monit/rule/audits and /monit/rule/audit/detail;
`monit_rule_counter` the account's rule total after each change for /monit/rule/counter/total;
`monit_ruleset` the rule repository of /monit/store/ruleset/*.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0019'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('monit_rule_audit',
    sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('alert_rule_id', sa.BigInteger(), nullable=False),
    sa.Column('action', sa.String(length=32), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('creator_id', sa.BigInteger(), server_default='0', nullable=False),
    sa.Column('creator_name', sa.String(length=255), server_default='', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monit_rule_audit'))
    )
    with op.batch_alter_table('monit_rule_audit', schema=None) as batch_op:
        batch_op.create_index('ix_monit_rule_audit_rule',
                              ['account_id', 'alert_rule_id', 'created_at'], unique=False)
    op.create_table('monit_rule_counter',
    sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('account_id', sa.BigInteger(), nullable=False),
    sa.Column('num', sa.BigInteger(), nullable=False),
    sa.Column('clock', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monit_rule_counter'))
    )
    with op.batch_alter_table('monit_rule_counter', schema=None) as batch_op:
        batch_op.create_index('ix_monit_rule_counter_account', ['account_id', 'clock'],
                              unique=False)
    op.create_table('monit_ruleset',
    sa.Column('id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('type_ident', sa.String(length=32), nullable=False),
    sa.Column('note', sa.String(length=1024), nullable=False),
    sa.Column('open_flag', sa.Integer(), server_default='0', nullable=False),
    sa.Column('payload', sa.Text(), nullable=False),
    sa.Column('creator_account_id', sa.BigInteger(), nullable=False),
    sa.Column('creator_id', sa.BigInteger(), nullable=False),
    sa.Column('creator_name', sa.String(length=255), server_default='', nullable=False),
    sa.Column('created_at', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_monit_ruleset'))
    )
    with op.batch_alter_table('monit_ruleset', schema=None) as batch_op:
        batch_op.create_index('ix_monit_ruleset_type', ['type_ident', 'open_flag'], unique=False)
        batch_op.create_index('ix_monit_ruleset_account', ['creator_account_id', 'type_ident'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('monit_ruleset', schema=None) as batch_op:
        batch_op.drop_index('ix_monit_ruleset_account')
        batch_op.drop_index('ix_monit_ruleset_type')
    op.drop_table('monit_ruleset')
    with op.batch_alter_table('monit_rule_counter', schema=None) as batch_op:
        batch_op.drop_index('ix_monit_rule_counter_account')
    op.drop_table('monit_rule_counter')
    with op.batch_alter_table('monit_rule_audit', schema=None) as batch_op:
        batch_op.drop_index('ix_monit_rule_audit_rule')
    op.drop_table('monit_rule_audit')
