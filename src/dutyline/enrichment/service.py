"""Rules of mapping schemas and their data (docs/enrichment.md).

A schema names 1-3 source labels and 1-10 result labels (distinct, not overlapping; fixed
once created: the rows are keyed by the source values). A row holds one value per label; its
key is derived from the source values (enrichment/tabular.py). Every write to the rows bumps
the schema's `data_version`. Upload is all-or-nothing: it runs in the request's transaction,
and the first bad line raises before the commit. Download streams: the endpoint answers at
once and the rows follow in key order, one batch per short read transaction."""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.db.engine import Database
from dutyline.enrichment import cursor, references
from dutyline.enrichment import repository as repo
from dutyline.enrichment.api.lookup import Answers as Answers  # for ingestion
from dutyline.enrichment.api.lookup import LookupsNeeded as LookupsNeeded
from dutyline.enrichment.api.lookup import fetch as _fetch
from dutyline.enrichment.permissions import READ, WRITE
from dutyline.enrichment.schemas import (
    DataListResponse,
    MappingDataItem,
    MappingSchemaItem,
    SchemaCreateResponse,
)
from dutyline.enrichment.settings import enrich_sync as enrich_sync
from dutyline.enrichment.tabular import (
    CsvWriter,
    check_value,
    csv_line,
    parse_upload,
    row_key,
)
from dutyline.kit.ids import hex_id
from dutyline.platform.team import service as teams

_encode = msgspec.json.encode
_labels = msgspec.json.Decoder(list[str])
# For the ingest endpoint: make the mapping API calls a push raised LookupsNeeded for.
fetch_lookups = _fetch
DOWNLOAD_BATCH = 5000
UPLOAD_BATCH = 1000
# Rows one mapping schema may hold, whatever the number of uploads and upserts that fill it.
MAX_SCHEMA_ROWS = 1_000_000


def _item(row: Any) -> MappingSchemaItem:
    return MappingSchemaItem(
        schema_id=row.schema_id, schema_name=row.schema_name, description=row.description,
        source_labels=_labels.decode(row.source_labels),
        result_labels=_labels.decode(row.result_labels), status=row.status,
        team_id=row.team_id, creator_id=row.creator_id, updated_by=row.updated_by,
        created_at=row.created_at, updated_at=row.updated_at)


def _schema_sync(conn: Connection, actor: Actor, schema_id: str,
                 *, for_update: bool = False) -> Any:
    row = repo.get_schema_sync(conn, actor.account_id, schema_id, for_update=for_update)
    if row is None:
        raise errors.not_found("mapping schema", schema_id)
    return row


async def _schema(conn: AsyncConnection, actor: Actor, schema_id: str,
                  *, for_update: bool = False) -> Any:
    return await conn.run_sync(lambda c: _schema_sync(c, actor, schema_id,
                                                      for_update=for_update))


async def _check_team(conn: AsyncConnection, actor: Actor, team_id: int) -> None:
    if team_id and not await teams.existing_team_ids(conn, actor, [team_id]):
        raise errors.invalid("team_id", f"team {team_id} not found")


# -- schemas -----------------------------------------------------------------------------------


@writes("/enrichment/mapping/schema/create", *WRITE,
        targets=lambda created: [created.schema_id])
async def create_schema(conn: AsyncConnection, actor: Actor, *, schema_name: str,
                        source_labels: list[str], result_labels: list[str],
                        description: str = "", team_id: int = 0) -> SchemaCreateResponse:
    name = schema_name.strip()
    if not name:
        raise errors.invalid("schema_name", "must not be blank")
    for field, labels in (("source_labels", source_labels),
                          ("result_labels", result_labels)):
        if len(set(labels)) != len(labels):
            raise errors.invalid(field, "must not repeat a label")
    overlap = set(source_labels) & set(result_labels)
    if overlap:
        raise errors.invalid("result_labels", "must not overlap source_labels: "
                             + ",".join(sorted(overlap)))
    await _check_team(conn, actor, team_id)
    if await repo.schema_name_taken(conn, actor.account_id, name):
        raise errors.invalid("schema_name", f"{name!r} already exists")
    if await repo.count_schemas(conn, actor.account_id) >= repo.MAX_SCHEMAS:
        raise errors.invalid("schema_name", f"an account has at most {repo.MAX_SCHEMAS} "
                                            "mapping schemas")
    schema_id, now = hex_id(), actor.now_s
    try:
        await repo.insert_schema(conn, {
            "schema_id": schema_id, "account_id": actor.account_id, "team_id": team_id,
            "schema_name": name, "description": description,
            "source_labels": _encode(source_labels).decode(),
            "result_labels": _encode(result_labels).decode(), "status": "enabled",
            "creator_id": actor.person_id, "updated_by": actor.person_id,
            "created_at": now, "updated_at": now})
    except IntegrityError:
        raise errors.invalid("schema_name", f"{name!r} already exists") from None
    return SchemaCreateResponse(schema_id=schema_id, schema_name=name)


