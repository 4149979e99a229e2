"""/incident/create|ack|unack|resolve|reopen|snooze|wake|reset|remove|comment|assign|merge,
/incident/responder/add, /incident/disable-merge and /incident/field/reset: writes, for
members holding incident_manage."""

from __future__ import annotations

import msgspec

from dutyline.api.operation import Context, Router
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident.lifecycle import editing, responders, service
from dutyline.incident.lifecycle.schemas import (
    AddIncidentResponderRequest,
    AssignIncidentRequest,
    CommentIncidentRequest,
    CreateIncidentRequest,
    CreateIncidentResponse,
    DisableIncidentMergeRequest,
    IncidentIdsRequest,
    MergeIncidentsRequest,
    RemoveIncidentRequest,
    ReopenIncidentRequest,
    ResetIncidentFieldRequest,
    ResolveIncidentRequest,
    SnoozeIncidentRequest,
    UpdateIncidentFieldsRequest,
)

router = Router("Incidents")
_MANAGE = (INCIDENT_MANAGE,)


@router.post("/incident/create", service=editing.create, write=True)
async def incident_create(ctx: Context, req: CreateIncidentRequest) -> CreateIncidentResponse:
    """Open an incident by hand, standalone or in a channel."""
    created = await editing.create(
        ctx.conn, ctx.actor, incident_severity=req.incident_severity, title=req.title,
        description=req.description, channel_id=req.channel_id, assigned_to=req.assigned_to)
    ctx.audit_targets.append(created.incident_id)
    return created


@router.post("/incident/ack", service=service.ack, write=True)
async def incident_ack(ctx: Context, req: IncidentIdsRequest) -> None:
    """Acknowledge Triggered incidents (to Processing); all or nothing."""
    ctx.audit_targets.extend(await service.ack(ctx.conn, ctx.actor,
                                               incident_ids=req.incident_ids))


@router.post("/incident/unack", service=service.unack, write=True)
async def incident_unack(ctx: Context, req: IncidentIdsRequest) -> None:
    """Take back an acknowledgement (Processing to Triggered); all or nothing."""
    ctx.audit_targets.extend(await service.unack(ctx.conn, ctx.actor,
                                                 incident_ids=req.incident_ids))


@router.post("/incident/resolve", service=service.resolve, write=True)
async def incident_resolve(ctx: Context, req: ResolveIncidentRequest) -> None:
    """Close open incidents and recover their active alerts; all or nothing."""
    ctx.audit_targets.extend(await service.resolve(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids, root_cause=req.root_cause,
        resolution=req.resolution))


@router.post("/incident/reopen", service=service.reopen, write=True)
async def incident_reopen(ctx: Context, req: ReopenIncidentRequest) -> None:
    """Reopen Closed incidents (back to Triggered, dispatched again); all or nothing."""
    ctx.audit_targets.extend(await service.reopen(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids, reason=req.reason))


@router.post("/incident/snooze", service=service.snooze, write=True)
async def incident_snooze(ctx: Context, req: SnoozeIncidentRequest) -> None:
    """Hold notifications of open incidents for 1 to 1440 minutes."""
    ctx.audit_targets.extend(await service.snooze(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids, minutes=req.minutes))


@router.post("/incident/wake", service=service.wake, write=True)
async def incident_wake(ctx: Context, req: IncidentIdsRequest) -> None:
    """End the snooze of snoozed incidents."""
    ctx.audit_targets.extend(await service.wake(ctx.conn, ctx.actor,
                                                incident_ids=req.incident_ids))


@router.post("/incident/reset", service=editing.reset, write=True)
async def incident_reset(ctx: Context, req: UpdateIncidentFieldsRequest) -> None:
    """Edit title, description, impact, root cause, resolution or severity."""
    ctx.audit_targets.extend(await editing.reset(
        ctx.conn, ctx.actor, incident_id=req.incident_id, title=req.title,
        description=req.description, impact=req.impact, root_cause=req.root_cause,
        resolution=req.resolution, incident_severity=req.incident_severity))


@router.post("/incident/remove", service=service.remove, write=True)
async def incident_remove(ctx: Context, req: RemoveIncidentRequest) -> None:
    """Remove incidents: they disappear from every read."""
    ctx.audit_targets.extend(await service.remove(ctx.conn, ctx.actor,
                                                  incident_ids=req.incident_ids))


@router.post("/incident/comment", service=service.comment, write=True)
async def incident_comment(ctx: Context, req: CommentIncidentRequest) -> None:
    """Add a comment to the timeline of incidents."""
    ctx.audit_targets.extend(await service.comment(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids, comment=req.comment,
        mute_reply=req.mute_reply))


@router.post("/incident/assign", service=editing.assign, write=True)
async def incident_assign(ctx: Context, req: AssignIncidentRequest) -> None:
    """Assign open incidents to members or an escalation rule."""
    ctx.audit_targets.extend(await editing.assign(
        ctx.conn, ctx.actor, assigned_to=req.assigned_to,
        incident_ids=req.incident_ids or ([req.incident_id] if req.incident_id else [])))


@router.post("/incident/merge", service=editing.merge, write=True)
async def incident_merge(ctx: Context, req: MergeIncidentsRequest) -> None:
    """Merge source incidents into a target: alerts move, sources close."""
    ctx.audit_targets.extend(await editing.merge(
        ctx.conn, ctx.actor, source_incident_ids=req.source_incident_ids,
        target_incident_id=req.target_incident_id, title=req.title, comment=req.comment,
        owner_id=req.owner_id, remove_source_incidents=req.remove_source_incidents))


@router.post("/incident/field/reset", service=editing.reset_field, write=True)
async def incident_field_reset(ctx: Context, req: ResetIncidentFieldRequest) -> None:
    """Set the value of a custom field of an incident."""
    ctx.audit_targets.extend(await editing.reset_field(
        ctx.conn, ctx.actor, incident_id=req.incident_id, field_name=req.field_name,
        field_value=req.field_value))


@router.post("/incident/responder/add", service=responders.add_responders, write=True)
async def incident_responder_add(ctx: Context, req: AddIncidentResponderRequest) -> None:
    """Add members as responders of an open incident."""
    await responders.add_responders(
        ctx.conn, ctx.actor, incident_id=req.incident_id, person_ids=req.person_ids,
        notify=None if req.notify is None else msgspec.to_builtins(req.notify))


@router.post("/incident/disable-merge", service=responders.disable_merge, write=True)
async def incident_disable_merge(ctx: Context, req: DisableIncidentMergeRequest) -> None:
    """Stop incidents from taking new alerts through grouping; all or nothing."""
    ctx.audit_targets.extend(await responders.disable_merge(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids))
