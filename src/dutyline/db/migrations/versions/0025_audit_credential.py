"""audit log says how the actor proved who it is

Revision ID: 0025
Revises: 0019
Create Date: 2026-11-27 11:00:00.000000

Writes now reach the audit log from the console, signed links and jobs as well as app keys:
`credential` is one of `app_key`, `session`, `signed_link`, `system`. Rows written before
came from app keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0025'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("credential", sa.String(16), nullable=False,
                                   server_default="app_key"))


def downgrade() -> None:
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("credential")
