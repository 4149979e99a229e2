"""Mapping schemas and mapping APIs are both named by integrations' enrichment rules, in one
reference table (their ids are alike: random 24-hex ids; enrichment/settings.py writes the
rows). Either is refused deletion while a rule names it, with the same answer."""

from __future__ import annotations

from typing import Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.enrichment import repository as repo

_IN_USE = {
    "schema": "Mapping schema {id} is used by the enrichment of integrations {users}",
    "api": "Mapping API {id} is used by the enrichment of integrations {users}",
}


async def refuse_while_referenced(conn: AsyncConnection, *, kind: Literal["schema", "api"],
                                  ref_id: str) -> None:
    """ReferenceExist naming (up to ten of) the integrations whose rules name `ref_id`."""
    users = await repo.referenced_by(conn, ref_id)
    if users:
        raise errors.ReferenceExist(_IN_USE[kind], id=ref_id, users=",".join(map(str, users)))
