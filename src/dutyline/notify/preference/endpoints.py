"""/member/notify/info|reset: a member's contact methods and notification preferences."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.types import SaveWarnings
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.notify.preference import service
from dutyline.notify.preference.schemas import (
    MemberNotifyInfoRequest,
    MemberNotifyItem,
    MemberNotifyResetRequest,
)

router = Router("Members")


@router.post("/member/notify/info")
def member_notify_info(conn: Connection, ctx: Context,
                       req: MemberNotifyInfoRequest) -> MemberNotifyItem:
    """A member's contacts, chat handles and channels per severity (the caller's own unless
    `member_id` names another, which needs account management)."""
    return service.notify_info_sync(conn, ctx.actor, member_id=req.member_id)


@router.post("/member/notify/reset", write=True)
async def member_notify_reset(ctx: Context, req: MemberNotifyResetRequest) -> SaveWarnings:
    """Set a member's chat handles (`im`) and channels per severity (`critical`, `warning`,
    `info`) that escalation layers with `by.follow_preference` use; omitted fields stay.
    `warnings` names a channel or handle the server's settings cannot page."""
    ctx.audit_targets.append(await service.notify_reset(
        ctx.conn, ctx.actor, member_id=req.member_id, im=req.im, critical=req.critical,
        warning=req.warning, info=req.info))
    return SaveWarnings(warnings=service.delivery_warnings(
        ctx.runtime.settings, im=req.im,
        by_severity={key: getattr(req, key) for key in SEVERITY_KEYS}))
