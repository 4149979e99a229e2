"""Requests and records of the migration operations (reference schemas
MigrateStatusPageStructureRequest, MigrateStatusPageEmailSubscribersRequest,
CancelStatusPageMigrationRequest, StatusPageMigrationJob, StatusPageMigrationProgress)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.secret import SECRET
from dutyline.api.types import Id

# Printable ASCII is checked by the service (msgspec has no such constraint); the length bounds
# keep a pasted document from being sealed and stored. Real Statuspage keys are 36 characters.
ApiKey = Annotated[str, msgspec.Meta(min_length=1, max_length=256), SECRET]
# Statuspage page ids are short alphanumerics; the service checks the characters, since the id
# becomes a path segment of the source URL.
SourcePageId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
JobId = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class MigrateStructureRequest(msgspec.Struct, kw_only=True):
    api_key: ApiKey
    source_page_id: SourcePageId


class MigrateSubscribersRequest(msgspec.Struct, kw_only=True):
    api_key: ApiKey
    source_page_id: SourcePageId
    target_page_id: Id


class MigrationJobLookup(msgspec.Struct, kw_only=True):
    job_id: JobId


class MigrationStartResponse(msgspec.Struct, kw_only=True):
    job_id: str


class MigrationProgress(msgspec.Struct, kw_only=True):
    total_steps: int = 0
    completed_steps: int = 0
    components_imported: int = 0
    sections_imported: int = 0
    incidents_imported: int = 0
    maintenances_imported: int = 0
    subscribers_imported: int = 0
    templates_imported: int = 0
    subscribers_skipped: int = 0
    warnings: list[str] = msgspec.field(default_factory=list)


class MigrationJob(msgspec.Struct, kw_only=True, omit_defaults=True):
    job_id: str
    account_id: int
    source_page_id: str
    target_page_id: int
    phase: str
    status: str
    progress: MigrationProgress
    created_at: int
    updated_at: int
    # Only when the job failed (omitted otherwise, as the reference's optional field).
    error: str = ""
