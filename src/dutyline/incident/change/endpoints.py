"""/change/list: the change events of the account's channels, for any member who may read
incidents (the changes are shown on them)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.incident.change import service
from dutyline.incident.change.schemas import ListChangesRequest, ListChangesResponse

router = Router("Changes")


@router.post("/change/list", service=service.list_changes_sync)
def change_list(conn: Connection, ctx: Context, req: ListChangesRequest) -> ListChangesResponse:
    """List change events (deployments, configuration changes, feature flags), latest start
    first."""
    total, items = service.list_changes_sync(
        conn, ctx.actor, change_ids=req.change_ids, channel_ids=req.channel_ids,
        start_time=req.start_time, end_time=req.end_time, type_=req.type,
        offset=req.offset, limit=req.limit)
    return ListChangesResponse(total=total, items=items)
