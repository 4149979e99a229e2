"""/alert/merge: alerts join an existing open incident.

Every alert id must be a visible alert of the account and the incident a visible open one,
or nothing changes. The alerts move; the target's counters are recounted from its alerts and
its severity becomes the worst of its active alerts (kept when none is active); the optional
title and owner are set. Each incident the alerts left is recounted too; one left with no
alert at all is closed as merged into the target. Every incident touched gets an `a_merge`
feed entry (reference IncidentFeedType: "an alert was merged into an existing incident") and
an `alerts_merged` event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident import events, feed, state, visibility
from dutyline.incident.alert import repository as alert_repo
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.lifecycle.common import load_all
from dutyline.platform.member import service as member_service


def _short(row: Any) -> dict[str, Any]:
    return {"incident_id": row.incident_id, "title": row.title, "progress": row.progress}


@writes("/alert/merge", INCIDENT_MANAGE)
async def merge_alerts(
    conn: AsyncConnection, actor: Actor, *, incident_id: str, alert_ids: Sequence[str],
    comment: str = "", title: str | None = None, owner_id: int | None = None,
) -> list[str]:
    """Returns every id the merge touched (the target, the incidents the alerts left, the
    alerts that moved: those not in the target already), for the audit log."""
    (target,) = await load_all(conn, actor, [incident_id.lower()], field="incident_id")
    state.require([target], state.MERGE_TARGET, actor.now_s, "incident_id")
    ids = list(dict.fromkeys(i.lower() for i in alert_ids))
    found = await alert_repo.find_many(conn, await visibility.scope(actor), ids, lock=True)
    if missing := [i for i in ids if i not in found]:
        raise errors.ResourceNotFound("{field}: alerts not found: {ids}", field="alert_ids",
                                      ids=", ".join(missing))
    if owner_id is not None and not await member_service.existing_member_ids(
            conn, actor, [owner_id]):
        raise errors.invalid("owner_id", "unknown members: " + str(owner_id))
    moving = [found[i] for i in ids if found[i].incident_id != target.incident_id]
    sources = await repo.lock_in_account(
        conn, actor.account_id, sorted({a.incident_id for a in moving if a.incident_id}))
    await conn.run_sync(_move_and_recount, actor, target, sources, moving, comment, title,
                        owner_id)
    return [target.incident_id, *sources, *(a.alert_id for a in moving)]


def _move_and_recount(conn: Connection, actor: Actor, target: Any, sources: dict[str, Any],
                      moved: list[Any], comment: str, title: str | None,
                      owner_id: int | None) -> None:
    changes: dict[str, Any] = {"last_time": max([target.last_time,
                                                 *(a.last_time for a in moved)])}
    if title is not None and title.strip():
        changes["title"] = title.strip()
    if owner_id is not None:
        changes["owner_id"] = owner_id
    moved_ids = [a.alert_id for a in moved]
    values = state.alerts_joined(conn, actor, target, moved_ids, changes=changes)
    for source in sources.values():
        left = [a.alert_id for a in moved if a.incident_id == source.incident_id]
        state.alerts_left(conn, actor, source, target.incident_id, alert_ids=left, detail={
            "alert_ids": left, "comment": comment, "target_incident": _short(target)})
    if moved or "title" in changes or owner_id is not None:
        state.record(conn, state.by(actor), target.incident_id, target.channel_id,
                     feed_type=feed.ALERT_MERGE, detail={
                         "alert_ids": moved_ids, "comment": comment,
                         "source_incidents": [_short(s) for s in sources.values()],
                         "target_incident": _short(target), "owner_id": actor.person_id,
                         "title": values.get("title", target.title)},
                     kind=events.ALERTS_MERGED, payload={
                         "role": "target", "alert_ids": moved_ids,
                         "source_incident_ids": sorted(sources)})
