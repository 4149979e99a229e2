"""Every query of mapping APIs, scoped by account; the sync reads ingestion makes when it
compiles an integration's rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.enrichment import enrichment_schema_ref, enrichment_setting, mapping_api

_GET = select(mapping_api).where(mapping_api.c.account_id == bindparam("account_id"),
                                 mapping_api.c.api_id == bindparam("api_id"))
_LIST_ALL = (select(mapping_api).where(mapping_api.c.account_id == bindparam("account_id"))
             .order_by(mapping_api.c.created_at, mapping_api.c.api_id))


def get_sync(conn: Connection, account_id: int, api_id: str) -> Row[Any] | None:
    return conn.execute(_GET, {"account_id": account_id, "api_id": api_id.lower()}).first()


async def get(conn: AsyncConnection, account_id: int, api_id: str) -> Row[Any] | None:
    return await conn.run_sync(get_sync, account_id, api_id)


def list_all_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    return list(conn.execute(_LIST_ALL, {"account_id": account_id}).all())


async def count(conn: AsyncConnection, account_id: int) -> int:
    stmt = select(func.count()).select_from(mapping_api).where(
        mapping_api.c.account_id == account_id)
    return int((await conn.execute(stmt)).scalar_one())


async def name_taken(conn: AsyncConnection, account_id: int, name: str,
                     but: str = "") -> bool:
    stmt = select(mapping_api.c.api_id).where(mapping_api.c.account_id == account_id,
                                              mapping_api.c.api_name == name,
                                              mapping_api.c.api_id != but)
    return (await conn.execute(stmt)).first() is not None


async def insert_api(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(mapping_api).values(**values))


async def update_api(conn: AsyncConnection, account_id: int, api_id: str,
                     values: dict[str, Any]) -> None:
    await conn.execute(update(mapping_api).where(mapping_api.c.account_id == account_id,
                                                 mapping_api.c.api_id == api_id)
                       .values(**values))
    # The rules that call it are compiled with its address and options: bump their
    # settings' version so every process recompiles them on its next push.
    users = select(enrichment_schema_ref.c.integration_id).where(
        enrichment_schema_ref.c.schema_id == api_id)
    await conn.execute(update(enrichment_setting)
                       .where(enrichment_setting.c.integration_id.in_(users))
                       .values(version=enrichment_setting.c.version + 1))


async def delete_api(conn: AsyncConnection, account_id: int, api_id: str) -> None:
    await conn.execute(delete(mapping_api).where(mapping_api.c.account_id == account_id,
                                                 mapping_api.c.api_id == api_id))


async def existing_ids(conn: AsyncConnection, account_id: int,
                       api_ids: Sequence[str]) -> set[str]:
    stmt = select(mapping_api.c.api_id).where(mapping_api.c.account_id == account_id,
                                              mapping_api.c.api_id.in_(list(api_ids)))
    return {r[0] for r in (await conn.execute(stmt)).all()}


# -- hot path (sync: ingestion compiles an integration's rules on the database thread) ------


def targets_sync(conn: Connection, api_ids: Sequence[str]) -> list[Any]:
    stmt = select(mapping_api.c.api_id, mapping_api.c.url, mapping_api.c.headers_sealed,
                  mapping_api.c.timeout, mapping_api.c.retry_count,
                  mapping_api.c.updated_at).where(mapping_api.c.api_id.in_(list(api_ids)),
                                                  mapping_api.c.status == "enabled")
    return list(conn.execute(stmt).all())
