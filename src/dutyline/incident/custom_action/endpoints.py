"""/incident/custom-action/do."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.incident.custom_action import service
from dutyline.incident.custom_action.schemas import (
    DoIncidentCustomActionRequest,
    DoIncidentCustomActionResponse,
)

router = Router("Incidents")


@router.post("/incident/custom-action/do", service=service.record_answer, write=True,
             outbound=True)
async def incident_custom_action_do(
    ctx: Context, req: DoIncidentCustomActionRequest
) -> DoIncidentCustomActionResponse:
    """Run a custom action of the incident's channel: the incident is POSTed, signed, to the
    action's webhook, and the answer recorded in the incident's feed (`i_custom`). `message`
    is empty on success, else why the call failed."""
    called = await service.call_action(ctx.conn, ctx.actor, incident_id=req.incident_id,
                                       integration_id=req.integration_id,
                                       deps=ctx.runtime.deps)
    await ctx.begin_writes()
    message = await service.record_answer(ctx.conn, ctx.actor, called=called)
    return DoIncidentCustomActionResponse(message=message)
