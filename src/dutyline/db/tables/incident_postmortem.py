"""Post-mortems: the report written after one or more closed incidents of a channel."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

post_mortem = Table(
    "post_mortem",
    metadata,
    # md5 of the account id and the sorted incident ids: one report per set of incidents.
    Column("post_mortem_id", String(32), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("title", String(255), nullable=False),
    Column("status", String(16), nullable=False),  # drafting | published
    Column("template_id", String(64), nullable=False),
    Column("incident_ids", Text, nullable=False),  # JSON array of incident ids
    Column("author_ids", Text, nullable=False, server_default="[]"),  # JSON array of person ids
    Column("team_id", BigInteger, nullable=False, server_default="0"),
    Column("channel_id", BigInteger, nullable=False, server_default="0"),
    Column("is_private", Boolean, nullable=False, server_default="0"),
    # JSON: the incidents' figures when the report was made (reference PostMortemItem.basics).
    Column("basics", Text, nullable=False, server_default="{}"),
    Column("content", Text, nullable=False, server_default=""),  # markdown
    Column("follow_ups", Text, nullable=False, server_default=""),
    Column("media_count", Integer, nullable=False, server_default="0"),
    # Who wrote the summary, impact and contributing factors: template | model.
    Column("drafted_by", String(16), nullable=False, server_default="template"),
    # The model's drafting job: none | pending | done | failed | skipped.
    Column("model_draft", String(16), nullable=False, server_default="none"),
    Column("model_name", String(128), nullable=False, server_default=""),
    Column("model_error", Text, nullable=False, server_default=""),
    # Bumped by every edit: a model draft lands only on the revision it was asked for.
    Column("revision", Integer, nullable=False, server_default="1"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("published_at", BigInteger, nullable=False, server_default="0"),
    Index("ix_post_mortem_account_created", "account_id", "created_at"),
    Index("ix_post_mortem_account_updated", "account_id", "updated_at"),
)
