"""Every custom field query, scoped by account_id."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, func, insert, not_, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.incident import custom_field, incident

_BY_NAME = select(custom_field).where(
    custom_field.c.account_id == bindparam("account_id"),
    custom_field.c.field_name == bindparam("field_name"),
)
# Setting a value holds a share lock on the definition until its transaction ends, and a
# delete takes the row lock before it looks for values in use: on PostgreSQL the two
# serialize, so a delete never misses a value being set concurrently (SQLite writers
# are serialized anyway, and it ignores FOR UPDATE).
_BY_NAME_SHARED = _BY_NAME.with_for_update(read=True)


async def get_by_name(conn: AsyncConnection, account_id: int, name: str, *,
                      shared_lock: bool = False) -> Row[Any] | None:
    params = {"account_id": account_id, "field_name": name}
    return (await conn.execute(_BY_NAME_SHARED if shared_lock else _BY_NAME, params)).first()


async def get_by_id(conn: AsyncConnection, account_id: int, field_id: str) -> Row[Any] | None:
    stmt = select(custom_field).where(custom_field.c.account_id == account_id,
                                      custom_field.c.field_id == field_id)
    return (await conn.execute(stmt)).first()


async def lock(conn: AsyncConnection, account_id: int, field_id: str) -> bool:
    """Take the definition's row lock; False when it is gone meanwhile."""
    stmt = select(custom_field.c.field_id).where(
        custom_field.c.account_id == account_id, custom_field.c.field_id == field_id,
    ).with_for_update()
    return (await conn.execute(stmt)).first() is not None


async def name_taken(conn: AsyncConnection, account_id: int, name: str) -> bool:
    """Names differing only in case would be two fields nobody can tell apart."""
    stmt = select(custom_field.c.field_id).where(
        custom_field.c.account_id == account_id,
        func.lower(custom_field.c.field_name) == name.lower(),
    ).limit(1)
    return (await conn.execute(stmt)).first() is not None


async def count(conn: AsyncConnection, account_id: int) -> int:
    stmt = select(func.count()).select_from(custom_field).where(
        custom_field.c.account_id == account_id)
    return int((await conn.execute(stmt)).scalar_one())


def list_all_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    stmt = (select(custom_field).where(custom_field.c.account_id == account_id)
            .order_by(func.lower(custom_field.c.field_name), custom_field.c.field_name))
    return list(conn.execute(stmt).all())


async def list_all(conn: AsyncConnection, account_id: int) -> list[Row[Any]]:
    return await conn.run_sync(list_all_sync, account_id)


def _literal_like(text: str) -> str:
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_")


async def in_use(conn: AsyncConnection, account_id: int, name: str) -> bool:
    """Whether any live incident holds a value for the field. `incident.fields` is a JSON
    object as text, so the key appears as `"name":` (followed by a space with json.dumps);
    no value produces that sequence, because quotes inside strings are escaped.
    A key whose value is null counts as unset."""
    key = '"' + _literal_like(name) + '"'

    def has(suffix: str) -> Any:
        return incident.c.fields.like(f"%{key}{suffix}%", escape="/")

    stmt = select(incident.c.incident_id).where(
        incident.c.account_id == account_id,
        incident.c.deleted_at == 0,
        has(":"),
        not_(or_(has(":null"), has(": null"))),
    ).limit(1)
    return (await conn.execute(stmt)).first() is not None


async def insert_field(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(custom_field).values(**values))


async def update_field(conn: AsyncConnection, account_id: int, field_id: str,
                       values: dict[str, Any]) -> None:
    await conn.execute(update(custom_field).where(
        and_(custom_field.c.account_id == account_id, custom_field.c.field_id == field_id)
    ).values(**values))


async def delete_field(conn: AsyncConnection, account_id: int, field_id: str) -> None:
    await conn.execute(delete(custom_field).where(
        custom_field.c.account_id == account_id, custom_field.c.field_id == field_id))
