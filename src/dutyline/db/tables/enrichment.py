"""Enrichment: mapping schemas, their data rows, and per-integration enrichment settings.

A data row is keyed by its source-label values (`row_key`, see enrichment/keys.py); the
primary key (schema_id, row_key) is both the upsert target and the index the ingest lookup
and the keyset-paginated download walk. `data_version` on the schema counts writes to its
rows; `version` on a setting counts writes to it, so ingestion recompiles only on change."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from dutyline.db.tables.meta import metadata

mapping_schema = Table(
    "mapping_schema",
    metadata,
    Column("schema_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("schema_name", String(39), nullable=False),
    Column("description", String(500), nullable=False, server_default=""),
    # JSON lists of label names, in their declared order (the CSV column order).
    Column("source_labels", Text, nullable=False),
    Column("result_labels", Text, nullable=False),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("data_version", BigInteger, nullable=False, server_default="0"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("account_id", "schema_name"),
)

mapping_row = Table(
    "mapping_row",
    metadata,
    Column("schema_id", String(24), primary_key=True),
    Column("row_key", Text, primary_key=True),
    # JSON list of the values: source labels then result labels, in the schema's order.
    Column("vals", Text, nullable=False),
    # The row as its download line (formula cells neutralised, quoted as CSV, ending in a
    # newline), rendered once when written: the download only concatenates.
    Column("csv_line", Text, nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_mapping_row_updated", "schema_id", "updated_at"),
)

enrichment_setting = Table(
    "enrichment_setting",
    metadata,
    Column("integration_id", BigInteger, primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    # JSON: the EnrichRule list, as written (checked).
    Column("rules", Text, nullable=False, server_default="[]"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("version", BigInteger, nullable=False, server_default="1"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("updated_by", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# Which schemas a setting's mapping rules read: schema delete is refused while referenced.
enrichment_schema_ref = Table(
    "enrichment_schema_ref",
    metadata,
    Column("integration_id", BigInteger, primary_key=True),
    Column("schema_id", String(24), primary_key=True),
    Index("ix_enrichment_schema_ref_schema", "schema_id"),
)

# Mapping APIs (enrichment/api): HTTP endpoints a `mapping` rule with `mapping_type: api`
# calls at ingest. Referenced through enrichment_schema_ref like schemas (ids never collide).
mapping_api = Table(
    "mapping_api",
    metadata,
    Column("api_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("api_name", String(199), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("url", String(500), nullable=False),
    # JSON {name: value}, sealed with the server's key (values may be tokens).
    Column("headers_sealed", Text, nullable=False, server_default=""),
    Column("timeout", Integer, nullable=False, server_default="2"),
    Column("retry_count", Integer, nullable=False, server_default="0"),
    Column("insecure_skip_verify", Boolean, nullable=False, server_default="0"),
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("creator_id", BigInteger, nullable=False),
    Column("updated_by", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("uq_mapping_api_name", "account_id", "api_name", unique=True),
)
