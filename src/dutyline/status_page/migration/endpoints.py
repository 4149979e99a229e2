"""/status-page/migrate-structure, /migrate-email-subscribers, /migration/status|cancel."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.status_page.migration import service
from dutyline.status_page.migration.schemas import (
    MigrateStructureRequest,
    MigrateSubscribersRequest,
    MigrationJob,
    MigrationJobLookup,
    MigrationStartResponse,
)

router = Router("Status page migration")


@router.post("/status-page/migrate-structure", service=service.start_structure, write=True)
async def migrate_structure(ctx: Context, req: MigrateStructureRequest) -> MigrationStartResponse:
    """Start importing a Statuspage page's structure and history into a new status page."""
    job_id = await service.start_structure(
        ctx.conn, ctx.actor, api_key=req.api_key, source_page_id=req.source_page_id,
        deps=ctx.runtime.deps)
    ctx.audit_targets.append(job_id)
    return MigrationStartResponse(job_id=job_id)


@router.post("/status-page/migrate-email-subscribers", service=service.start_subscribers,
             write=True)
async def migrate_email_subscribers(
    ctx: Context, req: MigrateSubscribersRequest
) -> MigrationStartResponse:
    """Start importing a Statuspage page's email subscribers into an existing status page."""
    job_id = await service.start_subscribers(
        ctx.conn, ctx.actor, api_key=req.api_key, source_page_id=req.source_page_id,
        target_page_id=req.target_page_id, deps=ctx.runtime.deps)
    ctx.audit_targets.append(job_id)
    return MigrationStartResponse(job_id=job_id)


@router.post("/status-page/migration/status", also_get=True)
def migration_status(conn: Connection, ctx: Context, req: MigrationJobLookup) -> MigrationJob:
    """The state and progress of one of the account's migration jobs."""
    return service.get_status_sync(conn, ctx.actor, job_id=req.job_id)


@router.post("/status-page/migration/cancel", service=service.cancel, write=True)
async def migration_cancel(ctx: Context, req: MigrationJobLookup) -> None:
    """Cancel a pending or running migration job; it stops at its next step."""
    await service.cancel(ctx.conn, ctx.actor, job_id=req.job_id)
    ctx.audit_targets.append(req.job_id)