@reads_sync(*READ)
def schema_info_sync(conn: Connection, actor: Actor, *, schema_id: str) -> MappingSchemaItem:
    return _item(_schema_sync(conn, actor, schema_id))


@reads_sync(*READ)
def list_schemas_sync(conn: Connection, actor: Actor) -> list[MappingSchemaItem]:
    return [_item(r) for r in repo.list_schemas_sync(conn, actor.account_id)]


@writes("/enrichment/mapping/schema/update", *WRITE)
async def update_schema(conn: AsyncConnection, actor: Actor, *, schema_id: str,
                        schema_name: str | None = None, description: str | None = None,
                        team_id: int | None = None) -> None:
    """None keeps a field; the labels are fixed."""
    row = await _schema(conn, actor, schema_id)
    actor.note_audit_targets(row.schema_id)
    values: dict[str, Any] = {"updated_by": actor.person_id, "updated_at": actor.now_s}
    if schema_name is not None:
        name = schema_name.strip()
        if not name:
            raise errors.invalid("schema_name", "must not be blank")
        if await repo.schema_name_taken(conn, actor.account_id, name, but=row.schema_id):
            raise errors.invalid("schema_name", f"{name!r} already exists")
        values["schema_name"] = name
    if description is not None:
        values["description"] = description
    if team_id is not None:
        await _check_team(conn, actor, team_id)
        values["team_id"] = team_id
    try:
        await repo.update_schema(conn, actor.account_id, row.schema_id, values)
    except IntegrityError:
        raise errors.invalid("schema_name", "already exists") from None


@writes("/enrichment/mapping/schema/delete", *WRITE)
async def delete_schema(conn: AsyncConnection, actor: Actor, *, schema_id: str) -> str:
    row = await _schema(conn, actor, schema_id, for_update=True)
    await references.refuse_while_referenced(conn, kind="schema", ref_id=row.schema_id)
    await repo.delete_schema(conn, actor.account_id, row.schema_id)
    return str(row.schema_id)


# -- data ---------------------------------------------------------------------------------------


def _row_values(labels: tuple[list[str], list[str]], doc: dict[str, Any],
                where: str) -> list[str]:
    source, result = labels
    unknown = sorted(set(doc) - set(source) - set(result))
    if unknown:
        raise errors.invalid(where, "unknown labels: " + ",".join(unknown))
    values: list[str] = []
    for i, label in enumerate(source + result):
        value = doc.get(label)
        if not isinstance(value, str):
            raise errors.invalid(f"{where}.{label}", "is required (a string)")
        values.append(check_value(value, source=i < len(source), where=f"{where}.{label}"))
    return values


def _labels_of(row: Any) -> tuple[list[str], list[str]]:
    return _labels.decode(row.source_labels), _labels.decode(row.result_labels)


class _RowCap:
    """Keeps a schema within MAX_SCHEMA_ROWS while rows are written. A write that would pass
    it is refused whole: the error rolls back the request's transaction, so nothing of it
    stays. The schema row is locked, so concurrent writes to the schema wait their turn."""

    def __init__(self, conn: AsyncConnection, schema_id: str, held: int, field: str) -> None:
        self.conn, self.schema_id, self.field = conn, schema_id, field
        self.held = held  # rows at most, once the writes so far are in

    @classmethod
    async def of(cls, conn: AsyncConnection, schema_id: str, field: str) -> _RowCap:
        return cls(conn, schema_id, await repo.count_rows(conn, schema_id), field)

    async def wrote(self, rows: int) -> None:
        """`rows` were written (new keys or replaced ones: only a count tells)."""
        self.held += rows
        if self.held > MAX_SCHEMA_ROWS:
            self.held = await repo.count_rows(self.conn, self.schema_id)
            if self.held > MAX_SCHEMA_ROWS:
                raise errors.invalid(self.field, f"a mapping schema holds at most "
                                                 f"{MAX_SCHEMA_ROWS} rows")


