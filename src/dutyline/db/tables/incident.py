"""Alerts, their events, incidents, the incident feed, custom fields, and the incident event
stream (an outbox written in the same transaction as the change it records)."""

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
    column,
    table,
)

from dutyline.db.tables.meta import AutoBigInt, metadata
from dutyline.kit.vocabulary import TRIGGERED

# Severities: Critical | Warning | Info | Ok. Times are Unix seconds unless named *_ms.

alert = Table(
    "alert",
    metadata,
    Column("alert_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("integration_id", BigInteger, nullable=False),
    Column("alert_key", String(255), nullable=False),
    Column("title", String(512), nullable=False, server_default=""),
    Column("title_rule", String(512), nullable=False, server_default=""),
    Column("description", Text, nullable=False, server_default=""),
    Column("alert_severity", String(16), nullable=False),  # worst severity seen while active
    Column("alert_status", String(16), nullable=False),  # latest status; Ok once recovered
    Column("labels", Text, nullable=False, server_default="{}"),  # JSON object
    Column("images", Text, nullable=False, server_default="[]"),  # JSON array
    Column("event_cnt", Integer, nullable=False, server_default="1"),
    Column("start_time", BigInteger, nullable=False),
    Column("last_time", BigInteger, nullable=False),
    Column("end_time", BigInteger, nullable=False, server_default="0"),  # 0 while active
    Column("ever_muted", Boolean, nullable=False, server_default="0"),
    # Set when an inhibit rule kept the alert from opening an incident.
    Column("inhibited", Boolean, nullable=False, server_default="0"),
    # Which inhibit rule and which source alert inhibited it (channel/noise); "" when none.
    Column("inhibit_rule_id", String(24), nullable=False, server_default=""),
    Column("inhibited_by", String(24), nullable=False, server_default=""),
    # The silence rule that kept it from opening an incident; "" when none.
    Column("silence_rule_id", String(24), nullable=False, server_default=""),
    Column("acked", Boolean, nullable=False, server_default="0"),
    Column("incident_id", String(24), nullable=True),
    Column("deleted_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # One active alert per key, integration and channel: the same alert_key updates it, and
    # concurrent deliveries of one key cannot create two. The channel is part of it because
    # an integration's route may deliver one event to several channels (channel/route).
    Index(
        "uq_alert_active_key",
        "integration_id",
        "alert_key",
        "channel_id",
        unique=True,
        sqlite_where=Column("end_time") == 0,
        postgresql_where=Column("end_time") == 0,
    ),
    Index("ix_alert_incident", "incident_id"),
    Index("ix_alert_account_time", "account_id", "start_time"),
    Index("ix_alert_channel_active", "channel_id", "end_time", "last_time"),
    # The alerts a source inhibits, to group them again when it recovers.
    Index(
        "ix_alert_inhibited_by",
        "inhibited_by",
        sqlite_where=Column("inhibited_by") != "",
        postgresql_where=Column("inhibited_by") != "",
    ),
)

alert_event = Table(
    "alert_event",
    metadata,
    Column("event_id", String(24), primary_key=True),
    Column("alert_id", String(24), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False),
    Column("integration_id", BigInteger, nullable=False),
    Column("event_status", String(16), nullable=False),
    Column("event_severity", String(16), nullable=False),
    Column("title", String(512), nullable=False, server_default=""),
    Column("description", Text, nullable=False, server_default=""),
    Column("labels", Text, nullable=False, server_default="{}"),
    Column("images", Text, nullable=False, server_default="[]"),
    Column("event_time", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_alert_event_alert", "alert_id", "event_time"),
    # /alert-event/list: an account's events across alerts in a time window.
    Index("ix_alert_event_account_time", "account_id", "event_time"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_alert_event_created", "created_at"),
)

incident = Table(
    "incident",
    metadata,
    Column("incident_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("channel_id", BigInteger, nullable=False, server_default="0"),
    Column("integration_id", BigInteger, nullable=False, server_default="0"),
    Column("num", String(16), nullable=False),  # short human id, unique per account
    Column("dedup_key", String(255), nullable=False, server_default=""),
    # Grouping key: md5 of the channel's grouping fields; alerts with the same key join.
    Column("equals_md5", String(32), nullable=False, server_default=""),
    Column("group_method", String(1), nullable=False, server_default="n"),
    Column("title", String(512), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("impact", Text, nullable=False, server_default=""),
    Column("root_cause", Text, nullable=False, server_default=""),
    Column("resolution", Text, nullable=False, server_default=""),
    Column("incident_severity", String(16), nullable=False),
    Column("incident_status", String(16), nullable=False),  # Ok once closed
    Column("progress", String(16), nullable=False, server_default=TRIGGERED),
    Column("start_time", BigInteger, nullable=False),
    Column("last_time", BigInteger, nullable=False),
    Column("end_time", BigInteger, nullable=False, server_default="0"),
    Column("ack_time", BigInteger, nullable=False, server_default="0"),
    Column("close_time", BigInteger, nullable=False, server_default="0"),
    Column("snoozed_before", BigInteger, nullable=False, server_default="0"),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("closer_id", BigInteger, nullable=False, server_default="0"),
    Column("owner_id", BigInteger, nullable=False, server_default="0"),
    Column("labels", Text, nullable=False, server_default="{}"),  # JSON object
    Column("fields", Text, nullable=False, server_default="{}"),  # JSON: custom field values
    Column("assigned_to", Text, nullable=False, server_default="{}"),  # JSON: AssignedTo
    Column("responders", Text, nullable=False, server_default="[]"),  # JSON: [Responder]
    Column("images", Text, nullable=False, server_default="[]"),
    Column("alert_cnt", Integer, nullable=False, server_default="0"),
    Column("active_alert_cnt", Integer, nullable=False, server_default="0"),
    Column("alert_event_cnt", Integer, nullable=False, server_default="0"),
    Column("ever_muted", Boolean, nullable=False, server_default="0"),
    Column("merged_into", String(24), nullable=True),
    # /incident/disable-merge: grouping at ingest no longer adds alerts to this incident.
    Column("merge_disabled", Boolean, nullable=False, server_default="0"),
    Column("deleted_at", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("account_id", "num", name="uq_incident_account_num"),
    # /incident/list: one index for every page and its total. It covers the usual filters,
    # so counting a 31-day window reads only the index (bench/README.md: 100,000 incidents).
    Index("ix_incident_list", "account_id", "deleted_at", "start_time", "progress",
          "incident_severity", "channel_id"),
    Index("ix_incident_channel_group", "channel_id", "equals_md5", "progress"),
    # /incident/past/list: a channel's most recent incidents, the bounded candidate set.
    Index("ix_incident_channel_start", "channel_id", "start_time"),
    # An incident's `frequency`: the same title in its channel in the week before it.
    Index("ix_incident_recurrence", "account_id", "channel_id", "title", "start_time"),
)

# SQLite's index for the title search of /incident/list (migration 0005): a contentless FTS5
# trigram table holding lower(title), keyed by the incident's rowid and filled by triggers.
# Not in the MetaData (a Table cannot describe it: see meta.HAND_MADE_TABLES); this handle only
# names it in queries. PostgreSQL has a trigram index on lower(title) instead.
incident_title_fts = table("incident_title_fts", column("rowid"), column("incident_title_fts"))

incident_feed = Table(
    "incident_feed",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("incident_id", String(24), nullable=False),
    Column("account_id", BigInteger, nullable=False),
    Column("type", String(32), nullable=False),  # i_new, i_ack, i_rslv, i_reopen, i_r_field...
    Column("creator_id", BigInteger, nullable=False, server_default="0"),  # 0: the system
    Column("detail", Text, nullable=False, server_default="{}"),  # JSON: FeedDetail*
    Column("created_at", BigInteger, nullable=False),
    Index("ix_incident_feed_incident", "incident_id", "id"),
)

custom_field = Table(
    "custom_field",
    metadata,
    Column("field_id", String(24), primary_key=True),
    Column("account_id", BigInteger, nullable=False),
    Column("field_name", String(40), nullable=False),
    Column("display_name", String(128), nullable=False, server_default=""),
    Column("description", String(512), nullable=False, server_default=""),
    Column("field_type", String(16), nullable=False),  # text|single_select|multi_select|checkbox
    Column("options", Text, nullable=False, server_default="[]"),  # JSON array of strings
    Column("default_value", Text, nullable=False, server_default="null"),  # JSON value
    Column("status", String(16), nullable=False, server_default="enabled"),
    Column("creator_id", BigInteger, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    UniqueConstraint("account_id", "field_name", name="uq_custom_field_account_name"),
)

# The incident event stream: one row per incident change, inserted in the transaction of
# the change, so a rolled-back write emits nothing. Subscribers (escalation, automation
# triggers) receive each event through their own durable job, so one failing subscriber
# retries without holding up the others.
incident_event = Table(
    "incident_event",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("account_id", BigInteger, nullable=False),
    Column("incident_id", String(24), nullable=False),
    Column("kind", String(32), nullable=False),  # created, acked, unacked, resolved, reopened...
    Column("payload", Text, nullable=False, server_default="{}"),  # JSON
    Column("person_id", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_incident_event_incident", "incident_id", "id"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_incident_event_created", "created_at"),
)

# The last events each integration received and what became of them (opened an incident,
# joined one, dropped by a rule, refused and why), for the integration's console page. A
# bounded record: ingestion keeps about the last INTAKE_KEPT rows of an integration (pruned
# now and then as it writes), and retention removes what is older than the alert events.
intake_outcome = Table(
    "intake_outcome",
    metadata,
    Column("id", AutoBigInt, primary_key=True, autoincrement=True),
    Column("account_id", BigInteger, nullable=False),
    Column("integration_id", BigInteger, nullable=False),
    Column("received_at", BigInteger, nullable=False),
    Column("source", String(16), nullable=False),  # standard|prometheus|grafana|webhook|test
    Column("outcome", String(16), nullable=False),  # opened|grouped|recovered|held|dropped|...
    Column("title", String(512), nullable=False, server_default=""),
    Column("alert_key", String(255), nullable=False, server_default=""),
    Column("incident_id", String(24), nullable=False, server_default=""),
    Column("reason", String(512), nullable=False, server_default=""),
    Index("ix_intake_outcome_integration", "integration_id", "id"),
    # Retention prunes by this column (work/retention.py).
    Index("ix_intake_outcome_received", "received_at"),
)
