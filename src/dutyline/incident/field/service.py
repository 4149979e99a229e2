"""Rules of custom fields: names `^[a-zA-Z_][a-zA-Z0-9_]{0,39}$`, unique
per account (any case); types text, single_select, multi_select, checkbox; selects carry a
non-empty list of distinct options; a default fits its own definition; a field some
incident holds a value for cannot be deleted (ReferenceExist)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.incident.field import repository as repo
from dutyline.incident.field.schemas import (
    CreateFieldResponse,
    FieldItem,
    ListFieldsResponse,
)
from dutyline.kit.ids import hex_id

NAME_RULE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,39}")
SELECTS = ("single_select", "multi_select")
MAX_FIELDS_PER_ACCOUNT = 100
MAX_TEXT_LENGTH = 4096
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})


@dataclass(frozen=True, slots=True)
class FieldDefinition:
    field_id: str
    field_name: str
    display_name: str
    field_type: str  # text | single_select | multi_select | checkbox
    options: tuple[str, ...]
    default_value: Any


def _definition(row: Any) -> FieldDefinition:
    return FieldDefinition(
        field_id=row.field_id, field_name=row.field_name, display_name=row.display_name,
        field_type=row.field_type, options=tuple(msgspec.json.decode(row.options)),
        default_value=msgspec.json.decode(row.default_value),
    )


async def validate_value(conn: AsyncConnection, actor: Actor, *, field_name: str,
                         value: Any) -> tuple[FieldDefinition, Any]:
    """The account's definition of `field_name` and `value` normalized to its type: text and
    single_select a string, multi_select a list of distinct options, checkbox a bool; None
    (JSON null) clears the value. Since the contract carries `field_value` as a string, a
    string works for every type: `"true"`/`"false"` for a checkbox; for a multi_select one
    option, options separated by commas, or a JSON array. InvalidParameter names
    `field_name` for an unknown field and `field_value` for a value that does not fit."""
    row = (await repo.get_by_name(conn, actor.account_id, field_name, shared_lock=True)
           if field_name else None)
    if row is None:
        raise errors.invalid("field_name", "is not a custom field of this account")
    definition = _definition(row)
    return definition, normalize(definition.field_type, definition.options, value,
                                 "field_value")


def normalize(field_type: str, options: tuple[str, ...], value: Any, field: str) -> Any:
    if value is None:
        return None
    if field_type == "text":
        if not isinstance(value, str):
            raise errors.invalid(field, "must be a string")
        if len(value) > MAX_TEXT_LENGTH:
            raise errors.invalid(field, "must be at most 4096 characters")
        return value
    if field_type == "single_select":
        if not isinstance(value, str) or value not in options:
            raise errors.invalid(field, "must be one of the field's options")
        return value
    if field_type == "multi_select":
        chosen = _as_list(value, options, field)
        if not all(isinstance(v, str) and v in options for v in chosen):
            raise errors.invalid(field, "must be one of the field's options")
        return list(dict.fromkeys(chosen))
    # checkbox
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise errors.invalid(field, "must be true or false")


def _as_list(value: Any, options: tuple[str, ...], field: str) -> list[Any]:
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise errors.invalid(field, "must be a list of the field's options")
    text = value.strip()
    if text.startswith("["):
        try:
            decoded = msgspec.json.decode(text)
        except msgspec.DecodeError:
            raise errors.invalid(field, "must be a list of the field's options") from None
        if isinstance(decoded, list):
            return decoded
    if value in options or not text:
        return [value] if text else []
    return [part.strip() for part in value.split(",")]


@writes("/field/create", ACCOUNT_MANAGE, targets=lambda created: [created.field_id])
async def create_field(
    conn: AsyncConnection, actor: Actor, *, field_name: str, field_type: str,
    display_name: str = "", description: str = "", options: Sequence[str] = (),
    default_value: Any = None,
) -> CreateFieldResponse:
    account_id = actor.account_id
    name = field_name
    if not NAME_RULE.fullmatch(name):
        raise errors.invalid("field_name", "must match ^[a-zA-Z_][a-zA-Z0-9_]{0,39}$")
    checked = _checked_options(field_type, list(options))
    default = normalize(field_type, checked, default_value, "default_value")
    if await repo.name_taken(conn, account_id, name):
        raise errors.invalid("field_name", "already exists")
    if await repo.count(conn, account_id) >= MAX_FIELDS_PER_ACCOUNT:
        raise errors.invalid("field_name", "the account already has 100 custom fields")
    field_id = hex_id()
    now = actor.now_s
    try:
        await repo.insert_field(conn, {
            "field_id": field_id, "account_id": account_id, "field_name": name,
            "display_name": display_name.strip() or name,
            "description": description, "field_type": field_type,
            "options": msgspec.json.encode(list(checked)).decode(),
            "default_value": msgspec.json.encode(default).decode(), "status": "enabled",
            "creator_id": actor.person_id, "created_at": now, "updated_at": now,
        })
    except IntegrityError:
        raise errors.invalid("field_name", "already exists") from None
    return CreateFieldResponse(field_id=field_id, field_name=name)


def field_info_sync(conn: Connection, actor: Actor, *, field_id: str | None = None,
                    field_name: str | None = None) -> FieldItem:
    """One field of the account, by id or else by name."""
    return _item(_require_sync(conn, actor, field_id=field_id, field_name=field_name))


def list_fields_sync(conn: Connection, actor: Actor) -> ListFieldsResponse:
    """The account's fields by name."""
    rows = repo.list_all_sync(conn, actor.account_id)
    return ListFieldsResponse(total=len(rows), items=[_item(r) for r in rows])


