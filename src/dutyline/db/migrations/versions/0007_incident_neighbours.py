"""incident merge switch and the indexes of the incident and alert neighbours

Revision ID: 0007
Revises: 0005
Create Date: 2026-11-23 09:45:00.000000

- incident.merge_disabled (/incident/disable-merge: grouping stops adding alerts to it);
- ix_incident_channel_start (/incident/past/list: a channel's recent incidents);
- ix_alert_event_account_time (/alert-event/list: events across alerts in a window).

A plain ADD COLUMN (no batch rebuild) on SQLite: rebuilding `incident` would drop the title
search triggers of migration 0005.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column('incident', sa.Column('merge_disabled', sa.Boolean(), server_default='0',
                                        nullable=False))
    op.create_index('ix_incident_channel_start', 'incident', ['channel_id', 'start_time'],
                    unique=False)
    op.create_index('ix_alert_event_account_time', 'alert_event', ['account_id', 'event_time'],
                    unique=False)


def downgrade() -> None:
    op.drop_index('ix_alert_event_account_time', table_name='alert_event')
    op.drop_index('ix_incident_channel_start', table_name='incident')
    # DROP COLUMN: SQLite 3.35+ does it in place, so the 0005 triggers stay.
    op.drop_column('incident', 'merge_disabled')
