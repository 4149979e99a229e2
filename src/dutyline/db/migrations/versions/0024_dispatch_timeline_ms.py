"""dispatch timeline in milliseconds

Revision ID: 0024
Revises: 0018
Create Date: 2026-11-23 15:20:00.000000

The escalation engine now keeps an incident's planned timeline (`layer_started_at`,
`last_notified_at`, `next_at` of `dispatch_state`) in epoch milliseconds, so a page is due to
the millisecond instead of the whole second (a whole-second timer sent pages up to 0.9 s
early). Escalations in flight keep their timeline: the stored seconds become milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0024'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = ("layer_started_at", "last_notified_at", "next_at")


def upgrade() -> None:
    for column in _COLUMNS:
        op.execute(f"UPDATE dispatch_state SET {column} = {column} * 1000 WHERE {column} > 0")


def downgrade() -> None:
    for column in _COLUMNS:
        op.execute(f"UPDATE dispatch_state SET {column} = {column} / 1000 WHERE {column} > 0")
