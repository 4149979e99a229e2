"""Monitors: data sources, alert rules, and the evaluation state of each rule's series.
Times are Unix seconds except where a column says ms."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from dutyline.db.tables.meta import metadata

monit_datasource = Table(
    "monit_datasource",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("type_ident", String(32), nullable=False),
    Column("name", String(255), nullable=False),
    Column("enabled", Boolean, nullable=False, server_default="1"),
    Column("note", String(1024), nullable=False, server_default=""),
    Column("address", String(2048), nullable=False, server_default=""),
    Column("edge_cluster_name", String(128), nullable=False, server_default=""),
    # The type's config block (DSPayload) as JSON, sealed with the server key: it holds
    # credentials (basic auth password, TLS key, header values).
    Column("payload_sealed", Text, nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_monit_datasource_account", "account_id", "type_ident"),
)

monit_rule = Table(
    "monit_rule",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("folder_id", BigInteger, nullable=False, server_default="0"),
    Column("name", String(255), nullable=False),
    Column("ds_type", String(32), nullable=False),
    Column("enabled", Boolean, nullable=False, server_default="1"),
    Column("debug_log_enabled", Boolean, nullable=False, server_default="0"),
    Column("cron_pattern", String(128), nullable=False),
    Column("delay_seconds", Integer, nullable=False, server_default="0"),
    # The rest of the AlertRule record (labels, ds_list, ds_ids, rule_configs, enabled_times,
    # annotations, description, channel_ids, repeats) as JSON: only evaluation reads it.
    Column("body", Text, nullable=False),
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("creator_name", String(255), nullable=False, server_default=""),
    Column("updater_id", BigInteger, nullable=False, server_default="0"),
    Column("updater_name", String(255), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    # Evaluation status: the last evaluation's start (ms), its outcome and error.
    Column("last_eval_at_ms", BigInteger, nullable=False, server_default="0"),
    Column("last_eval_ms", Integer, nullable=False, server_default="0"),
    Column("last_error", Text, nullable=False, server_default=""),
    Column("firing_count", Integer, nullable=False, server_default="0"),
    Index("ix_monit_rule_account_folder", "account_id", "folder_id"),
)

# One row per series a rule has seen: its check state and what was sent for it.
monit_series = Table(
    "monit_series",
    metadata,
    Column("rule_id", BigInteger, primary_key=True, autoincrement=False),
    Column("series_key", String(64), primary_key=True),  # hash of check, data source, labels
    Column("account_id", BigInteger, nullable=False),
    Column("check_kind", String(16), nullable=False),  # threshold | anydata | nodata
    Column("ds_id", BigInteger, nullable=False, server_default="0"),
    Column("labels", Text, nullable=False),  # JSON of the series' labels
    Column("state", String(16), nullable=False),  # ok | pending | firing | recovering
    Column("severity", String(16), nullable=False, server_default=""),
    Column("hits", Integer, nullable=False, server_default="0"),  # consecutive alerting checks
    Column("misses", Integer, nullable=False, server_default="0"),  # consecutive recovered ones
    Column("value", String(64), nullable=False, server_default=""),
    Column("fired_at", BigInteger, nullable=False, server_default="0"),
    Column("last_sent_at", BigInteger, nullable=False, server_default="0"),
    Column("sent_count", Integer, nullable=False, server_default="0"),
    Column("last_seen_at", BigInteger, nullable=False, server_default="0"),
)

# The change history of rules (/monit/rule/audits): a snapshot of the rule after each change
# (its last state for a delete); kept when the rule is deleted.
monit_rule_audit = Table(
    "monit_rule_audit",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("alert_rule_id", BigInteger, nullable=False),
    Column("action", String(32), nullable=False),  # create | update | delete | move | import
    Column("content", Text, nullable=False),  # JSON of the AlertRule record
    Column("creator_id", BigInteger, nullable=False, server_default="0"),
    Column("creator_name", String(255), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_monit_rule_audit_rule", "account_id", "alert_rule_id", "created_at"),
)

# The account's rule total after each change that moved it (/monit/rule/counter/total): one
# sample per second (the last change of that second replaces it). Not a unique index: two
# requests in the same second on PostgreSQL may both insert, which a reader can bear better
# than one of the two requests failing.
monit_rule_counter = Table(
    "monit_rule_counter",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account_id", BigInteger, nullable=False),
    Column("num", BigInteger, nullable=False),
    Column("clock", BigInteger, nullable=False),
    Index("ix_monit_rule_counter_account", "account_id", "clock"),
)

# The rule repository (/monit/store/ruleset/*): shareable sets of rule definitions. open_flag
# 0 = private (its creator), 1 = the creator's account, 2 = every account (read only there).
monit_ruleset = Table(
    "monit_ruleset",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("type_ident", String(32), nullable=False),
    Column("note", String(1024), nullable=False),
    Column("open_flag", Integer, nullable=False, server_default="0"),
    Column("payload", Text, nullable=False),
    Column("creator_account_id", BigInteger, nullable=False),
    Column("creator_id", BigInteger, nullable=False),
    Column("creator_name", String(255), nullable=False, server_default=""),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Index("ix_monit_ruleset_type", "type_ident", "open_flag"),
    Index("ix_monit_ruleset_account", "creator_account_id", "type_ident"),
)
