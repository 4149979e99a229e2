"""/enrichment/mapping/schema/*, /enrichment/mapping/data/* and /enrichment/upsert|info|list.

Who may read and write: enrichment/permissions.py. Every write is audited with the schema or
integration id, which the services note themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.operation import Context, Empty, Router, StreamedDownload
from dutyline.enrichment import service, settings
from dutyline.enrichment.schemas import (
    DataDeleteRequest,
    DataListRequest,
    DataListResponse,
    DataUploadRequest,
    DataUpsertRequest,
    DataUpsertResponse,
    EnrichmentInfoRequest,
    EnrichmentItem,
    EnrichmentListRequest,
    EnrichmentListResponse,
    EnrichmentUpsertRequest,
    MappingSchemaItem,
    SchemaCreateRequest,
    SchemaCreateResponse,
    SchemaIDRequest,
    SchemaListResponse,
    SchemaUpdateRequest,
)
from dutyline.enrichment.tabular import MAX_UPLOAD_BYTES

router = Router("Enrichment")



# -- schemas ------------------------------------------------------------------------------------


@router.post("/enrichment/mapping/schema/create", service=service.create_schema, write=True)
async def schema_create(ctx: Context, req: SchemaCreateRequest) -> SchemaCreateResponse:
    """Create a mapping schema: source labels (1-3) looked up, result labels (1-10) added."""
    return await service.create_schema(
        ctx.conn, ctx.actor, schema_name=req.schema_name, source_labels=req.source_labels,
        result_labels=req.result_labels, description=req.description, team_id=req.team_id)


@router.post("/enrichment/mapping/schema/info", service=service.schema_info_sync)
def schema_info(conn: Connection, ctx: Context, req: SchemaIDRequest) -> MappingSchemaItem:
    """One mapping schema."""
    return service.schema_info_sync(conn, ctx.actor, schema_id=req.schema_id)


@router.post("/enrichment/mapping/schema/list", service=service.list_schemas_sync)
def schema_list(conn: Connection, ctx: Context, req: Empty) -> SchemaListResponse:
    """The account's mapping schemas, oldest first."""
    items = service.list_schemas_sync(conn, ctx.actor)
    return SchemaListResponse(total=len(items), items=items)


@router.post("/enrichment/mapping/schema/update", service=service.update_schema, write=True)
async def schema_update(ctx: Context, req: SchemaUpdateRequest) -> None:
    """Rename a schema, or change its description or team (labels are fixed)."""
    await service.update_schema(ctx.conn, ctx.actor, schema_id=req.schema_id,
                                schema_name=req.schema_name, description=req.description,
                                team_id=req.team_id)


@router.post("/enrichment/mapping/schema/delete", service=service.delete_schema, write=True)
async def schema_delete(ctx: Context, req: SchemaIDRequest) -> None:
    """Delete a schema and its rows; refused while an enrichment setting uses it."""
    await service.delete_schema(ctx.conn, ctx.actor, schema_id=req.schema_id)


# -- data ---------------------------------------------------------------------------------------


@router.post("/enrichment/mapping/data/list", service=service.list_data_sync)
def data_list(conn: Connection, ctx: Context, req: DataListRequest) -> DataListResponse:
    """A page of a schema's rows; `query` (every source label) finds one row."""
    return service.list_data_sync(
        conn, ctx.actor, schema_id=req.schema_id, query=req.query, orderby=req.orderby,
        asc=req.asc, p=req.p, limit=req.limit, search_after_ctx=req.search_after_ctx)


@router.post("/enrichment/mapping/data/upsert", service=service.upsert_data, write=True)
async def data_upsert(ctx: Context, req: DataUpsertRequest) -> DataUpsertResponse:
    """Insert or replace up to 1,000 rows, each with every source and result label."""
    keys = await service.upsert_data(ctx.conn, ctx.actor, schema_id=req.schema_id,
                                     docs=req.docs)
    return DataUpsertResponse(keys=keys)


@router.post("/enrichment/mapping/data/delete", service=service.delete_data, write=True)
async def data_delete(ctx: Context, req: DataDeleteRequest) -> None:
    """Delete up to 100 rows by key (unknown keys are ignored)."""
    await service.delete_data(ctx.conn, ctx.actor, schema_id=req.schema_id, keys=req.keys)


@router.post("/enrichment/mapping/data/truncate", service=service.truncate_data, write=True)
async def data_truncate(ctx: Context, req: SchemaIDRequest) -> None:
    """Delete every row of a schema."""
    await service.truncate_data(ctx.conn, ctx.actor, schema_id=req.schema_id)


@router.post("/enrichment/mapping/data/upload", service=service.upload_data, write=True,
             max_body_bytes=MAX_UPLOAD_BYTES + 64 * 1024, raw_body=True)
async def data_upload(ctx: Context, req: DataUploadRequest) -> None:
    """Load a CSV (header: the schema's labels), replacing the rows unless `truncate` is
    false; all or nothing. The CSV is the body (`text/csv`, or the `file` part of a
    multipart form, `schema_id` in the query string) or the `file` field of a JSON body."""
    data = ctx.raw_body if ctx.raw_body is not None else req.file.encode()
    if not data.strip():
        raise errors.invalid("file", "is required (the CSV text)")
    await service.upload_data(ctx.conn, ctx.actor, schema_id=req.schema_id, data=data,
                              truncate=req.truncate)


@router.post("/enrichment/mapping/data/download", service=service.download_header, response=str)
async def data_download(ctx: Context, req: SchemaIDRequest) -> StreamedDownload:
    """Every row as CSV (source labels, then result labels), streamed as an attachment;
    with `Accept: application/json`, the envelope with the CSV text in `data`."""
    schema_id, name, header = await service.download_header(ctx.conn, ctx.actor,
                                                            schema_id=req.schema_id)
    db = ctx.runtime.db

    def chunks() -> AsyncIterator[bytes]:
        return service.stream_csv(db, schema_id, header)

    return StreamedDownload(filename=f"{name}.csv", chunks=chunks)


# -- enrichment settings ------------------------------------------------------------------------


@router.post("/enrichment/upsert", service=settings.upsert, write=True)
async def enrichment_upsert(ctx: Context, req: EnrichmentUpsertRequest) -> None:
    """Replace an integration's enrichment rules (extraction, composition, mapping, drop),
    applied in order to every alert it receives, before grouping and noise rules."""
    await settings.upsert(ctx.conn, ctx.actor, integration_id=req.integration_id,
                          rules=req.rules)


@router.post("/enrichment/info", service=settings.info_sync)
def enrichment_info(conn: Connection, ctx: Context,
                    req: EnrichmentInfoRequest) -> EnrichmentItem:
    """An integration's enrichment rules (an empty, enabled set when none were written)."""
    return settings.info_sync(conn, ctx.actor, integration_id=req.integration_id)


@router.post("/enrichment/list", service=settings.list_settings_sync)
def enrichment_list(conn: Connection, ctx: Context,
                    req: EnrichmentListRequest) -> EnrichmentListResponse:
    """The enrichment rules written for these integrations of the account."""
    items = settings.list_settings_sync(
        conn, ctx.actor, integration_ids=list(dict.fromkeys(req.integration_ids)))
    return EnrichmentListResponse(items=items)
