"""/alert/merge: alerts join an existing open incident.

Every alert id must be a visible alert of the account and the incident a visible open one,
or nothing changes. The alerts move; the target's counters are recounted from its alerts and
its severity becomes the worst of its active alerts (kept when none is active); the optional
title and owner are set. Each incident the alerts left is recounted too; one left with no
alert at all is closed as merged into the target. Every incident touched gets an `a_merge`
feed entry (reference IncidentFeedType: "an alert was merged into an existing incident") and
an `alerts_merged` event."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident import events, feed, state, visibility
from dutyline.incident.alert import repository as alert_repo
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.lifecycle.common import (
    CLOSED,
    OPEN,
    load_all,
    record,
    require_progress,
)
from dutyline.platform.member import service as member_service


def _short(row: Any) -> dict[str, Any]:
    return {"incident_id": row.incident_id, "title": row.title, "progress": row.progress}


async def _recount(conn: AsyncConnection, row: Any, now_s: int) -> dict[str, Any]:
    alert_cnt, active, event_cnt = await repo.alert_counts(conn, row.incident_id)
    values: dict[str, Any] = {"alert_cnt": alert_cnt, "active_alert_cnt": active,
                              "alert_event_cnt": event_cnt, "updated_at": now_s}
    values.update(state.recomputed_severity(
        await repo.active_alert_severities(conn, row.incident_id), row.progress))
    return values


@writes("/alert/merge", INCIDENT_MANAGE)
async def merge_alerts(
    conn: AsyncConnection, actor: Actor, *, incident_id: str, alert_ids: Sequence[str],
    comment: str = "", title: str | None = None, owner_id: int | None = None,
) -> list[str]:
    """Returns every id the merge touched (the target, the incidents the alerts left, the
    alerts that moved: those not in the target already), for the audit log."""
    (target,) = await load_all(conn, actor, [incident_id.lower()], field="incident_id")
    require_progress([target], OPEN, "the target is Closed", field="incident_id")
    ids = list(dict.fromkeys(i.lower() for i in alert_ids))
    found = await alert_repo.find_many(conn, await visibility.scope(actor), ids, lock=True)
    if missing := [i for i in ids if i not in found]:
        raise errors.ResourceNotFound("{field}: alerts not found: {ids}", field="alert_ids",
                                      ids=", ".join(missing))
    if owner_id is not None and not await member_service.existing_member_ids(
            conn, actor, [owner_id]):
        raise errors.invalid("owner_id", "unknown members: " + str(owner_id))
    moving = [found[i] for i in ids if found[i].incident_id != target.incident_id]
    now, person_id = actor.now_s, actor.person_id
    left_from: dict[str, list[str]] = defaultdict(list)
    for a in moving:
        if a.incident_id:
            left_from[a.incident_id].append(a.alert_id)
    sources = await repo.lock_in_account(conn, actor.account_id, sorted(left_from))
    moved = [a.alert_id for a in moving]
    if moved:
        await repo.move_alerts_by_id(conn, moved, target.incident_id, now)

    values = await _recount(conn, target, now)
    values["last_time"] = max([target.last_time, *(a.last_time for a in moving)])
    if title is not None and title.strip():
        values["title"] = title.strip()
    if owner_id is not None:
        values["owner_id"] = owner_id
    await repo.update_incident(conn, target.incident_id, values)

    for source in sources.values():
        closing = await _recount(conn, source, now)
        emptied = closing["alert_cnt"] == 0 and source.progress != CLOSED
        if emptied:
            closing.update(state.emptied(target.incident_id, now, person_id))
        await repo.update_incident(conn, source.incident_id, closing)
        await record(conn, actor, source, feed_type=feed.ALERT_MERGE, detail={
            "alert_ids": left_from[source.incident_id], "comment": comment,
            "target_incident": _short(target),
        }, kind=events.ALERTS_MERGED, payload={
            "role": "source", "alert_ids": left_from[source.incident_id],
            "target_incident_id": target.incident_id, "closed": emptied,
        })
    if moved or "title" in values or owner_id is not None:
        await record(conn, actor, target, feed_type=feed.ALERT_MERGE, detail={
            "alert_ids": moved, "comment": comment,
            "source_incidents": [_short(s) for s in sources.values()],
            "target_incident": _short(target), "owner_id": person_id,
            "title": values.get("title", target.title),
        }, kind=events.ALERTS_MERGED, payload={
            "role": "target", "alert_ids": moved, "source_incident_ids": sorted(sources),
        })
    return [target.incident_id, *sources, *moved]
