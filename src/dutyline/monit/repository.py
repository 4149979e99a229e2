"""Every monit query. Everything is scoped by account_id, so another account's ids behave as
not found."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, case, delete, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.monit import monit_datasource as ds
from dutyline.db.tables.monit import monit_rule as rule
from dutyline.db.tables.monit import monit_rule_audit as audit
from dutyline.db.tables.monit import monit_rule_counter as counter
from dutyline.db.tables.monit import monit_ruleset as ruleset
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


# --- rule history and counts -----------------------------------------------------------


async def insert_audit(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(audit).values(**values))


async def list_audits(conn: AsyncConnection, account_id: int,
                      rule_id: int) -> list[Row[Any]]:
    """Newest first, without the snapshots (a list of many large JSON texts)."""
    stmt = (select(audit.c.id, audit.c.account_id, audit.c.alert_rule_id, audit.c.action,
                   audit.c.creator_id, audit.c.creator_name, audit.c.created_at)
            .where(audit.c.account_id == account_id, audit.c.alert_rule_id == rule_id)
            .order_by(audit.c.created_at.desc(), audit.c.id.desc()))
    return list(await conn.execute(stmt))


async def get_audit(conn: AsyncConnection, account_id: int, audit_id: int) -> Row[Any] | None:
    stmt = select(audit).where(audit.c.account_id == account_id, audit.c.id == audit_id)
    return (await conn.execute(stmt)).first()


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


async def list_counters(conn: AsyncConnection, account_id: int) -> list[Row[Any]]:
    stmt = select(counter).where(counter.c.account_id == account_id).order_by(counter.c.clock)
    return list(await conn.execute(stmt))


async def rule_channels(conn: AsyncConnection, account_id: int) -> list[str]:
    """Every rule's stored body (the channel ids live in it)."""
    stmt = select(rule.c.body).where(rule.c.account_id == account_id)
    return [r.body for r in await conn.execute(stmt)]


async def count_by_folder(conn: AsyncConnection, account_id: int) -> list[Row[Any]]:
    stmt = (select(rule.c.folder_id, func.count().label("total"))
            .where(rule.c.account_id == account_id).group_by(rule.c.folder_id)
            .order_by(rule.c.folder_id))
    return list(await conn.execute(stmt))


# --- the rule repository (rulesets) ----------------------------------------------------
# Who sees a ruleset lives here: public ones (open_flag 2) every account, account-shared ones
# (1) the creator's account, private ones (0) their creator. Only the creator's account may
# change one (a private one: only its creator).


def _visible(account_id: int, person_id: int) -> Any:
    return or_(ruleset.c.open_flag == 2,
               and_(ruleset.c.creator_account_id == account_id,
                    or_(ruleset.c.open_flag == 1, ruleset.c.creator_id == person_id)))


def _changeable(account_id: int, person_id: int) -> Any:
    return and_(ruleset.c.creator_account_id == account_id,
                or_(ruleset.c.open_flag != 0, ruleset.c.creator_id == person_id))


async def insert_ruleset(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(ruleset).values(**values))


async def get_ruleset(conn: AsyncConnection, account_id: int, person_id: int, ruleset_id: int,
                      *, to_change: bool = False) -> Row[Any] | None:
    scope = (_changeable if to_change else _visible)(account_id, person_id)
    stmt = select(ruleset).where(ruleset.c.id == ruleset_id, scope)
    return (await conn.execute(stmt)).first()


async def list_rulesets(conn: AsyncConnection, account_id: int, person_id: int,
                        type_ident: str) -> list[Row[Any]]:
    stmt = (select(*[c for c in ruleset.c if c.name != "payload"])
            .where(ruleset.c.type_ident == type_ident, _visible(account_id, person_id))
            .order_by(ruleset.c.updated_at.desc(), ruleset.c.id.desc()))
    return list(await conn.execute(stmt))


async def update_ruleset(conn: AsyncConnection, ruleset_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(ruleset).where(ruleset.c.id == ruleset_id).values(**values))


async def delete_ruleset(conn: AsyncConnection, ruleset_id: int) -> None:
    await conn.execute(delete(ruleset).where(ruleset.c.id == ruleset_id))
