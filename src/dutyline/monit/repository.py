"""Every monit query. Everything is scoped by account_id, so another account's ids behave as
not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import case, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.monit import monit_datasource as ds
from dutyline.db.tables.monit import monit_rule as rule
from dutyline.db.tables.monit import monit_series as series

# --- data sources ----------------------------------------------------------------------


async def insert_datasource(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(ds).values(**values))


async def get_datasource(conn: AsyncConnection, account_id: int,
                         ds_id: int) -> Row[Any] | None:
    stmt = select(ds).where(ds.c.account_id == account_id, ds.c.id == ds_id)
    return (await conn.execute(stmt)).first()


async def datasource_name_taken(conn: AsyncConnection, account_id: int, name: str,
                                except_id: int) -> bool:
    stmt = select(ds.c.id).where(ds.c.account_id == account_id, ds.c.name == name,
                                 ds.c.id != except_id).limit(1)
    return (await conn.execute(stmt)).first() is not None


async def list_datasources(conn: AsyncConnection, account_id: int,
                           type_ident: str) -> list[Row[Any]]:
    stmt = select(ds).where(ds.c.account_id == account_id)
    if type_ident:
        stmt = stmt.where(ds.c.type_ident == type_ident)
    return list(await conn.execute(stmt.order_by(ds.c.name, ds.c.id)))


async def update_datasource(conn: AsyncConnection, account_id: int, ds_id: int,
                            values: dict[str, Any]) -> None:
    await conn.execute(update(ds).where(ds.c.account_id == account_id, ds.c.id == ds_id)
                       .values(**values))


async def delete_datasource(conn: AsyncConnection, account_id: int, ds_id: int) -> None:
    await conn.execute(delete(ds).where(ds.c.account_id == account_id, ds.c.id == ds_id))


# --- rules -----------------------------------------------------------------------------


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(rule).values(**values))


async def get_rule(conn: AsyncConnection, account_id: int, rule_id: int, *,
                   lock: bool = False) -> Row[Any] | None:
    stmt = select(rule).where(rule.c.account_id == account_id, rule.c.id == rule_id)
    if lock and conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).first()


async def get_rule_any_account(conn: AsyncConnection, rule_id: int, *,
                               lock: bool = False) -> Row[Any] | None:
    """For evaluation (a job names its rule, of whatever account). `lock` takes the row on
    PostgreSQL so a delete waits for (or wins before) the evaluation's writes."""
    stmt = select(rule).where(rule.c.id == rule_id)
    if lock and conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).first()


async def rules_any_account(conn: AsyncConnection, rule_ids: list[int]) -> list[Row[Any]]:
    """For an evaluation batch (a job names its rules, of whatever account)."""
    return list(await conn.execute(select(rule).where(rule.c.id.in_(rule_ids))))


async def rules_by_ids(conn: AsyncConnection, account_id: int,
                       rule_ids: list[int]) -> list[Row[Any]]:
    stmt = select(rule).where(rule.c.account_id == account_id, rule.c.id.in_(rule_ids))
    return list(await conn.execute(stmt.order_by(rule.c.id)))


async def enabled_rule_ids(conn: AsyncConnection, rule_ids: list[str]) -> set[str]:
    ids = [int(r) for r in rule_ids if r.isdigit()]
    stmt = select(rule.c.id).where(rule.c.id.in_(ids), rule.c.enabled.is_(True))
    return {str(r.id) for r in await conn.execute(stmt)}


async def list_rules(conn: AsyncConnection, account_id: int,
                     folder_id: int) -> list[Row[Any]]:
    stmt = select(rule).where(rule.c.account_id == account_id)
    if folder_id:
        stmt = stmt.where(rule.c.folder_id == folder_id)
    return list(await conn.execute(stmt.order_by(rule.c.id)))


async def rule_name_taken(conn: AsyncConnection, account_id: int, folder_id: int, name: str,
                          except_id: int) -> bool:
    stmt = select(rule.c.id).where(rule.c.account_id == account_id,
                                   rule.c.folder_id == folder_id, rule.c.name == name,
                                   rule.c.id != except_id).limit(1)
    return (await conn.execute(stmt)).first() is not None


async def update_rule(conn: AsyncConnection, account_id: int, rule_id: int,
                      values: dict[str, Any]) -> None:
    await conn.execute(update(rule).where(rule.c.account_id == account_id, rule.c.id == rule_id)
                       .values(**values))


async def set_eval_status(conn: AsyncConnection, rule_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(rule).where(rule.c.id == rule_id).values(**values))


async def delete_rule(conn: AsyncConnection, account_id: int, rule_id: int) -> None:
    await conn.execute(delete(rule).where(rule.c.account_id == account_id, rule.c.id == rule_id))
    await conn.execute(delete(series).where(series.c.rule_id == rule_id))


async def folder_status(conn: AsyncConnection, account_id: int,
                        folder_id: int) -> list[Row[Any]]:
    triggered = func.sum(case((rule.c.firing_count > 0, 1), else_=0))
    stmt = (select(rule.c.folder_id, func.count().label("total"),
                   func.coalesce(triggered, 0).label("triggered"))
            .where(rule.c.account_id == account_id).group_by(rule.c.folder_id)
            .order_by(rule.c.folder_id))
    if folder_id:
        stmt = stmt.where(rule.c.folder_id == folder_id)
    return list(await conn.execute(stmt))


# --- series state ----------------------------------------------------------------------


async def series_of(conn: AsyncConnection, rule_id: int) -> list[Row[Any]]:
    return list(await conn.execute(select(series).where(series.c.rule_id == rule_id)))


async def series_of_rules(conn: AsyncConnection,
                          rule_ids: list[int]) -> dict[int, list[Row[Any]]]:
    out: dict[int, list[Row[Any]]] = {}
    for row in await conn.execute(select(series).where(series.c.rule_id.in_(rule_ids))):
        out.setdefault(row.rule_id, []).append(row)
    return out


async def upsert_series(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    """Replace the given series rows (delete then insert: a handful per evaluation)."""
    if not rows:
        return
    for row in rows:
        await conn.execute(delete(series).where(series.c.rule_id == row["rule_id"],
                                                series.c.series_key == row["series_key"]))
    await conn.execute(insert(series), rows)


async def delete_series(conn: AsyncConnection, rule_id: int, keys: list[str]) -> None:
    if keys:
        await conn.execute(delete(series).where(series.c.rule_id == rule_id,
                                                series.c.series_key.in_(keys)))


async def firing_series(conn: AsyncConnection, rule_id: int) -> list[Row[Any]]:
    stmt = select(series).where(series.c.rule_id == rule_id, series.c.state == "firing")
    return list(await conn.execute(stmt))
