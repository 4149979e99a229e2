"""Every query of automation rules, triggers, runs and steps.

Visibility lives here (`visible`): owners and admins see every rule of the account; a member
sees the rules they created and the rules of their teams. Another account's ids never match."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import any_contains_bound, contains_pattern
from dutyline.db.paging import counted_page_sync
from dutyline.db.tables.automation import (
    automation_rule,
    automation_run,
    automation_run_step,
    automation_trigger,
)

rule = automation_rule
trigger = automation_trigger
run = automation_run
step = automation_run_step


def _visible(*, all_rules: bool, with_teams: bool) -> ColumnElement[bool]:
    """The rules a caller sees, bound at execution (`_visible_params`): the account's, all
    of them or the caller's own and their teams' (`with_teams`: the caller has teams)."""
    account = rule.c.account_id == bindparam("account_id")
    if all_rules:
        return account
    mine = rule.c.owner_id == bindparam("person_id")
    ours = (rule.c.team_id.in_(bindparam("team_ids", expanding=True)) if with_teams
            else false())
    return and_(account, or_(mine, and_(rule.c.team_id != 0, ours)))


def _visible_params(account_id: int, *, all_rules: bool, person_id: int,
                    team_ids: Collection[int]) -> dict[str, Any]:
    return {"account_id": account_id, "person_id": person_id, "team_ids": sorted(team_ids)}


# --- rules ----------------------------------------------------------------------------------


async def insert_rule(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(rule).values(**values))


_RULE = select(rule).where(rule.c.account_id == bindparam("account_id"),
                           rule.c.rule_id == bindparam("rule_id"))


def get_rule_sync(conn: Connection, account_id: int, rule_id: str) -> Row[Any] | None:
    return conn.execute(_RULE, {"account_id": account_id, "rule_id": rule_id}).first()


async def get_rule(conn: AsyncConnection, account_id: int, rule_id: str) -> Row[Any] | None:
    return await conn.run_sync(get_rule_sync, account_id, rule_id)


async def scheduled_rules(
    conn: AsyncConnection, rule_ids: Sequence[str], *, trigger_kind: str
) -> list[Any]:
    """For the scheduler's batch of fires (each names its rule, of whatever account): the
    enabled rules among them whose schedule trigger is on, with that trigger's id, in one
    query (rule_id, account_id, trigger_id)."""
    if not rule_ids:
        return []
    stmt = (
        select(rule.c.rule_id, rule.c.account_id, trigger.c.trigger_id)
        .join(trigger, and_(trigger.c.rule_id == rule.c.rule_id, trigger.c.kind == trigger_kind))
        .where(rule.c.rule_id.in_(list(rule_ids)), rule.c.enabled.is_(True),
               trigger.c.enabled.is_(True))
    )
    return list((await conn.execute(stmt)).all())


async def get_rule_any_account(conn: AsyncConnection, rule_id: str) -> Row[Any] | None:
    """For jobs and triggers, which carry the rule id from a row of the same account."""
    return (await conn.execute(select(rule).where(rule.c.rule_id == rule_id))).first()


async def update_rule(
    conn: AsyncConnection, account_id: int, rule_id: str, values: dict[str, Any]
) -> None:
    await conn.execute(
        update(rule).where(rule.c.account_id == account_id, rule.c.rule_id == rule_id)
        .values(**values)
    )


async def take_manual_run_slot(
    conn: AsyncConnection, account_id: int, rule_id: str, *, now_ms: int, window_ms: int
) -> bool:
    """One manual run per window per rule, decided by one conditional UPDATE, so two
    concurrent calls (any processes) cannot both win."""
    result = await conn.execute(
        update(rule)
        .where(rule.c.account_id == account_id, rule.c.rule_id == rule_id,
               rule.c.last_manual_run_at <= now_ms - window_ms)
        .values(last_manual_run_at=now_ms)
    )
    return bool(result.rowcount == 1)


async def delete_rule(conn: AsyncConnection, account_id: int, rule_id: str) -> None:
    run_ids = select(run.c.run_id).where(run.c.account_id == account_id, run.c.rule_id == rule_id)
    await conn.execute(delete(step).where(step.c.run_id.in_(run_ids)))
    await conn.execute(delete(run).where(run.c.account_id == account_id, run.c.rule_id == rule_id))
    await conn.execute(
        delete(trigger).where(trigger.c.account_id == account_id, trigger.c.rule_id == rule_id)
    )
    await conn.execute(
        delete(rule).where(rule.c.account_id == account_id, rule.c.rule_id == rule_id)
    )


@functools.cache
def _rule_page(all_rules: bool, with_teams: bool, only_teams: bool,
               by_name: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conds: list[ColumnElement[bool]] = [_visible(all_rules=all_rules, with_teams=with_teams)]
    if only_teams:
        conds.append(rule.c.team_id.in_(bindparam("only_team_ids", expanding=True)))
    if by_name:
        conds.append(any_contains_bound("name_pattern", rule.c.name))
    return (select(func.count()).select_from(rule).where(*conds),
            select(rule).where(*conds).order_by(rule.c.created_at.desc(), rule.c.rule_id))


def list_rules_sync(
    conn: Connection,
    account_id: int,
    *,
    all_rules: bool,
    person_id: int,
    team_ids: Collection[int],
    only_team_ids: Sequence[int] | None,
    query: str,
    offset: int,
    limit: int,
) -> tuple[int, list[Row[Any]]]:
    params = _visible_params(account_id, all_rules=all_rules, person_id=person_id,
                             team_ids=team_ids)
    if only_team_ids is not None:
        params["only_team_ids"] = list(only_team_ids)
    if query:
        params["name_pattern"] = contains_pattern(query.lower())
    count, page = _rule_page(all_rules, bool(team_ids), only_team_ids is not None,
                             bool(query))
    total, rows = counted_page_sync(conn, count, page, offset=offset, limit=limit,
                                    params=params)
    return total, list(rows)


# --- triggers -------------------------------------------------------------------------------


_TRIGGERS = select(trigger).where(trigger.c.rule_id.in_(bindparam("rule_ids", expanding=True)))


def triggers_of_sync(conn: Connection, rule_ids: Sequence[str]) -> dict[str, dict[str, Row[Any]]]:
    """{rule_id: {kind: trigger row}}."""
    found: dict[str, dict[str, Row[Any]]] = {r: {} for r in rule_ids}
    if not rule_ids:
        return found
    for r in conn.execute(_TRIGGERS, {"rule_ids": list(rule_ids)}).all():
        found[r.rule_id][r.kind] = r
    return found


async def triggers_of(
    conn: AsyncConnection, rule_ids: Sequence[str]
) -> dict[str, dict[str, Row[Any]]]:
    return await conn.run_sync(triggers_of_sync, rule_ids)


async def insert_trigger(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(trigger).values(**values))


async def update_trigger(conn: AsyncConnection, trigger_id: str, values: dict[str, Any]) -> None:
    await conn.execute(update(trigger).where(trigger.c.trigger_id == trigger_id).values(**values))


# Enabled on-call incident triggers of enabled rules of the account; built once (every
# new incident asks, inside its creation).
_INCIDENT_TRIGGERS = (
    select(trigger)
    .join(rule, rule.c.rule_id == trigger.c.rule_id)
    .where(trigger.c.account_id == bindparam("triggers_account_id"),
           trigger.c.kind == "oncall_incident",
           trigger.c.enabled.is_(True), rule.c.enabled.is_(True))
    .order_by(trigger.c.rule_id)
)


async def incident_triggers(conn: AsyncConnection, account_id: int) -> list[Row[Any]]:
    return list((await conn.execute(_INCIDENT_TRIGGERS,
                                    {"triggers_account_id": account_id})).all())


def incident_triggers_sync(conn: Connection, account_id: int) -> list[Row[Any]]:
    """`incident_triggers` inside incident creation (the event stream asks whether to queue
    the automation trigger's job at all)."""
    return list(conn.execute(_INCIDENT_TRIGGERS, {"triggers_account_id": account_id}).all())


# --- runs and steps -------------------------------------------------------------------------


async def insert_run(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(run).values(**values))


async def insert_runs(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(run), rows)


_RUN = select(run).where(run.c.run_id == bindparam("run_id"))


def get_run_sync(conn: Connection, run_id: str) -> Row[Any] | None:
    return conn.execute(_RUN, {"run_id": run_id}).first()


async def get_run(conn: AsyncConnection, run_id: str) -> Row[Any] | None:
    return await conn.run_sync(get_run_sync, run_id)


async def update_run(
    conn: AsyncConnection, run_id: str, values: dict[str, Any],
    *, only_status: Collection[str] | None = None,
) -> bool:
    stmt = update(run).where(run.c.run_id == run_id)
    if only_status is not None:
        stmt = stmt.where(run.c.status.in_(list(only_status)))
    result = await conn.execute(stmt.values(**values))
    return bool(result.rowcount == 1)


@functools.cache
def _run_page(all_rules: bool, with_teams: bool, by_rule: bool,
              by_status: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conds: list[ColumnElement[bool]] = [
        run.c.account_id == bindparam("account_id"),
        run.c.rule_id.in_(select(rule.c.rule_id).where(
            _visible(all_rules=all_rules, with_teams=with_teams))),
    ]
    if by_rule:
        conds.append(run.c.rule_id == bindparam("rule_id"))
    if by_status:
        conds.append(run.c.status == bindparam("status"))
    return (select(func.count()).select_from(run).where(*conds),
            select(run).where(*conds).order_by(run.c.created_at.desc(), run.c.run_id))


def list_runs_sync(
    conn: Connection,
    account_id: int,
    *,
    all_rules: bool,
    person_id: int,
    team_ids: Collection[int],
    rule_id: str,
    status: str,
    offset: int,
    limit: int,
) -> tuple[int, list[Row[Any]]]:
    params = {**_visible_params(account_id, all_rules=all_rules, person_id=person_id,
                                team_ids=team_ids), "rule_id": rule_id, "status": status}
    count, page = _run_page(all_rules, bool(team_ids), bool(rule_id), bool(status))
    total, rows = counted_page_sync(conn, count, page, offset=offset, limit=limit,
                                    params=params)
    return total, list(rows)


_STEPS = (select(step).where(step.c.run_id == bindparam("run_id"))
          .order_by(step.c.seq, step.c.id))


def steps_of_sync(conn: Connection, run_id: str) -> list[Row[Any]]:
    return list(conn.execute(_STEPS, {"run_id": run_id}).all())


async def add_step(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(step).values(**values))


async def delete_steps(conn: AsyncConnection, run_id: str) -> None:
    await conn.execute(delete(step).where(step.c.run_id == run_id))


# --- hot sync helpers (the fire endpoint's one-hop transaction, see Database.run_sync) ------


def _trigger_with_rule() -> Any:
    return (
        select(trigger, rule.c.enabled.label("rule_enabled"), rule.c.team_id, rule.c.owner_id)
        .join(rule, rule.c.rule_id == trigger.c.rule_id)
    )


def find_trigger_sync(conn: Connection, trigger_id: str) -> Row[Any] | None:
    return conn.execute(_trigger_with_rule().where(trigger.c.trigger_id == trigger_id)).first()


def insert_run_sync(conn: Connection, values: dict[str, Any]) -> None:
    conn.execute(insert(run).values(**values))
