"""Every monit query. Everything is scoped by account_id, so another account's ids behave as
not found."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Select,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import BindParameter

from dutyline.db.tables.monit import monit_datasource as ds
from dutyline.db.tables.monit import monit_rule as rule
from dutyline.db.tables.monit import monit_rule_audit as audit
from dutyline.db.tables.monit import monit_rule_counter as counter
from dutyline.db.tables.monit import monit_ruleset as ruleset
from dutyline.db.tables.monit import monit_series as series

# --- data sources ----------------------------------------------------------------------


async def insert_datasource(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(ds).values(**values))


# Reads are built once, with bound parameters; the sync forms serve the sync read
# operations (api/operation.py) and the async forms of the same reads run them.
_DATASOURCE = select(ds).where(ds.c.account_id == bindparam("account_id"),
                               ds.c.id == bindparam("ds_id"))


def get_datasource_sync(conn: Connection, account_id: int, ds_id: int) -> Row[Any] | None:
    return conn.execute(_DATASOURCE, {"account_id": account_id, "ds_id": ds_id}).first()


async def get_datasource(conn: AsyncConnection, account_id: int,
                         ds_id: int) -> Row[Any] | None:
    return await conn.run_sync(get_datasource_sync, account_id, ds_id)


async def datasource_name_taken(conn: AsyncConnection, account_id: int, name: str,
                                except_id: int) -> bool:
    stmt = select(ds.c.id).where(ds.c.account_id == account_id, ds.c.name == name,
                                 ds.c.id != except_id).limit(1)
    return (await conn.execute(stmt)).first() is not None


@functools.cache
def _datasources(by_type: bool) -> Select[Any]:
    stmt = select(ds).where(ds.c.account_id == bindparam("account_id"))
    if by_type:
        stmt = stmt.where(ds.c.type_ident == bindparam("type_ident"))
    return stmt.order_by(ds.c.name, ds.c.id)


def list_datasources_sync(conn: Connection, account_id: int,
                          type_ident: str) -> list[Row[Any]]:
    """The account's data sources (of one type when given), by name."""
    return list(conn.execute(_datasources(bool(type_ident)),
                             {"account_id": account_id, "type_ident": type_ident}))


async def list_datasources(conn: AsyncConnection, account_id: int,
                           type_ident: str) -> list[Row[Any]]:
    return await conn.run_sync(list_datasources_sync, account_id, type_ident)


async def update_datasource(conn: AsyncConnection, account_id: int, ds_id: int,
                            values: dict[str, Any]) -> None:
    await conn.execute(update(ds).where(ds.c.account_id == account_id, ds.c.id == ds_id)
                       .values(**values))


async def delete_datasource(conn: AsyncConnection, account_id: int, ds_id: int) -> None:
    await conn.execute(delete(ds).where(ds.c.account_id == account_id, ds.c.id == ds_id))


# --- rules -----------------------------------------------------------------------------


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(rule).values(**values))


_RULE = select(rule).where(rule.c.account_id == bindparam("account_id"),
                           rule.c.id == bindparam("rule_id"))
_RULE_LOCKED = _RULE.with_for_update()


def get_rule_sync(conn: Connection, account_id: int, rule_id: int) -> Row[Any] | None:
    return conn.execute(_RULE, {"account_id": account_id, "rule_id": rule_id}).first()


async def get_rule(conn: AsyncConnection, account_id: int, rule_id: int, *,
                   lock: bool = False) -> Row[Any] | None:
    if lock and conn.dialect.name == "postgresql":
        params = {"account_id": account_id, "rule_id": rule_id}
        return (await conn.execute(_RULE_LOCKED, params)).first()
    return await conn.run_sync(get_rule_sync, account_id, rule_id)


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


_RULES_BY_IDS = (select(rule)
                 .where(rule.c.account_id == bindparam("account_id"),
                        rule.c.id.in_(bindparam("rule_ids", expanding=True)))
                 .order_by(rule.c.id))


def rules_by_ids_sync(conn: Connection, account_id: int, rule_ids: list[int]) -> list[Row[Any]]:
    return list(conn.execute(_RULES_BY_IDS, {"account_id": account_id, "rule_ids": rule_ids}))


async def enabled_rule_ids(conn: AsyncConnection, rule_ids: list[str]) -> set[str]:
    ids = [int(r) for r in rule_ids if r.isdigit()]
    stmt = select(rule.c.id).where(rule.c.id.in_(ids), rule.c.enabled.is_(True))
    return {str(r.id) for r in await conn.execute(stmt)}


@functools.cache
def _rules(by_folder: bool) -> Select[Any]:
    stmt = select(rule).where(rule.c.account_id == bindparam("account_id"))
    if by_folder:
        stmt = stmt.where(rule.c.folder_id == bindparam("folder_id"))
    return stmt.order_by(rule.c.id)


def list_rules_sync(conn: Connection, account_id: int, folder_id: int) -> list[Row[Any]]:
    """The account's rules (of one folder; every folder with 0), by id."""
    return list(conn.execute(_rules(bool(folder_id)),
                             {"account_id": account_id, "folder_id": folder_id}))


async def list_rules(conn: AsyncConnection, account_id: int,
                     folder_id: int) -> list[Row[Any]]:
    return await conn.run_sync(list_rules_sync, account_id, folder_id)


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


@functools.cache
def _folder_status(by_folder: bool) -> Select[Any]:
    triggered = func.sum(case((rule.c.firing_count > 0, 1), else_=0))
    stmt = (select(rule.c.folder_id, func.count().label("total"),
                   func.coalesce(triggered, 0).label("triggered"))
            .where(rule.c.account_id == bindparam("account_id")).group_by(rule.c.folder_id)
            .order_by(rule.c.folder_id))
    if by_folder:
        stmt = stmt.where(rule.c.folder_id == bindparam("folder_id"))
    return stmt


