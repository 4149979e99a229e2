"""insight indexes

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 09:50:00.000000

The aggregates of /insight/* read an account's incidents of a time window through one
covering index (no table lookup per incident), and the escalation / reassignment / timeout
close / reopen flags through partial indexes of the incident event stream that hold only the
events raising a flag (db/tables/incident_insight.py, which these predicates repeat).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INSIGHT_COLUMNS = [
    "account_id", "deleted_at", "start_time", "channel_id", "incident_severity", "progress",
    "ack_time", "close_time", "closer_id", "alert_cnt", "alert_event_cnt", "incident_id",
]


_kind, _payload = sa.column("kind", sa.String), sa.column("payload", sa.Text)
_FLAG_COLUMNS = ["account_id", "created_at", "incident_id", "person_id", "id"]
_FLAGS = {
    "ix_incident_event_escalations": sa.and_(
        _kind == sa.literal_column("'assigned'"),
        _payload.like(sa.literal_column("""'%"type":"escalate"%'"""))),
    "ix_incident_event_reassignments": sa.and_(
        _kind == sa.literal_column("'assigned'"),
        _payload.like(sa.literal_column("""'%"type":"reassign"%'"""))),
    "ix_incident_event_timeout_closes": sa.and_(
        _kind == sa.literal_column("'resolved'"),
        _payload.like(sa.literal_column("""'%"reason":"auto_resolve_timeout"%'"""))),
    "ix_incident_event_reopens": _kind == sa.literal_column("'reopened'"),
}


def upgrade() -> None:
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.create_index("ix_incident_insight", _INSIGHT_COLUMNS, unique=False)
    for name, where in _FLAGS.items():
        op.create_index(name, "incident_event", _FLAG_COLUMNS, unique=False,
                        sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    for name in reversed(_FLAGS):
        op.drop_index(name, table_name="incident_event")
    with op.batch_alter_table("incident", schema=None) as batch_op:
        batch_op.drop_index("ix_incident_insight")
