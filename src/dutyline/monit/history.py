"""The change history of alert rules and the account's rule counts: what /monit/rule/audits,
/monit/rule/audit/detail and /monit/rule/counter/* read.

Every change of a rule (create, import, update, update/fields, move, delete) stores who made
it, when, and the rule as it stood after it (its last state for a delete), in the same
transaction as the change: the record before a change is the previous entry of the trail.
The trail outlives the rule. Each change of the rule total stores a sample of it."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.monit import repository as repo
from dutyline.monit.schemas import (
    AlertRuleAudit,
    AlertRuleCounter,
    DSType,
    decode_body,
    shaped,
)

# Rules evaluate Prometheus-compatible sources only (VictoriaMetrics and Thanos speak its API).
DS_TYPE_LIST = (DSType(id=1, name="Prometheus", ident="prometheus", account_id=0, weight=100),)


async def record(conn: AsyncConnection, actor: Actor, *, rule_id: int, action: str,
                 content: str) -> None:
    await repo.insert_audit(conn, {
        "id": numeric_id(), "account_id": actor.account_id, "alert_rule_id": rule_id,
        "action": action, "content": content, "creator_id": actor.person_id,
        "creator_name": actor.person_name, "created_at": actor.now_s,
    })


async def record_count(conn: AsyncConnection, actor: Actor) -> None:
    num = await repo.count_rules(conn, actor.account_id)
    await repo.put_counter(conn, actor.account_id, actor.now_s, num, numeric_id())


@reads_sync(ALERT_RULE_MANAGE)
def list_audits_sync(conn: Connection, actor: Actor, *, rule_id: int) -> list[AlertRuleAudit]:
    """Newest first. A deleted rule keeps its trail; an id the account never had is a 400."""
    rows = repo.list_audits_sync(conn, actor.account_id, rule_id)
    if not rows and repo.get_rule_sync(conn, actor.account_id, rule_id) is None:
        raise errors.not_found("alert rule", rule_id)
    return [shaped(AlertRuleAudit, r, content="") for r in rows]


@reads_sync(ALERT_RULE_MANAGE)
def audit_detail_sync(conn: Connection, actor: Actor, *, audit_id: int) -> AlertRuleAudit:
    row = repo.get_audit_sync(conn, actor.account_id, audit_id)
    if row is None:
        raise errors.not_found("alert rule audit", audit_id)
    return shaped(AlertRuleAudit, row)


@reads_sync(ALERT_RULE_MANAGE)
def counter_total_sync(conn: Connection, actor: Actor) -> list[AlertRuleCounter]:
    return [shaped(AlertRuleCounter, r)
            for r in repo.list_counters_sync(conn, actor.account_id)]


@reads_sync(ALERT_RULE_MANAGE)
def counter_channel_sync(conn: Connection, actor: Actor) -> dict[str, int]:
    """Rules per channel they send to, keyed by channel name (the id when it has none)."""
    from dutyline.channel.service import channel_names_sync  # the channel domain's service

    per_channel: Counter[int] = Counter()
    for body in repo.rule_channels_sync(conn, actor.account_id):
        per_channel.update(set(decode_body(body).channel_ids))
    names = channel_names_sync(conn, actor, list(per_channel))
    out: dict[str, int] = {}
    for channel_id, count in sorted(per_channel.items()):
        key = names[channel_id][0] if channel_id in names and names[channel_id][0] else str(
            channel_id)
        out[key] = out.get(key, 0) + count  # two channels may share a name
    return out


@reads_sync(ALERT_RULE_MANAGE)
def counter_node_sync(conn: Connection, actor: Actor) -> dict[str, int]:
    """Rules per top-level folder. dutyline has no folder records (a rule's `folder_id` is a
    plain number), so every folder is top-level and is named by its id ("0": no folder)."""
    return {str(r.folder_id): int(r.total)
            for r in repo.count_by_folder_sync(conn, actor.account_id)}


@reads_sync(ALERT_RULE_MANAGE)
def ds_types_sync(conn: Connection, actor: Actor) -> list[DSType]:
    """The data source types rules can use (the same for every account)."""
    return list(DS_TYPE_LIST)