def folder_status_sync(conn: Connection, account_id: int, folder_id: int) -> list[Row[Any]]:
    """(folder_id, total, triggered) per folder (one folder; every folder with 0)."""
    return list(conn.execute(_folder_status(bool(folder_id)),
                             {"account_id": account_id, "folder_id": folder_id}))


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


# --- rule history and counts -----------------------------------------------------------


async def insert_audit(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(audit).values(**values))


_AUDITS = (select(audit.c.id, audit.c.account_id, audit.c.alert_rule_id, audit.c.action,
                  audit.c.creator_id, audit.c.creator_name, audit.c.created_at)
           .where(audit.c.account_id == bindparam("account_id"),
                  audit.c.alert_rule_id == bindparam("rule_id"))
           .order_by(audit.c.created_at.desc(), audit.c.id.desc()))


def list_audits_sync(conn: Connection, account_id: int, rule_id: int) -> list[Row[Any]]:
    """Newest first, without the snapshots (a list of many large JSON texts)."""
    return list(conn.execute(_AUDITS, {"account_id": account_id, "rule_id": rule_id}))


_AUDIT = select(audit).where(audit.c.account_id == bindparam("account_id"),
                             audit.c.id == bindparam("audit_id"))


def get_audit_sync(conn: Connection, account_id: int, audit_id: int) -> Row[Any] | None:
    return conn.execute(_AUDIT, {"account_id": account_id, "audit_id": audit_id}).first()


async def count_rules(conn: AsyncConnection, account_id: int) -> int:
    stmt = select(func.count()).select_from(rule).where(rule.c.account_id == account_id)
    return int((await conn.execute(stmt)).scalar() or 0)


async def put_counter(conn: AsyncConnection, account_id: int, clock: int, num: int,
                      new_id: int) -> None:
    """The sample of this second: replaced when there is one already."""
    await conn.execute(delete(counter).where(counter.c.account_id == account_id,
                                             counter.c.clock == clock))
    await conn.execute(insert(counter).values(id=new_id, account_id=account_id, clock=clock,
                                              num=num))


_COUNTERS = (select(counter).where(counter.c.account_id == bindparam("account_id"))
             .order_by(counter.c.clock))


def list_counters_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    return list(conn.execute(_COUNTERS, {"account_id": account_id}))


_RULE_BODIES = select(rule.c.body).where(rule.c.account_id == bindparam("account_id"))


def rule_channels_sync(conn: Connection, account_id: int) -> list[str]:
    """Every rule's stored body (the channel ids live in it)."""
    return list(conn.execute(_RULE_BODIES, {"account_id": account_id}).scalars())


_COUNT_BY_FOLDER = (select(rule.c.folder_id, func.count().label("total"))
                    .where(rule.c.account_id == bindparam("account_id"))
                    .group_by(rule.c.folder_id).order_by(rule.c.folder_id))


def count_by_folder_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    return list(conn.execute(_COUNT_BY_FOLDER, {"account_id": account_id}))


# --- the rule repository (rulesets) ----------------------------------------------------
# Who sees a ruleset lives here: public ones (open_flag 2) every account, account-shared ones
# (1) the creator's account, private ones (0) their creator. Only the creator's account may
# change one (a private one: only its creator).


def _visible(account_id: Any, person_id: Any) -> Any:
    return or_(ruleset.c.open_flag == 2,
               and_(ruleset.c.creator_account_id == account_id,
                    or_(ruleset.c.open_flag == 1, ruleset.c.creator_id == person_id)))


def _changeable(account_id: Any, person_id: Any) -> Any:
    return and_(ruleset.c.creator_account_id == account_id,
                or_(ruleset.c.open_flag != 0, ruleset.c.creator_id == person_id))


async def insert_ruleset(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(ruleset).values(**values))


_ACCOUNT: BindParameter[int] = bindparam("account_id")
_PERSON: BindParameter[int] = bindparam("person_id")
_RULESET = {
    to_change: select(ruleset).where(
        ruleset.c.id == bindparam("ruleset_id"),
        (_changeable if to_change else _visible)(_ACCOUNT, _PERSON))
    for to_change in (False, True)
}
_RULESETS = (select(*[c for c in ruleset.c if c.name != "payload"])
             .where(ruleset.c.type_ident == bindparam("type_ident"),
                    _visible(_ACCOUNT, _PERSON))
             .order_by(ruleset.c.updated_at.desc(), ruleset.c.id.desc()))


def get_ruleset_sync(conn: Connection, account_id: int, person_id: int, ruleset_id: int,
                     *, to_change: bool = False) -> Row[Any] | None:
    params = {"account_id": account_id, "person_id": person_id, "ruleset_id": ruleset_id}
    return conn.execute(_RULESET[to_change], params).first()


async def get_ruleset(conn: AsyncConnection, account_id: int, person_id: int, ruleset_id: int,
                      *, to_change: bool = False) -> Row[Any] | None:
    return await conn.run_sync(lambda sync: get_ruleset_sync(
        sync, account_id, person_id, ruleset_id, to_change=to_change))


def list_rulesets_sync(conn: Connection, account_id: int, person_id: int,
                       type_ident: str) -> list[Row[Any]]:
    params = {"account_id": account_id, "person_id": person_id, "type_ident": type_ident}
    return list(conn.execute(_RULESETS, params))


async def update_ruleset(conn: AsyncConnection, ruleset_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(ruleset).where(ruleset.c.id == ruleset_id).values(**values))


async def delete_ruleset(conn: AsyncConnection, ruleset_id: int) -> None:
    await conn.execute(delete(ruleset).where(ruleset.c.id == ruleset_id))
