"""The rule repository (/monit/store/ruleset/*): sets of alert rule definitions kept to be
shared and imported, each for one data source type. `payload` is a JSON text (typically an
/monit/rule/export array) stored as given after a check that it is JSON. Who sees and who may
change a ruleset is decided by the repository's scoped queries (open_flag 0 private to its
creator, 1 its account, 2 every account, read only outside the creator's account); one out
of reach behaves as an unknown id."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.monit import repository as repo
from dutyline.monit.schemas import (
    DS_TYPES,
    StoreRulesetItem,
    shaped,
)


def _check_payload(payload: str) -> None:
    try:
        msgspec.json.decode(payload)
    except msgspec.DecodeError:
        raise errors.invalid("payload", "must be a JSON text") from None


def _check_type(type_ident: str) -> None:
    if type_ident not in DS_TYPES:
        raise errors.invalid("type_ident", f"must be one of {', '.join(DS_TYPES)}")


def _item(row: Any, *, with_payload: bool) -> StoreRulesetItem:
    # A list's rows have no payload column: it is named here, never read from them.
    return shaped(StoreRulesetItem, row, payload=row.payload if with_payload else "")


@writes("/monit/store/ruleset/create", ALERT_RULE_MANAGE,
        targets=lambda item: [item.id])
async def create_ruleset(conn: AsyncConnection, actor: Actor, *, type_ident: str, note: str,
                         payload: str, open_flag: int) -> StoreRulesetItem:
    _check_type(type_ident)
    _check_payload(payload)
    ruleset_id = numeric_id()
    await repo.insert_ruleset(conn, {
        "id": ruleset_id, "type_ident": type_ident, "note": note.strip(),
        "open_flag": open_flag, "payload": payload,
        "creator_account_id": actor.account_id, "creator_id": actor.person_id,
        "creator_name": actor.person_name, "created_at": actor.now_s,
        "updated_at": actor.now_s,
    })
    return await get_ruleset(conn, actor, ruleset_id=ruleset_id)


@reads_sync(ALERT_RULE_MANAGE)
def get_ruleset_sync(conn: Connection, actor: Actor, *, ruleset_id: int) -> StoreRulesetItem:
    row = repo.get_ruleset_sync(conn, actor.account_id, actor.person_id, ruleset_id)
    if row is None:
        raise errors.not_found("ruleset", ruleset_id)
    return _item(row, with_payload=True)


@reads(ALERT_RULE_MANAGE)
async def get_ruleset(conn: AsyncConnection, actor: Actor, *,
                      ruleset_id: int) -> StoreRulesetItem:
    return await conn.run_sync(lambda sync: get_ruleset_sync(sync, actor,
                                                             ruleset_id=ruleset_id))


@reads_sync(ALERT_RULE_MANAGE)
def list_rulesets_sync(conn: Connection, actor: Actor, *,
                       type_ident: str) -> list[StoreRulesetItem]:
    _check_type(type_ident)
    rows = repo.list_rulesets_sync(conn, actor.account_id, actor.person_id, type_ident)
    return [_item(r, with_payload=False) for r in rows]


async def _require_changeable(conn: AsyncConnection, actor: Actor, ruleset_id: int) -> Any:
    row = await repo.get_ruleset(conn, actor.account_id, actor.person_id, ruleset_id,
                                 to_change=True)
    if row is None:
        raise errors.not_found("ruleset", ruleset_id)
    return row


@writes("/monit/store/ruleset/update", ALERT_RULE_MANAGE,
        targets=lambda item: [item.id])
async def update_ruleset(conn: AsyncConnection, actor: Actor, *, ruleset_id: int, note: str,
                         payload: str, open_flag: int | None) -> StoreRulesetItem:
    """`open_flag` None: unchanged."""
    row = await _require_changeable(conn, actor, ruleset_id)
    _check_payload(payload)
    await repo.update_ruleset(conn, row.id, {
        "note": note.strip(), "payload": payload, "updated_at": actor.now_s,
        "open_flag": row.open_flag if open_flag is None else open_flag,
    })
    return await get_ruleset(conn, actor, ruleset_id=row.id)


@writes("/monit/store/ruleset/delete", ALERT_RULE_MANAGE)
async def delete_ruleset(conn: AsyncConnection, actor: Actor, *, ruleset_id: int) -> None:
    row = await _require_changeable(conn, actor, ruleset_id)
    actor.note_audit_targets(row.id)
    await repo.delete_ruleset(conn, row.id)
