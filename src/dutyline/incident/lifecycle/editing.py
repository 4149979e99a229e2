"""Creating and editing incidents: create, reset (title, description, severity...), assign,
merge, and custom field values. Each change writes its feed entry and event in the
transaction of the change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.incident import events, feed, references, state, visibility
from dutyline.incident.creation import NewIncident, open_incident
from dutyline.incident.field import service as field_service
from dutyline.incident.lifecycle import repository as repo
from dutyline.incident.lifecycle.common import (
    OPEN,
    dumps,
    load_all,
    loads,
    record,
    require_progress,
    responders_adding,
    unique_ids,
)
from dutyline.incident.lifecycle.schemas import (
    AssignedTo,
    CreateIncidentResponse,
)
from dutyline.incident.lifecycle.schemas import AssignInput as AssignInput  # records taken
from dutyline.incident.lifecycle.schemas import CreateInput as CreateInput
from dutyline.incident.lifecycle.schemas import FieldResetInput as FieldResetInput
from dutyline.incident.lifecycle.schemas import MergeInput as MergeInput
from dutyline.incident.lifecycle.schemas import ResetInput as ResetInput
from dutyline.kit.ids import hex_id
from dutyline.platform.member import service as member_service


async def _assignment(conn: AsyncConnection, actor: Actor, given: AssignedTo, field: str,
                      kind: str) -> dict[str, Any]:
    """The stored AssignedTo: people checked against the account, stamped and given an id."""
    person_ids = list(dict.fromkeys(given.person_ids or []))
    if not person_ids and not given.escalate_rule_id:
        raise errors.invalid(field, "needs person_ids or escalate_rule_id")
    known = await member_service.existing_member_ids(conn, actor, list(person_ids))
    if unknown := [p for p in person_ids if p not in known]:
        raise errors.invalid(f"{field}.person_ids",
                             "unknown members: " + ", ".join(map(str, unknown)))
    assignment: dict[str, Any] = {"type": kind, "assigned_at": actor.now_s, "id": hex_id(),
                                  "layer_idx": given.layer_idx}
    if person_ids:
        assignment["person_ids"] = person_ids
    if given.escalate_rule_id:
        rule_id = given.escalate_rule_id.lower()
        rule_name = await references.escalate_rule_name(conn, actor, rule_id)
        if rule_name is None:
            raise errors.invalid(f"{field}.escalate_rule_id",
                                 "names no escalation rule of this account")
        assignment["escalate_rule_id"] = rule_id
        assignment["escalate_rule_name"] = rule_name
    if given.emails:
        assignment["emails"] = list(dict.fromkeys(e.strip() for e in given.emails))
    return assignment


def names_someone(given: AssignedTo) -> bool:
    """Whether an assignment names anyone. Clients send `{"notify": {}}` when their caller
    named no assignee: at creation that means no explicit assignment (the channel's
    escalation rule applies), as when `assigned_to` is absent."""
    return bool(given.person_ids or given.escalate_rule_id or given.emails)


@writes("/incident/create", INCIDENT_MANAGE, inputs=CreateInput,
        targets=lambda created: [created.incident_id])
async def create(
    conn: AsyncConnection, actor: Actor, *, incident_severity: str, title: str,
    description: str = "", channel_id: int = 0, assigned_to: AssignedTo | None = None,
) -> CreateIncidentResponse:
    """Open an incident by hand, standalone (channel 0) or in a channel the actor sees."""
    title = title.strip()
    if not title:
        raise errors.invalid("title", "is required")
    account_id, now = actor.account_id, actor.now_s
    if channel_id:
        # A live channel the actor sees: a private one of other teams is not found.
        await channels.require_visible(conn, actor, channel_id)
    assignment = (await _assignment(conn, actor, assigned_to, "assigned_to", "assign")
                  if assigned_to is not None and names_someone(assigned_to) else {})
    incident_id = await open_incident(conn, NewIncident(
        account_id=account_id, title=title, severity=incident_severity,
        channel_id=channel_id, description=description,
        creator_id=actor.person_id, assigned_to=assignment,
    ), now_s=now)
    rows = await repo.lock(conn, await visibility.scope(actor), [incident_id])
    row = rows[incident_id]
    if assignment:
        await _apply_assignment(conn, actor, row, assignment)
    return CreateIncidentResponse(incident_id=incident_id, title=title, num=row.num)


async def _apply_assignment(conn: AsyncConnection, actor: Actor, row: Any,
                            assignment: dict[str, Any]) -> None:
    responders = responders_adding(row.responders, assignment.get("person_ids", []),
                                   actor.now_s)
    await repo.update_incident(conn, row.incident_id, {
        "assigned_to": dumps(assignment), "responders": dumps(responders),
        "updated_at": actor.now_s,
    })
    await record(conn, actor, row, feed_type=feed.ASSIGN,
                 detail=feed.assign_detail(assignment), kind=events.ASSIGNED,
                 payload={"assignment": assignment})


@writes("/incident/assign", INCIDENT_MANAGE, inputs=AssignInput)
async def assign(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                 assigned_to: AssignedTo) -> list[str]:
    """Assign open incidents (all or nothing); returns their ids."""
    if not incident_ids:
        raise errors.invalid("incident_ids", "is required")
    rows = await load_all(conn, actor, unique_ids(incident_ids))
    require_progress(rows, OPEN, "Closed incidents cannot be assigned")
    for row in rows:
        kind = "reassign" if loads(row.assigned_to) else "assign"
        if assigned_to.type in ("escalate", "reopen"):
            kind = assigned_to.type
        await _apply_assignment(conn, actor, row, await _assignment(
            conn, actor, assigned_to, "assigned_to", kind))
    return [r.incident_id for r in rows]


# Editable text fields: request field -> (column, feed entry type).
_RESETTABLE = {
    "title": feed.RESET_TITLE,
    "description": feed.RESET_DESCRIPTION,
    "impact": feed.RESET_IMPACT,
    "root_cause": feed.RESET_ROOT_CAUSE,
    "resolution": feed.RESET_RESOLUTION,
    "incident_severity": feed.RESET_SEVERITY,
}


@writes("/incident/reset", INCIDENT_MANAGE, inputs=ResetInput)
async def reset(
    conn: AsyncConnection, actor: Actor, *, incident_id: str, title: str | None = None,
    description: str | None = None, impact: str | None = None, root_cause: str | None = None,
    resolution: str | None = None, incident_severity: str | None = None,
) -> list[str]:
    """Edit the given fields (None: unchanged); returns the incident's id when anything
    changed, else nothing."""
    (row,) = await load_all(conn, actor, [incident_id.lower()], field="incident_id")
    given = {"title": title, "description": description, "impact": impact,
             "root_cause": root_cause, "resolution": resolution,
             "incident_severity": incident_severity}
    changes: dict[str, Any] = {}
    for name, feed_type in _RESETTABLE.items():
        value = given[name]
        if value is None:
            continue
        if name == "title":
            value = value.strip()
            if len(value) < 3:
                raise errors.invalid("title", "must be 3 to 200 characters")
        if value != getattr(row, name):
            changes[name] = (feed_type, getattr(row, name), value)
    if not changes:
        return []
    values: dict[str, Any] = {name: to for name, (_, _, to) in changes.items()}
    if "incident_severity" in changes:
        values.update(state.severity_set(values["incident_severity"], row.progress))
    values["updated_at"] = actor.now_s
    await repo.update_incident(conn, row.incident_id, values)
    for feed_type, before, after in changes.values():
        await feed.add(conn, actor, incident_id=row.incident_id, feed_type=feed_type,
                       detail={"from": before, "to": after})
    await record(conn, actor, row, feed_type=None, detail={}, kind=events.UPDATED,
                 payload={"fields": sorted(changes)})
    return [row.incident_id]


@writes("/incident/field/reset", INCIDENT_MANAGE, inputs=FieldResetInput)
async def reset_field(conn: AsyncConnection, actor: Actor, *, incident_id: str,
                      field_name: str, field_value: Any) -> list[str]:
    """Set (None: clear) a custom field's value on an incident; returns its id."""
    (row,) = await load_all(conn, actor, [incident_id.lower()], field="incident_id")
    definition, value = await field_service.validate_value(
        conn, actor, field_name=field_name, value=field_value)
    name = definition.field_name
    current: dict[str, Any] = loads(row.fields)
    if value is None:
        current.pop(name, None)
    else:
        current[name] = value
    await repo.update_incident(conn, row.incident_id,
                               {"fields": dumps(current), "updated_at": actor.now_s})
    await record(conn, actor, row, feed_type=feed.RESET_FIELD,
                 detail={"field_name": name, "to": value},
                 kind=events.UPDATED, payload={"fields": [f"fields.{name}"]})
    return [row.incident_id]


