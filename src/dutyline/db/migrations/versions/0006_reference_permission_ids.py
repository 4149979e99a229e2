"""reference permission ids

Revision ID: 0006
Revises: 0009
Create Date: 2026-11-23 10:15:00.000000

Data only. The permission catalogue (platform/permissions.py) now uses the reference's ids
where the reference names one, so roles written by existing tools mean the same here:
`template_view` 206 -> 501 ("Templates Read", the reference's PermissionItem example) and
`template_manage` 207 -> 502 (its pair, the id the reference's role example grants beside
501). Stored role grants are renumbered so every existing role keeps its meaning.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op
from sqlalchemy import text

revision: str = "0006"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# old id -> reference id
RENUMBERED = {206: 501, 207: 502}


def _renumber(mapping: dict[int, int]) -> None:
    for old, new in mapping.items():
        # A role cannot already hold `new` (no such id existed before), so no key clashes.
        op.execute(text("UPDATE role_permission SET permission_id = :new "
                        "WHERE permission_id = :old").bindparams(new=new, old=old))


def upgrade() -> None:
    _renumber(RENUMBERED)


def downgrade() -> None:
    _renumber({new: old for old, new in RENUMBERED.items()})
