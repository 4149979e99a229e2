"""Custom field values for /incident/field/reset: the field must be defined on the account and
the value must fit its definition (decisions.md §3).

The contract types `field_value` as a string, so besides the natural JSON value a string is
accepted for every type: the option itself for selects, "true"/"false" for a checkbox."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.incident.lifecycle import repository as repo

MAX_TEXT = 1024


async def checked_value(conn: AsyncConnection, account_id: int, field_name: str,
                        value: Any) -> tuple[str, Any]:
    """(field name, value to store); None clears the field's value."""
    definition = await repo.field_definition(conn, account_id, field_name)
    if definition is None:
        raise errors.InvalidParameter("Invalid parameter {field}: {reason}: {ids}",
                                      field="field_name", reason="no such custom field",
                                      ids=field_name)
    if value is None:
        return definition.field_name, None
    options: list[str] = msgspec.json.decode(definition.options)
    return definition.field_name, _fit(definition.field_type, options, value)


def _fit(field_type: str, options: list[str], value: Any) -> Any:
    if field_type == "text":
        if not isinstance(value, str):
            raise errors.invalid("field_value", "must be a string")
        if len(value) > MAX_TEXT:
            raise errors.invalid("field_value", "must be at most 1024 characters")
        return value
    if field_type == "checkbox":
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        raise errors.invalid("field_value", "must be true or false")
    if field_type == "single_select":
        if not isinstance(value, str) or value not in options:
            raise errors.invalid("field_value", "must be one of the field's options")
        return value
    if field_type == "multi_select":
        chosen = [value] if isinstance(value, str) else value
        if not isinstance(chosen, list) or not all(
                isinstance(v, str) and v in options for v in chosen):
            raise errors.invalid("field_value", "must be a list of the field's options")
        return list(dict.fromkeys(chosen))
    raise errors.invalid("field_name", "has a type this server does not know")
