"""/incident/silence/quick: a silence rule of the incident's channel made from the incident
(its labels, else its title). The rule is the channel domain's; finding the incident is this
domain's, so the operation lives here and calls the channel's noise service."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.api.operation import Context, Router
from dutyline.channel.noise import service as noise
from dutyline.channel.noise.service import QuickSilenceRequest, RuleCreateResponse
from dutyline.incident.query import service as incidents

router = Router("Channel noise rules")


async def incident_is_visible(conn: AsyncConnection, actor: Actor, incident_id: str) -> None:
    """A silence rule made from an incident names one the caller sees (another account's,
    or one in a channel hidden from the caller: not found)."""
    await incidents.require_visible(conn, actor, incident_id=incident_id)


@router.post("/incident/silence/quick", service=noise.quick_silence, write=True)
async def incident_silence_quick(ctx: Context, req: QuickSilenceRequest) -> RuleCreateResponse:
    """Silence alerts like this incident's (same labels, else same title) for `minutes`."""
    found = await incidents.incident_info(ctx.conn, ctx.actor, incident_id=req.incident_id,
                                          deps=ctx.runtime.deps)
    rule_id, rule_name = await noise.quick_silence(
        ctx.conn, ctx.actor, channel_id=found.channel_id, incident_id=found.incident_id,
        title=found.title, labels=found.labels, minutes=req.minutes, rule_name=req.rule_name)
    return RuleCreateResponse(rule_id=rule_id, rule_name=rule_name)
