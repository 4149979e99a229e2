"""The tools an agent may run against a monitored target, per target kind.

A target is something a Prometheus-compatible data source scrapes: a host (node_exporter's
series) or a MySQL server (mysqld_exporter's). Its tools are PromQL queries scoped to the
target's `instance` label, answered as `{summary, data}`; the generic `promql_query` runs any
query on the data source that knows the target. Everything here is pure: the service
(tools.py) resolves the target and runs the queries."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import re2

# --- PromQL text -----------------------------------------------------------------------


def promql_string(value: str) -> str:
    """A PromQL double-quoted string literal of `value`."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def regex_literal(value: str) -> str:
    """`value` matched literally inside an RE2 pattern (RE2 takes any escaped punctuation
    as itself)."""
    return re.escape(value)


def instance_matcher(instances: list[str]) -> str:
    """The label matcher that scopes a query to the target's series."""
    if len(instances) == 1:
        return f"instance={promql_string(instances[0])}"
    return "instance=~" + promql_string("|".join(regex_literal(i) for i in sorted(instances)))


# --- kinds -----------------------------------------------------------------------------

WINDOW = re.compile(r"^[1-9][0-9]{0,3}[smh]$")
WINDOW_SCHEMA = {"type": "string", "pattern": WINDOW.pattern, "default": "5m",
                 "description": "The rate window, a PromQL duration such as 5m or 1h."}


@dataclass(frozen=True)
class Query:
    key: str  # where the rows go in the tool's `data`
    expr: str
    by: str = ""  # a label whose values key the rows (one value per key); "" = one number


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    # The queries for (instance matcher, params) and the summary of their answers.
    queries: Callable[[str, dict[str, Any]], list[Query]] | None = None
    summarize: Callable[[dict[str, Any]], str] | None = None


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    # The query that finds the target's series: `{name}` is the locator's name as a PromQL
    # string, `{pattern}` as a regex string matching it with or without a port.
    probe: str
    tools: tuple[Tool, ...]

    def probe_for(self, name: str) -> str:
        pattern = promql_string(regex_literal(name) + "(:[0-9]+)?")
        return self.probe.format(name=promql_string(name), pattern=pattern)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def toolset_hash(self) -> str:
        """Names the catalogue: it changes when a tool or its input schema does."""
        doc = [[t.name, t.description, t.input_schema] for t in self.tools]
        return hashlib.sha256(msgspec.json.encode(doc, order="sorted")).hexdigest()[:16]


def _window(params: dict[str, Any]) -> str:
    return str(params.get("window") or "5m")


def _no_params() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def _window_params() -> dict[str, Any]:
    return {"type": "object", "properties": {"window": WINDOW_SCHEMA},
            "additionalProperties": False}


