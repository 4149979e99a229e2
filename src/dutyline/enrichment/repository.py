"""Every query of mapping schemas, mapping rows and enrichment settings. Schemas are scoped by
account (another account's schema id is simply not found); rows and settings are reached only
through a schema or integration the service has already checked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import per_integration
from dutyline.db.paging import ordered
from dutyline.db.tables.enrichment import (
    enrichment_schema_ref,
    enrichment_setting,
    mapping_row,
    mapping_schema,
)
from dutyline.db.upsert import insert_for

MAX_SCHEMAS = 1000

# -- schemas ----------------------------------------------------------------------------------


_GET_SCHEMA = select(mapping_schema).where(
    mapping_schema.c.account_id == bindparam("account_id"),
    mapping_schema.c.schema_id == bindparam("schema_id"))
_GET_SCHEMA_FOR_UPDATE = _GET_SCHEMA.with_for_update()
_LIST_SCHEMAS = (select(mapping_schema)
                 .where(mapping_schema.c.account_id == bindparam("account_id"))
                 .order_by(mapping_schema.c.created_at, mapping_schema.c.schema_id))


def get_schema_sync(conn: Connection, account_id: int, schema_id: str,
                    *, for_update: bool = False) -> Row[Any] | None:
    stmt = _GET_SCHEMA_FOR_UPDATE if for_update and conn.dialect.name == "postgresql" \
        else _GET_SCHEMA
    return conn.execute(stmt, {"account_id": account_id,
                               "schema_id": schema_id.lower()}).first()


async def schema_name_taken(conn: AsyncConnection, account_id: int, name: str,
                            but: str = "") -> bool:
    stmt = select(mapping_schema.c.schema_id).where(
        mapping_schema.c.account_id == account_id, mapping_schema.c.schema_name == name,
        mapping_schema.c.schema_id != but)
    return (await conn.execute(stmt)).first() is not None


async def count_schemas(conn: AsyncConnection, account_id: int) -> int:
    stmt = select(func.count()).select_from(mapping_schema).where(
        mapping_schema.c.account_id == account_id)
    return int((await conn.execute(stmt)).scalar_one())


def list_schemas_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    return list(conn.execute(_LIST_SCHEMAS, {"account_id": account_id}).all())


async def insert_schema(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(mapping_schema).values(**values))


async def update_schema(conn: AsyncConnection, account_id: int, schema_id: str,
                        values: dict[str, Any]) -> None:
    await conn.execute(update(mapping_schema)
                       .where(mapping_schema.c.account_id == account_id,
                              mapping_schema.c.schema_id == schema_id)
                       .values(**values))


async def delete_schema(conn: AsyncConnection, account_id: int, schema_id: str) -> None:
    await conn.execute(delete(mapping_row).where(mapping_row.c.schema_id == schema_id))
    await conn.execute(delete(mapping_schema).where(mapping_schema.c.account_id == account_id,
                                                    mapping_schema.c.schema_id == schema_id))


async def referenced_by(conn: AsyncConnection, ref_id: str) -> list[int]:
    """The first ten integrations whose enrichment rules name a schema or API id."""
    stmt = (select(enrichment_schema_ref.c.integration_id)
            .where(enrichment_schema_ref.c.schema_id == ref_id)
            .order_by(enrichment_schema_ref.c.integration_id).limit(10))
    return [r[0] for r in (await conn.execute(stmt)).all()]


async def touch_data(conn: AsyncConnection, schema_id: str, person_id: int,
                     now_s: int) -> None:
    """A write to the rows: bump the version ingestion caches by."""
    await conn.execute(update(mapping_schema).where(mapping_schema.c.schema_id == schema_id)
                       .values(data_version=mapping_schema.c.data_version + 1,
                               updated_by=person_id, updated_at=now_s))


# -- rows ---------------------------------------------------------------------------------------


def _upsert(conn: AsyncConnection) -> Any:
    stmt = insert_for(conn)(mapping_row)
    return stmt.on_conflict_do_update(
        index_elements=[mapping_row.c.schema_id, mapping_row.c.row_key],
        set_={"vals": stmt.excluded.vals, "csv_line": stmt.excluded.csv_line,
              "updated_at": stmt.excluded.updated_at})


async def upsert_rows(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Rows of {schema_id, row_key, vals, csv_line, created_at, updated_at}; an existing key
    keeps its created_at. Keys must be distinct within one call."""
    if rows:
        await conn.execute(_upsert(conn), list(rows))