@writes("/field/update", ACCOUNT_MANAGE)
async def update_field(
    conn: AsyncConnection, actor: Actor, *, field_id: str, display_name: str | None = None,
    description: str | None = None, options: Sequence[str] | None = None,
    default_value: Any = msgspec.UNSET,
) -> str:
    """Change what is given (None, or UNSET for the default: unchanged); returns the id."""
    row = await _require(conn, actor, field_id=field_id)
    current = _definition(row)
    values: dict[str, Any] = {"updated_at": actor.now_s}
    kept = current.options
    if options is not None:
        kept = _checked_options(current.field_type, list(options))
        values["options"] = msgspec.json.encode(list(kept)).decode()
    if default_value is not msgspec.UNSET:
        default = normalize(current.field_type, kept, default_value, "default_value")
    else:
        # New options must still admit the kept default.
        default = normalize(current.field_type, kept, current.default_value, "options")
    values["default_value"] = msgspec.json.encode(default).decode()
    if display_name is not None:
        values["display_name"] = display_name.strip() or current.field_name
    if description is not None:
        values["description"] = description
    await repo.update_field(conn, actor.account_id, row.field_id, values)
    return str(row.field_id)


@writes("/field/delete", ACCOUNT_MANAGE, dangerous=True)
async def delete_field(conn: AsyncConnection, actor: Actor, *, field_id: str | None = None,
                       field_name: str | None = None) -> str:
    """Delete a field no incident holds a value for; returns its id."""
    row = await _require(conn, actor, field_id=field_id, field_name=field_name)
    if not await repo.lock(conn, actor.account_id, row.field_id):
        raise errors.not_found("field", row.field_id)
    if await repo.in_use(conn, actor.account_id, row.field_name):
        raise errors.ReferenceExist(
            "Field {field_name} is set on incidents and cannot be deleted",
            field_name=row.field_name,
        )
    await repo.delete_field(conn, actor.account_id, row.field_id)
    return str(row.field_id)


def _checked_options(field_type: str, raw: list[str]) -> tuple[str, ...]:
    if field_type not in SELECTS:
        if raw:
            raise errors.invalid("options", "are only for single_select and multi_select")
        return ()
    options = [o.strip() for o in raw]
    if not options:
        raise errors.invalid("options", "is required for single_select and multi_select")
    if not all(options):
        raise errors.invalid("options", "must not be blank")
    if len(set(options)) != len(options):
        raise errors.invalid("options", "must be distinct")
    return tuple(options)


def _require_sync(conn: Connection, actor: Actor, *, field_id: str | None = None,
                  field_name: str | None = None) -> Any:
    account_id = actor.account_id
    if field_id:
        row = repo.get_by_id_sync(conn, account_id, field_id)
        ident = field_id
    elif field_name:
        row = repo.get_by_name_sync(conn, account_id, field_name)
        ident = field_name
    else:
        raise errors.invalid("field_id", "is required")
    if row is None:
        raise errors.not_found("field", ident)
    return row


async def _require(conn: AsyncConnection, actor: Actor, *, field_id: str | None = None,
                   field_name: str | None = None) -> Any:
    return await conn.run_sync(lambda sync: _require_sync(
        sync, actor, field_id=field_id, field_name=field_name))


def _item(row: Any) -> FieldItem:
    d = _definition(row)
    return FieldItem(
        field_id=d.field_id, field_name=d.field_name, display_name=d.display_name,
        description=row.description, field_type=d.field_type, options=list(d.options),
        default_value=d.default_value, status=row.status, creator_id=row.creator_id,
        created_at=row.created_at, updated_at=row.updated_at,
    )
