"""/alert/pipeline/upsert|info|list: an integration's processing rules. Reading needs
integration view or management, writing integration management; writes are audited with the
integration's id."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from sqlalchemy import Connection

from dutyline.api.operation import Context, Router
from dutyline.api.types import Id
from dutyline.channel.pipeline import service
from dutyline.channel.pipeline.service import PipelineItem

router = Router("Alert pipelines")


class PipelineInfoRequest(msgspec.Struct, kw_only=True):
    integration_id: Id


class PipelineListRequest(msgspec.Struct, kw_only=True):
    integration_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class PipelineUpsertRequest(msgspec.Struct, kw_only=True):
    integration_id: Id
    rules: Annotated[list[Any], msgspec.Meta(max_length=50)]


class PipelineListResponse(msgspec.Struct, kw_only=True):
    items: list[PipelineItem]


@router.post("/alert/pipeline/upsert", service=service.upsert, write=True)
async def pipeline_upsert(ctx: Context, req: PipelineUpsertRequest) -> None:
    """Replace an integration's pipeline: title/description/severity rewrites and drops run
    on every event it receives, before enrichment and grouping."""
    await service.upsert(ctx.conn, ctx.actor, integration_id=req.integration_id,
                         rules=req.rules)


@router.post("/alert/pipeline/info", service=service.info_sync)
def pipeline_info(conn: Connection, ctx: Context, req: PipelineInfoRequest) -> PipelineItem:
    """An integration's pipeline (an empty, enabled one when none was written)."""
    return service.info_sync(conn, ctx.actor, integration_id=req.integration_id)


@router.post("/alert/pipeline/list", service=service.list_pipelines_sync)
def pipeline_list(conn: Connection, ctx: Context,
                  req: PipelineListRequest) -> PipelineListResponse:
    """The pipelines written for these integrations of the account."""
    return PipelineListResponse(items=service.list_pipelines_sync(
        conn, ctx.actor, integration_ids=list(dict.fromkeys(req.integration_ids))))
