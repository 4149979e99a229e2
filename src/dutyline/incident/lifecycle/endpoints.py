"""/incident/create|ack|unack|resolve|reopen|snooze|wake|reset|remove|comment|assign|merge,
/incident/responder/add, /incident/disable-merge and /incident/field/reset: writes, for
members holding incident_manage."""

from __future__ import annotations

import msgspec

from dutyline.api.operation import Context, Router
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
from dutyline.platform.permissions import INCIDENT_MANAGE

router = Router("Incidents")
_MANAGE = (INCIDENT_MANAGE,)


@router.post("/incident/create", permissions=_MANAGE, write=True)
async def incident_create(ctx: Context, req: CreateIncidentRequest) -> CreateIncidentResponse:
    """Open an incident by hand, standalone or in a channel."""
    return await editing.create(ctx, req)


@router.post("/incident/ack", permissions=_MANAGE, write=True)
async def incident_ack(ctx: Context, req: IncidentIdsRequest) -> None:
    """Acknowledge Triggered incidents (to Processing); all or nothing."""
    await service.ack(ctx, req)


@router.post("/incident/unack", permissions=_MANAGE, write=True)
async def incident_unack(ctx: Context, req: IncidentIdsRequest) -> None:
    """Take back an acknowledgement (Processing to Triggered); all or nothing."""
    await service.unack(ctx, req)


@router.post("/incident/resolve", permissions=_MANAGE, write=True)
async def incident_resolve(ctx: Context, req: ResolveIncidentRequest) -> None:
    """Close open incidents and recover their active alerts; all or nothing."""
    await service.resolve(ctx, req)


@router.post("/incident/reopen", permissions=_MANAGE, write=True)
async def incident_reopen(ctx: Context, req: ReopenIncidentRequest) -> None:
    """Reopen Closed incidents (back to Triggered, dispatched again); all or nothing."""
    await service.reopen(ctx, req)


@router.post("/incident/snooze", permissions=_MANAGE, write=True)
async def incident_snooze(ctx: Context, req: SnoozeIncidentRequest) -> None:
    """Hold notifications of open incidents for 1 to 1440 minutes."""
    await service.snooze(ctx, req)


@router.post("/incident/wake", permissions=_MANAGE, write=True)
async def incident_wake(ctx: Context, req: IncidentIdsRequest) -> None:
    """End the snooze of snoozed incidents."""
    await service.wake(ctx, req)


@router.post("/incident/reset", permissions=_MANAGE, write=True)
async def incident_reset(ctx: Context, req: UpdateIncidentFieldsRequest) -> None:
    """Edit title, description, impact, root cause, resolution or severity."""
    await editing.reset(ctx, req)


@router.post("/incident/remove", permissions=_MANAGE, write=True, dangerous=True)
async def incident_remove(ctx: Context, req: RemoveIncidentRequest) -> None:
    """Remove incidents: they disappear from every read."""
    await service.remove(ctx, req)


@router.post("/incident/comment", permissions=_MANAGE, write=True)
async def incident_comment(ctx: Context, req: CommentIncidentRequest) -> None:
    """Add a comment to the timeline of incidents."""
    await service.comment(ctx, req)


@router.post("/incident/assign", permissions=_MANAGE, write=True)
async def incident_assign(ctx: Context, req: AssignIncidentRequest) -> None:
    """Assign open incidents to members or an escalation rule."""
    await editing.assign(ctx, req)


@router.post("/incident/merge", permissions=_MANAGE, write=True)
async def incident_merge(ctx: Context, req: MergeIncidentsRequest) -> None:
    """Merge source incidents into a target: alerts move, sources close."""
    await editing.merge(ctx, req)


@router.post("/incident/field/reset", permissions=_MANAGE, write=True)
async def incident_field_reset(ctx: Context, req: ResetIncidentFieldRequest) -> None:
    """Set the value of a custom field of an incident."""
    await editing.reset_field(ctx, req)


@router.post("/incident/responder/add", permissions=_MANAGE, write=True)
async def incident_responder_add(ctx: Context, req: AddIncidentResponderRequest) -> None:
    """Add members as responders of an open incident."""
    await responders.add_responders(
        ctx.conn, ctx.actor, incident_id=req.incident_id, person_ids=req.person_ids,
        notify=None if req.notify is None else msgspec.to_builtins(req.notify))
    ctx.audit_targets.append(req.incident_id.lower())


@router.post("/incident/disable-merge", permissions=_MANAGE, write=True)
async def incident_disable_merge(ctx: Context, req: DisableIncidentMergeRequest) -> None:
    """Stop incidents from taking new alerts through grouping; all or nothing."""
    ctx.audit_targets.extend(await responders.disable_merge(
        ctx.conn, ctx.actor, incident_ids=req.incident_ids))
