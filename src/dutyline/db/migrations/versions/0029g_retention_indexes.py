"""an index on the column each retention rule prunes by

Revision ID: 0029g
Revises: 0028v
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0029g'
down_revision: str | None = '0028v'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (index, table, column): the retention job (work/retention.py) finds the oldest rows of
# each table through these, a batch at a time, without scanning the table.
INDEXES = (
    ("ix_channel_notify_sent_created", "channel_notify_sent", "created_at"),
    ("ix_console_session_expires", "console_session", "expires_at"),
    ("ix_console_link_expires", "console_link", "expires_at"),
    ("ix_console_sign_in_failure_last", "console_sign_in_failure", "last_failure_at"),
    ("ix_notify_attempt_time", "notify_attempt", "event_time_ms"),
    ("ix_notify_delivery_created", "notify_delivery", "created_at"),
    ("ix_incident_event_created", "incident_event", "created_at"),
    ("ix_audit_created", "audit_log", "created_at"),
    ("ix_alert_event_created", "alert_event", "created_at"),
)


def upgrade() -> None:
    for name, table, column in INDEXES:
        op.create_index(name, table, [column], unique=False)


def downgrade() -> None:
    for name, table, _ in INDEXES:
        op.drop_index(name, table_name=table)