async def delete_rows(conn: AsyncConnection, schema_id: str, keys: Sequence[str]) -> int:
    result = await conn.execute(delete(mapping_row).where(
        mapping_row.c.schema_id == schema_id, mapping_row.c.row_key.in_(list(keys))))
    return result.rowcount or 0


async def truncate_rows(conn: AsyncConnection, schema_id: str) -> None:
    await conn.execute(delete(mapping_row).where(mapping_row.c.schema_id == schema_id))


def count_rows_sync(conn: Connection, schema_id: str, key: str | None = None) -> int:
    stmt = select(func.count()).select_from(mapping_row).where(
        mapping_row.c.schema_id == schema_id)
    if key is not None:
        stmt = stmt.where(mapping_row.c.row_key == key)
    return int(conn.execute(stmt).scalar_one())


async def count_rows(conn: AsyncConnection, schema_id: str, key: str | None = None) -> int:
    return await conn.run_sync(count_rows_sync, schema_id, key)


def page_rows_sync(conn: Connection, schema_id: str, *, key: str | None, orderby: str,
                   asc: bool, offset: int, limit: int,
                   after: tuple[int, str] | None = None) -> list[Row[Any]]:
    """One page in (orderby, row_key) order: by offset, or after the (value, key) of the last
    row seen (keyset: a range read from there, whatever the page number)."""
    column = mapping_row.c[orderby]
    stmt = select(mapping_row).where(mapping_row.c.schema_id == schema_id)
    if key is not None:
        stmt = stmt.where(mapping_row.c.row_key == key)
    if after is not None:
        position = tuple_(column, mapping_row.c.row_key)
        bound = tuple_(literal(after[0]), literal(after[1]))
        stmt = stmt.where(position > bound if asc else position < bound)
    stmt = stmt.order_by(*ordered(column, mapping_row.c.row_key, asc=asc))
    return list(conn.execute(stmt.offset(offset).limit(limit)).all())


_LINES_AFTER = text(
    "SELECT row_key, csv_line FROM mapping_row WHERE schema_id = :schema_id"
    " AND row_key > :after ORDER BY row_key LIMIT :limit")


def lines_after_sync(conn: Connection, schema_id: str, after: str,
                     limit: int) -> list[Any]:
    """One batch of the download: (row_key, csv_line) in key order after `after` (keyset
    pagination: every batch is one range scan of the primary key, wherever it starts). Sync
    and textual: at a million rows, the async driver's per-row hops and Core's row
    processing were most of the download's time."""
    return list(conn.execute(_LINES_AFTER, {"schema_id": schema_id, "after": after,
                                            "limit": limit}).all())


# -- enrichment settings ------------------------------------------------------------------------


_setting_reads = per_integration.Reads(enrichment_setting)
get_setting_sync = _setting_reads.get


async def get_setting(conn: AsyncConnection, account_id: int,
                      integration_id: int) -> Row[Any] | None:
    return await conn.run_sync(get_setting_sync, account_id, integration_id)


list_settings_sync = _setting_reads.list_for


async def save_setting(conn: AsyncConnection, *, exists: bool, integration_id: int,
                       values: dict[str, Any], schema_ids: Sequence[str]) -> None:
    await per_integration.save(conn, enrichment_setting, exists=exists,
                               integration_id=integration_id, values=values)
    await conn.execute(delete(enrichment_schema_ref)
                       .where(enrichment_schema_ref.c.integration_id == integration_id))
    if schema_ids:
        await conn.execute(insert(enrichment_schema_ref), [
            {"integration_id": integration_id, "schema_id": s} for s in schema_ids])


