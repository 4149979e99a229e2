"""Requests and records of mapping schemas, mapping data and enrichment settings (reference:
MappingSchema*, MappingData*, EnrichmentUpsertRequest, EnrichmentItem, EnrichRule).

Rules and filters arrive as plain JSON (`Any`) and are checked by the service, which names the
offending part (`rules[2].settings.schema_id`)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from dutyline.api.types import Id, NonNegInt64

SchemaId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]
SchemaName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
LabelName = Annotated[str, msgspec.Meta(pattern="^[A-Za-z_][A-Za-z0-9_.\\-]{0,127}$")]
# A row key: the source values, escaped and joined (enrichment/keys.py).
RowKey = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
MAX_SOURCE_LABELS = 3
MAX_RESULT_LABELS = 10
MAX_UPSERT_DOCS = 1000
MAX_DELETE_KEYS = 100


class SchemaIDRequest(msgspec.Struct, kw_only=True):
    schema_id: SchemaId


class SchemaCreateRequest(msgspec.Struct, kw_only=True):
    schema_name: SchemaName
    source_labels: Annotated[list[LabelName], msgspec.Meta(min_length=1,
                                                           max_length=MAX_SOURCE_LABELS)]
    result_labels: Annotated[list[LabelName], msgspec.Meta(min_length=1,
                                                           max_length=MAX_RESULT_LABELS)]
    description: Description = ""
    team_id: NonNegInt64 = 0


class SchemaCreateResponse(msgspec.Struct, kw_only=True):
    schema_id: str
    schema_name: str


class SchemaUpdateRequest(msgspec.Struct, kw_only=True):
    schema_id: SchemaId
    schema_name: SchemaName | None = None
    description: Description | None = None
    team_id: NonNegInt64 | None = None


class MappingSchemaItem(msgspec.Struct, kw_only=True):
    schema_id: str
    schema_name: str
    description: str
    source_labels: list[str]
    result_labels: list[str]
    status: str
    team_id: int
    creator_id: int
    updated_by: int
    created_at: int
    updated_at: int


class SchemaListResponse(msgspec.Struct, kw_only=True):
    total: int
    items: list[MappingSchemaItem]


class DataListRequest(msgspec.Struct, kw_only=True):
    schema_id: SchemaId
    query: Annotated[dict[str, Annotated[str, msgspec.Meta(max_length=255)]],
                     msgspec.Meta(max_length=MAX_SOURCE_LABELS)] = msgspec.field(
        default_factory=dict)
    orderby: Annotated[str, msgspec.Meta(pattern="^(created_at|updated_at|)$")] = ""
    asc: bool = False
    p: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 1
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20
    search_after_ctx: Annotated[str, msgspec.Meta(max_length=4096)] = ""

    def __post_init__(self) -> None:
        # Deep pages go by cursor (search_after_ctx), which has no such bound.
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000; page on with search_after_ctx")


class MappingDataItem(msgspec.Struct, kw_only=True):
    key: str
    fields: dict[str, str]
    created_at: int
    updated_at: int


class DataListResponse(msgspec.Struct, kw_only=True):
    items: list[MappingDataItem]
    total: int
    has_next_page: bool
    search_after_ctx: str = ""


class DataUpsertRequest(msgspec.Struct, kw_only=True):
    schema_id: SchemaId
    docs: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1,
                                                       max_length=MAX_UPSERT_DOCS)]


class DataUpsertResponse(msgspec.Struct, kw_only=True):
    keys: list[str]


class DataDeleteRequest(msgspec.Struct, kw_only=True):
    schema_id: SchemaId
    keys: Annotated[list[RowKey], msgspec.Meta(min_length=1, max_length=MAX_DELETE_KEYS)]


class DataUploadRequest(msgspec.Struct, kw_only=True):
    """JSON form of the upload: the CSV text in `file`. The same operation also takes the
    CSV itself as the body (`text/csv`, or `multipart/form-data` with a `file` part) with
    `schema_id` (and `truncate`) in the query string."""

    schema_id: SchemaId
    file: str = ""
    # The reference: "by default the existing data is truncated before loading".
    truncate: bool = True


# -- enrichment settings ---------------------------------------------------------------------


class EnrichmentInfoRequest(msgspec.Struct, kw_only=True):
    integration_id: Id


class EnrichmentListRequest(msgspec.Struct, kw_only=True):
    integration_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class EnrichmentUpsertRequest(msgspec.Struct, kw_only=True):
    integration_id: Id
    rules: Annotated[list[Any], msgspec.Meta(max_length=50)]


class EnrichmentItem(msgspec.Struct, kw_only=True):
    integration_id: int
    rules: list[Any]
    status: str
    updated_by: int
    creator_id: int
    created_at: int
    updated_at: int


class EnrichmentListResponse(msgspec.Struct, kw_only=True):
    items: list[EnrichmentItem]
