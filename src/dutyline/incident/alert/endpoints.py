"""/alert/* read operations (permission: channel view)."""

from __future__ import annotations

from dutyline.api.operation import Context, Router
from dutyline.incident.alert import service
from dutyline.incident.alert.schemas import (
    AlertEventListRequest,
    AlertEventListResponse,
    AlertItem,
    AlertListRequest,
    AlertListResponse,
    AlertLookup,
)
from dutyline.platform.permissions import CHANNEL_VIEW

router = Router("Alerts")
VIEW = (CHANNEL_VIEW,)


@router.post("/alert/list", request=AlertListRequest, response=AlertListResponse,
             permissions=VIEW)
async def alert_list(ctx: Context, req: AlertListRequest) -> AlertListResponse:
    """List the account's alerts in a time range (at most 31 days), a page at a time."""
    return await service.list_alerts(ctx, req)


@router.post("/alert/info", request=AlertLookup, response=AlertItem, permissions=VIEW)
async def alert_info(ctx: Context, req: AlertLookup) -> AlertItem:
    """Get one alert with its incident and event count."""
    return await service.alert_info(ctx, req)


@router.post("/alert/event/list", request=AlertEventListRequest,
             response=AlertEventListResponse, permissions=VIEW)
async def alert_event_list(ctx: Context, req: AlertEventListRequest) -> AlertEventListResponse:
    """List the raw events of one alert in arrival order."""
    return await service.list_events(ctx, req)