PROMQL_TOOL = Tool(
    name="promql_query",
    description=("Run a PromQL instant query on the data source that scrapes the target. "
                 "The query is not scoped for you: add {instance=\"...\"} yourself (the "
                 "catalogue's target.instances)."),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 8192,
                      "description": "A PromQL expression."},
            "time": {"type": "integer", "minimum": 0,
                     "description": "Evaluation time, Unix seconds; 0 or absent: now."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


def _pct(value: Any) -> str:
    return "unknown" if value is None else f"{value:.1f}%"


def _bytes(value: Any) -> str:
    if value is None:
        return "unknown"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - the loop returns


def _worst(rows: Any) -> tuple[str, float] | None:
    if not isinstance(rows, dict) or not rows:
        return None
    key = max(rows, key=lambda k: rows[k] if rows[k] is not None else float("-inf"))
    return (key, rows[key]) if rows[key] is not None else None


def _host_cpu(m: str, p: dict[str, Any]) -> list[Query]:
    w = _window(p)
    return [
        Query("usage_percent",
              f'100 * (1 - avg(rate(node_cpu_seconds_total{{{m},mode="idle"}}[{w}])))'),
        Query("mode_percent",
              f"100 * avg by (mode) (rate(node_cpu_seconds_total{{{m}}}[{w}]))", by="mode"),
        Query("cores", f'count(node_cpu_seconds_total{{{m},mode="idle"}})'),
        Query("load1", f"max(node_load1{{{m}}})"),
        Query("load5", f"max(node_load5{{{m}}})"),
        Query("load15", f"max(node_load15{{{m}}})"),
    ]


def _host_cpu_summary(d: dict[str, Any]) -> str:
    return (f"CPU {_pct(d.get('usage_percent'))} busy on {d.get('cores') or '?'} cores; "
            f"load {d.get('load1')}/{d.get('load5')}/{d.get('load15')} (1/5/15 min)")


def _host_memory(m: str, p: dict[str, Any]) -> list[Query]:
    return [
        Query("total_bytes", f"max(node_memory_MemTotal_bytes{{{m}}})"),
        Query("available_bytes", f"max(node_memory_MemAvailable_bytes{{{m}}})"),
        Query("used_percent", f"100 * (1 - max(node_memory_MemAvailable_bytes{{{m}}}) / "
                              f"max(node_memory_MemTotal_bytes{{{m}}}))"),
        Query("swap_total_bytes", f"max(node_memory_SwapTotal_bytes{{{m}}})"),
        Query("swap_free_bytes", f"max(node_memory_SwapFree_bytes{{{m}}})"),
    ]


def _host_memory_summary(d: dict[str, Any]) -> str:
    return (f"memory {_pct(d.get('used_percent'))} used, "
            f"{_bytes(d.get('available_bytes'))} available of {_bytes(d.get('total_bytes'))}")


_REAL_FS = 'fstype!~"tmpfs|overlay|squashfs|ramfs|devtmpfs"'


def _host_disk(m: str, p: dict[str, Any]) -> list[Query]:
    w = _window(p)
    return [
        Query("used_percent_by_mountpoint",
              f"100 * (1 - max by (mountpoint) (node_filesystem_avail_bytes{{{m},{_REAL_FS}}})"
              f" / max by (mountpoint) (node_filesystem_size_bytes{{{m},{_REAL_FS}}}))",
              by="mountpoint"),
        Query("avail_bytes_by_mountpoint",
              f"max by (mountpoint) (node_filesystem_avail_bytes{{{m},{_REAL_FS}}})",
              by="mountpoint"),
        Query("io_busy_percent_by_device",
              f"100 * max by (device) (rate(node_disk_io_time_seconds_total{{{m}}}[{w}]))",
              by="device"),
    ]


def _host_disk_summary(d: dict[str, Any]) -> str:
    fullest = _worst(d.get("used_percent_by_mountpoint"))
    busiest = _worst(d.get("io_busy_percent_by_device"))
    parts = [f"fullest filesystem {fullest[0]} at {_pct(fullest[1])}" if fullest
             else "no filesystem series"]
    if busiest:
        parts.append(f"busiest disk {busiest[0]} {_pct(busiest[1])} busy")
    return "; ".join(parts)


_REAL_NIC = 'device!~"lo|veth.*|docker.*|br-.*"'


def _host_network(m: str, p: dict[str, Any]) -> list[Query]:
    w = _window(p)

    def per_device(key: str, metric: str) -> Query:
        return Query(key, f"sum by (device) (rate({metric}{{{m},{_REAL_NIC}}}[{w}]))",
                     by="device")

    return [
        per_device("receive_bytes_per_second", "node_network_receive_bytes_total"),
        per_device("transmit_bytes_per_second", "node_network_transmit_bytes_total"),
        per_device("receive_errors_per_second", "node_network_receive_errs_total"),
        per_device("transmit_errors_per_second", "node_network_transmit_errs_total"),
        per_device("receive_drops_per_second", "node_network_receive_drop_total"),
    ]


def _host_network_summary(d: dict[str, Any]) -> str:
    def total(key: str) -> float:
        rows = d.get(key) or {}
        return float(sum(v for v in rows.values() if v is not None))

    errors = total("receive_errors_per_second") + total("transmit_errors_per_second")
    return (f"in {_bytes(total('receive_bytes_per_second'))}/s, out "
            f"{_bytes(total('transmit_bytes_per_second'))}/s, {errors:g} errors/s")


HOST = Kind(
    name="host",
    description="A machine scraped through node_exporter (series node_*).",
    probe=("node_uname_info{{instance=~{pattern}}} or node_uname_info{{nodename={name}}}"),
    tools=(
        Tool("host.cpu", "CPU busy percent (overall and per mode), core count and load "
             "averages of the host.", _window_params(), _host_cpu, _host_cpu_summary),
        Tool("host.memory", "Memory and swap of the host: total, available, used percent.",
             _no_params(), _host_memory, _host_memory_summary),
        Tool("host.disk", "Filesystem use per mount point and disk busy percent per device.",
             _window_params(), _host_disk, _host_disk_summary),
        Tool("host.network", "Network throughput, errors and drops per interface (loopback "
             "and container bridges left out).", _window_params(), _host_network,
             _host_network_summary),
        PROMQL_TOOL,
    ),
)


def _mysql_status(m: str, p: dict[str, Any]) -> list[Query]:
    w = _window(p)
    return [
        Query("up", f"max(mysql_up{{{m}}})"),
        Query("uptime_seconds", f"max(mysql_global_status_uptime{{{m}}})"),
        Query("threads_connected", f"max(mysql_global_status_threads_connected{{{m}}})"),
        Query("threads_running", f"max(mysql_global_status_threads_running{{{m}}})"),
        Query("max_connections", f"max(mysql_global_variables_max_connections{{{m}}})"),
        Query("queries_per_second", f"sum(rate(mysql_global_status_queries{{{m}}}[{w}]))"),
        Query("slow_queries_per_second",
              f"sum(rate(mysql_global_status_slow_queries{{{m}}}[{w}]))"),
        Query("aborted_connects_per_second",
              f"sum(rate(mysql_global_status_aborted_connects{{{m}}}[{w}]))"),
    ]


def _mysql_status_summary(d: dict[str, Any]) -> str:
    if d.get("up") is None:
        return "no mysqld_exporter series"
    if not d.get("up"):
        return "mysqld_exporter cannot reach the server (mysql_up is 0)"
    return (f"up; {d.get('threads_connected')} of {d.get('max_connections')} connections, "
            f"{d.get('threads_running')} running; {d.get('queries_per_second')} queries/s, "
            f"{d.get('slow_queries_per_second')} slow/s")


def _mysql_replication(m: str, p: dict[str, Any]) -> list[Query]:
    return [
        Query("seconds_behind_master", f"max(mysql_slave_status_seconds_behind_master{{{m}}})"),
        Query("io_thread_running", f"min(mysql_slave_status_slave_io_running{{{m}}})"),
        Query("sql_thread_running", f"min(mysql_slave_status_slave_sql_running{{{m}}})"),
    ]


def _mysql_replication_summary(d: dict[str, Any]) -> str:
    if all(d.get(k) is None for k in d):
        return "no replica status series (not a replica, or the collector is off)"
    return (f"{d.get('seconds_behind_master')} s behind the source; IO thread "
            f"{'running' if d.get('io_thread_running') else 'stopped'}, SQL thread "
            f"{'running' if d.get('sql_thread_running') else 'stopped'}")


MYSQL = Kind(
    name="mysql",
    description="A MySQL server scraped through mysqld_exporter (series mysql_*).",
    probe="mysql_up{{instance=~{pattern}}}",
    tools=(
        Tool("mysql.status", "Whether the server answers, its connections against "
             "max_connections, running threads, query and slow-query rates.",
             _window_params(), _mysql_status, _mysql_status_summary),
        Tool("mysql.replication", "Replica lag and whether its IO and SQL threads run.",
             _no_params(), _mysql_replication, _mysql_replication_summary),
        PROMQL_TOOL,
    ),
)

KINDS: dict[str, Kind] = {k.name: k for k in (HOST, MYSQL)}


def check_params(schema: dict[str, Any], params: dict[str, Any]) -> str:
    """Why `params` do not fit a tool's input schema, or "". The schemas here use only a
    flat object of strings and integers, so this reads just those keywords."""
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in params:
            return f"params.{name} is required"
    for name, value in params.items():
        spec = properties.get(name)
        if spec is None:
            return f"params.{name} is not a parameter of this tool"
        if spec["type"] == "integer":
            if not isinstance(value, int) or isinstance(value, bool):
                return f"params.{name} must be an integer"
            if value < spec.get("minimum", value):
                return f"params.{name} must be at least {spec['minimum']}"
        elif spec["type"] == "string":
            if not isinstance(value, str):
                return f"params.{name} must be a string"
            if not spec.get("minLength", 0) <= len(value) <= spec.get("maxLength", len(value)):
                return (f"params.{name} must be {spec.get('minLength', 0)} to "
                        f"{spec.get('maxLength')} characters")
            if "pattern" in spec and not re2.search(spec["pattern"], value):
                return f"params.{name} must match {spec['pattern']}"
    return ""


# --- locators --------------------------------------------------------------------------

MAX_LOCATOR_BYTES = 256
_FORBIDDEN = re.compile(r"[\s|\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Locator:
    text: str  # as sent
    name: str  # without a `kind:` prefix
    kind: str  # from the prefix, or ""


def parse_locator(text: str) -> Locator | str:
    """The locator, or why it is refused. `host:web-01` names its kind; `web-01` (or
    `10.0.0.5:9100`, whose prefix is no kind) leaves it to be inferred."""
    if not text:
        return "is required"
    if len(text.encode()) > MAX_LOCATOR_BYTES:
        return f"must be at most {MAX_LOCATOR_BYTES} bytes"
    if _FORBIDDEN.search(text):
        return "must not contain whitespace, control characters or '|'"
    prefix, sep, rest = text.partition(":")
    if sep and prefix in KINDS:
        if not rest:
            return "names a kind but no target"
        return Locator(text, rest, prefix)
    return Locator(text, text, "")