# The audit names the schema, not the rows' keys the service returns.
@writes("/enrichment/mapping/data/upsert", *WRITE, targets=lambda _keys: ())
async def upsert_data(conn: AsyncConnection, actor: Actor, *, schema_id: str,
                      docs: list[dict[str, Any]]) -> list[str]:
    row = await _schema(conn, actor, schema_id, for_update=True)
    actor.note_audit_targets(row.schema_id)
    labels = _labels_of(row)
    n_source = len(labels[0])
    by_key: dict[str, list[str]] = {}
    for i, doc in enumerate(docs):
        values = _row_values(labels, doc, f"docs[{i}]")
        by_key[row_key(values[:n_source])] = values
    cap = await _RowCap.of(conn, row.schema_id, "docs")
    await _write_rows(conn, row.schema_id, by_key.items(), actor.now_s)
    await cap.wrote(len(by_key))
    await repo.touch_data(conn, row.schema_id, actor.person_id, actor.now_s)
    return list(by_key)


async def _write_rows(conn: AsyncConnection, schema_id: str,
                      rows: Iterable[tuple[str, list[str]]], now_s: int) -> None:
    await repo.upsert_rows(conn, [
        {"schema_id": schema_id, "row_key": key, "vals": _encode(values).decode(),
         "csv_line": csv_line(values), "created_at": now_s, "updated_at": now_s}
        for key, values in rows])


@writes("/enrichment/mapping/data/delete", *WRITE)
async def delete_data(conn: AsyncConnection, actor: Actor, *, schema_id: str,
                      keys: list[str]) -> None:
    row = await _schema(conn, actor, schema_id, for_update=True)
    actor.note_audit_targets(row.schema_id)
    await repo.delete_rows(conn, row.schema_id, list(dict.fromkeys(keys)))
    await repo.touch_data(conn, row.schema_id, actor.person_id, actor.now_s)


@writes("/enrichment/mapping/data/truncate", *WRITE)
async def truncate_data(conn: AsyncConnection, actor: Actor, *, schema_id: str) -> None:
    row = await _schema(conn, actor, schema_id, for_update=True)
    actor.note_audit_targets(row.schema_id)
    await repo.truncate_rows(conn, row.schema_id)
    await repo.touch_data(conn, row.schema_id, actor.person_id, actor.now_s)


async def _off_loop(lines: Iterator[list[str]]) -> AsyncIterator[list[str]]:
    while chunk := await anyio.to_thread.run_sync(_take, lines, UPLOAD_BATCH):
        for values in chunk:
            yield values


def _take(lines: Iterator[list[str]], n: int) -> list[list[str]]:
    return list(itertools.islice(lines, n))


# The audit names the schema, not the count of rows the service returns.
@writes("/enrichment/mapping/data/upload", *WRITE, targets=lambda _loaded: ())
async def upload_data(conn: AsyncConnection, actor: Actor, *, schema_id: str, data: bytes,
                      truncate: bool) -> int:
    """Load a CSV; all or nothing (the caller's transaction rolls back on the first bad
    line). Returns the number of distinct keys loaded."""
    row = await _schema(conn, actor, schema_id, for_update=True)
    actor.note_audit_targets(row.schema_id)
    source, result = _labels_of(row)
    # decoding and parsing cost the file's size (50 MiB of blank lines is a long loop): they
    # run in a worker thread, a batch at a time, never on the event loop
    lines = _off_loop(parse_upload(data, source, result))
    if truncate:
        await repo.truncate_rows(conn, row.schema_id)
        cap = _RowCap(conn, row.schema_id, 0, "file")
    else:
        cap = await _RowCap.of(conn, row.schema_id, "file")
    n_source, loaded = len(source), 0
    batch: dict[str, list[str]] = {}
    async for values in lines:
        batch[row_key(values[:n_source])] = values
        if len(batch) >= UPLOAD_BATCH:
            await _write_rows(conn, row.schema_id, batch.items(), actor.now_s)
            await cap.wrote(len(batch))
            loaded += len(batch)
            batch = {}
    await _write_rows(conn, row.schema_id, batch.items(), actor.now_s)
    await cap.wrote(len(batch))
    loaded += len(batch)
    await repo.touch_data(conn, row.schema_id, actor.person_id, actor.now_s)
    return loaded


