"""Custom field values for /incident/field/reset (decisions.md §3): the definitions and their
rules belong to the custom-field service; this adapter is the one place the lifecycle asks."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.incident.field.service import validate_value


async def checked_value(conn: AsyncConnection, account_id: int, field_name: str,
                        value: Any) -> tuple[str, Any]:
    """(field name, value to store); None clears the field's value. Raises InvalidParameter
    naming field_name (not defined on the account) or field_value (does not fit)."""
    definition, normalized = await validate_value(conn, account_id, field_name, value)
    return definition.field_name, normalized
