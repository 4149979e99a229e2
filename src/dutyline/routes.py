"""Every domain's operations, in one list the app and the OpenAPI document read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dutyline.aisre.a2a.endpoints import router as a2a_router
from dutyline.aisre.mcp.endpoints import router as mcp_router
from dutyline.api.operation import Router
from dutyline.channel.endpoints import router as channel_router
from dutyline.channel.integration.endpoints import router as integration_router
from dutyline.incident.alert.endpoints import router as alert_router
from dutyline.incident.field.endpoints import router as field_router
from dutyline.incident.lifecycle.endpoints import router as incident_write_router
from dutyline.incident.query.endpoints import router as incident_read_router
from dutyline.platform.app_key.endpoints import router as app_key_router
from dutyline.platform.audit.endpoints import router as audit_router
from dutyline.platform.member.endpoints import router as member_router
from dutyline.platform.role.endpoints import router as role_router
from dutyline.platform.team.endpoints import router as team_router
from dutyline.status_page.change.endpoints import router as status_change_router
from dutyline.status_page.migration.endpoints import router as status_migration_router
from dutyline.status_page.page.endpoints import router as status_page_router
from dutyline.status_page.subscriber.endpoints import router as status_subscriber_router

if TYPE_CHECKING:
    from starlette.routing import Route

    from dutyline.api.runtime import Runtime


def all_routers() -> list[Router]:
    return [member_router, role_router, app_key_router, team_router, audit_router,
            channel_router, integration_router, field_router, incident_read_router,
            incident_write_router, alert_router, a2a_router, mcp_router,
            status_page_router, status_change_router, status_subscriber_router,
            status_migration_router]


def extra_routes(runtime: Runtime) -> list[Route]:
    """Routes outside the operation layer, with their own authentication (alert ingestion
    by integration key: the same envelope and headers; public status pages: HTML and feeds)."""
    from dutyline.incident.ingest.endpoint import routes as ingest_routes
    from dutyline.status_page.public.routes import routes as status_public_routes

    return [*ingest_routes(runtime), *status_public_routes(runtime)]