@reads_sync(*READ)
def list_data_sync(conn: Connection, actor: Actor, *, schema_id: str,
                   query: dict[str, str], orderby: str, asc: bool, p: int, limit: int,
                   search_after_ctx: str) -> DataListResponse:
    """A page of the schema's rows (`query`: one row by its source labels), by `p` and
    `limit` or after a cursor (`search_after_ctx`)."""
    row = _schema_sync(conn, actor, schema_id)
    source, result = _labels_of(row)
    key: str | None = None
    if query:
        missing = [label for label in source if label not in query]
        extra = sorted(set(query) - set(source))
        if missing or extra:
            raise errors.invalid("query", "must give every source label ("
                                 + ",".join(source) + ") and nothing else")
        key = row_key([query[label] for label in source])
    orderby = orderby or "updated_at"
    after = None if not search_after_ctx else cursor.read(
        search_after_ctx, schema_id=row.schema_id, orderby=orderby, asc=asc)
    total = repo.count_rows_sync(conn, row.schema_id, key)
    # One row past the page tells whether there is a next one. With a cursor the page starts
    # after it (keyset) and `p` is not used.
    rows = repo.page_rows_sync(conn, row.schema_id, key=key, orderby=orderby, asc=asc,
                               offset=0 if after else (p - 1) * limit,
                               limit=limit + 1, after=after)
    more, rows = len(rows) > limit, rows[:limit]
    labels = source + result
    items = [MappingDataItem(key=r.row_key, fields=dict(zip(labels, _labels.decode(r.vals),
                                                                strict=False)),
                             created_at=r.created_at, updated_at=r.updated_at) for r in rows]
    next_cursor = cursor.write(row.schema_id, orderby, asc, getattr(rows[-1], orderby),
                               rows[-1].row_key) if more else ""
    return DataListResponse(items=items, total=total, has_next_page=more,
                            search_after_ctx=next_cursor)


@dataclass(frozen=True, slots=True)
class IngestState:
    """What a push needs to know before it runs any of the integration's configuration."""

    pipeline: int | None  # versions of the enabled configurations (None: none)
    enrichment: int | None
    data_epoch: int  # moves on every write to the rows the enrichment reads
    route: int | None

    @property
    def empty(self) -> bool:
        return self.pipeline is None and self.enrichment is None and self.route is None


def ingest_state_sync(conn: Connection, integration_id: int) -> IngestState:
    """One statement per push: for ingestion (incident/ingest), which then hands each
    version to the pipeline, enrichment and route services."""
    row = repo.ingest_state_sync(conn, integration_id)
    return IngestState(pipeline=row[0], enrichment=row[1], data_epoch=int(row[2] or 0),
                       route=row[3])


@reads(*READ)
async def download_header(conn: AsyncConnection, actor: Actor, *,
                          schema_id: str) -> tuple[str, str, list[str]]:
    """(schema_id, schema_name, header labels) of a schema the actor may read."""
    row = await _schema(conn, actor, schema_id)
    source, result = _labels_of(row)
    return str(row.schema_id), str(row.schema_name), source + result


async def stream_csv(db: Database, schema_id: str, header: list[str],
                     batch: int = DOWNLOAD_BATCH) -> AsyncIterator[bytes]:
    """The CSV of a schema's rows, in key order, one encoded batch at a time. Each batch is
    read in its own short transaction (keyset pagination by row key), so neither memory nor
    the time a connection is held grows with the row count; the lines were rendered when the
    rows were written."""
    yield CsvWriter().rows([header]).encode()
    after = ""  # below every key (keys are never empty)
    while True:
        rows = await db.run_sync(functools.partial(
            repo.lines_after_sync, schema_id=schema_id, after=after, limit=batch), write=False)
        if not rows:
            return
        yield "".join([line for _, line in rows]).encode()
        if len(rows) < batch:
            return
        after = rows[-1][0]