async def schemas_by_id(conn: AsyncConnection, account_id: int,
                        schema_ids: Sequence[str]) -> dict[str, Row[Any]]:
    stmt = select(mapping_schema).where(mapping_schema.c.account_id == account_id,
                                        mapping_schema.c.schema_id.in_(list(schema_ids)))
    return {r.schema_id: r for r in (await conn.execute(stmt)).all()}


# -- hot path (sync: ingestion runs on the database thread, see Database.run_sync) -------------

# What ingestion needs to know about an integration before it touches any rule, in one
# statement per push: the versions of its enabled pipeline, enrichment setting and route (NULL
# when it has none), and the "data epoch" of the schemas its setting reads: the sum of their
# data_versions, which moves on every write to their rows (a referenced schema cannot be
# deleted, so the sum only grows).
_INGEST_STATE = text(
    "SELECT"
    " (SELECT version FROM alert_pipeline"
    "   WHERE integration_id = :integration_id AND status = 'enabled'),"
    " (SELECT version FROM enrichment_setting"
    "   WHERE integration_id = :integration_id AND status = 'enabled'),"
    " (SELECT COALESCE(SUM(m.data_version), 0) FROM enrichment_schema_ref r"
    "   JOIN mapping_schema m ON m.schema_id = r.schema_id"
    "   WHERE r.integration_id = :integration_id),"
    " (SELECT version FROM integration_route"
    "   WHERE integration_id = :integration_id AND status = 'enabled')")
_SETTING = select(enrichment_setting.c.version, enrichment_setting.c.status,
                  enrichment_setting.c.rules).where(
    enrichment_setting.c.integration_id == bindparam("integration_id"))
_SCHEMA_LABELS = select(mapping_schema.c.schema_id, mapping_schema.c.source_labels,
                        mapping_schema.c.result_labels)


def ingest_state_sync(conn: Connection, integration_id: int) -> Any:
    """(pipeline version, setting version, data epoch, route version); versions None when
    the integration has no such enabled configuration."""
    return conn.execute(_INGEST_STATE, {"integration_id": integration_id}).one()


def setting_sync(conn: Connection, integration_id: int) -> Any:
    return conn.execute(_SETTING, {"integration_id": integration_id}).first()


def schema_labels_sync(conn: Connection, schema_ids: Sequence[str]) -> list[Any]:
    stmt = _SCHEMA_LABELS.where(mapping_schema.c.schema_id.in_(list(schema_ids)))
    return list(conn.execute(stmt).all())


_LOOKUPS: dict[int, Any] = {}


def _lookup_statement(n: int) -> Any:
    """One statement per number of pairs, built once: building and cache-keying a Core
    select with n OR-ed terms on every push cost more than running it."""
    stmt = _LOOKUPS.get(n)
    if stmt is None:
        where = " OR ".join(f"(schema_id = :s{i} AND row_key = :k{i})" for i in range(n))
        stmt = text(f"SELECT schema_id, row_key, vals FROM mapping_row WHERE {where}")
        _LOOKUPS[n] = stmt
    return stmt


def lookup_sync(conn: Connection, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str],
                                                                             str]:
    """The rows of several (schema_id, row_key) pairs in one statement: each pair one probe
    of the primary key (both SQLite and PostgreSQL plan an OR of primary-key equalities as
    one index lookup per term)."""
    params: dict[str, str] = {}
    for i, (schema_id, key) in enumerate(wanted):
        params[f"s{i}"] = schema_id
        params[f"k{i}"] = key
    rows = conn.execute(_lookup_statement(len(wanted)), params).all()
    return {(r[0], r[1]): r[2] for r in rows}
