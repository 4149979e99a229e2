"""incident recurrence index

Revision ID: 0018
Revises: 0014
Create Date: 2026-11-23 13:10:00.000000

An incident record's `frequency` (`frequent` or `rare`) counts the earlier incidents of its
channel with the same title in the week before it (incident/query/repository.py
`recurrences`). This index answers that count for a whole page in one statement, each count a
short range read that stops at the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0018'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_incident_recurrence", "incident",
                    ["account_id", "channel_id", "title", "start_time"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_incident_recurrence", table_name="incident")