def _short(row: Any) -> dict[str, Any]:
    return {"incident_id": row.incident_id, "title": row.title, "progress": row.progress}


@writes("/incident/merge", INCIDENT_MANAGE, inputs=MergeInput)
async def merge(
    conn: AsyncConnection, actor: Actor, *, source_incident_ids: Sequence[str],
    target_incident_id: str, title: str | None = None, comment: str = "",
    owner_id: int | None = None, remove_source_incidents: bool = False,
) -> list[str]:
    """Sources join the target: their alerts move over, the target's counts are recounted,
    each source is closed (or removed) and marked merged_into the target. Returns the ids
    changed, sources first."""
    target_id = target_incident_id.lower()
    source_ids = [i for i in unique_ids(source_incident_ids) if i != target_id]
    if not source_ids:
        raise errors.invalid("source_incident_ids", "must name an incident other than the target")
    by_id = await repo.lock(conn, await visibility.scope(actor), [target_id, *source_ids])
    if target_id not in by_id:
        raise errors.ResourceNotFound("{field}: incidents not found: {ids}",
                                      field="target_incident_id", ids=target_id)
    if missing := [i for i in source_ids if i not in by_id]:
        raise errors.ResourceNotFound("{field}: incidents not found: {ids}",
                                      field="source_incident_ids", ids=", ".join(missing))
    target, sources = by_id[target_id], [by_id[i] for i in source_ids]
    state.require([target], state.MERGE_TARGET, actor.now_s, "target_incident_id")
    if owner_id is not None and not await member_service.existing_member_ids(
            conn, actor, [owner_id]):
        raise errors.invalid("owner_id", "unknown members: " + str(owner_id))
    now, person_id = actor.now_s, actor.person_id

    # The sources first: their alerts move to the target, which is then recounted.
    await conn.run_sync(state.merge_away, actor, sources, target_id,
                        remove=remove_source_incidents, detail={
                            "comment": comment, "target_incident": _short(target),
                            "remove_source_incidents": remove_source_incidents})
    carried = [r["person_id"] for s in sources for r in loads(s.responders)]
    values: dict[str, Any] = {
        **await conn.run_sync(state.counts, target_id),
        "responders": dumps(responders_adding(target.responders, carried, now)),
        "last_time": max(target.last_time, *(s.last_time for s in sources)),
        "updated_at": now,
    }
    if title is not None and title.strip():
        values["title"] = title.strip()
    if owner_id is not None:
        values["owner_id"] = owner_id
    await repo.update_incident(conn, target_id, values)
    await record(conn, actor, target, feed_type=feed.MERGE, detail={
        "comment": comment, "source_incidents": [_short(s) for s in sources],
        "target_incident": _short(target), "owner_id": person_id,
        "title": values.get("title", target.title),
        "remove_source_incidents": remove_source_incidents,
        "source_responders": list(dict.fromkeys(carried)),
    }, kind=events.MERGED, payload={"role": "target", "source_incident_ids": source_ids})
    return [*source_ids, target_id]
