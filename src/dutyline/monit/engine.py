"""Evaluating an alert rule: its PromQL queries run as instant queries against each matching
data source, the enabled checks (threshold, any data, no data) give each series a verdict,
and a series that starts or stops firing becomes an alert event in each of the rule's
channels through the ingestion pipeline (the same code as /event/push/alert/standard).

Two phases. The queries run outside any write transaction (on SQLite the job's transaction
would hold the only writer lock through the network calls). The verdicts are then written
in the job's transaction after the rule row is read again, locked on PostgreSQL: a rule
deleted meanwhile writes nothing, and a delete that comes after sees (and resolves) what
this evaluation opened, so no alert is left behind by a rule that no longer exists.

A data source that fails (times out, answers 5xx, malformed JSON, refuses the TLS handshake)
leaves its series as they were and the reason in the rule's `last_error`: nothing is invented
from a failed query. Each data source is queried with its own TLS settings (tls.py), and its
relate queries (related.py) run only when one of its series alerts."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.unit import system_actor, unit
from dutyline.channel.integration import service as integrations
from dutyline.incident.service import ingest as ingestion
from dutyline.kit import localtime, timefilters
from dutyline.kit.clock import FixedClock
from dutyline.kit.vocabulary import OK as RECOVERED
from dutyline.kit.vocabulary import SEVERITIES, SEVERITY_KEY, WARNING
from dutyline.monit import conditions, datasources, prom, related, tls
from dutyline.monit import repository as repo
from dutyline.monit.schemas import DSPrometheusConfig, RuleBody, decode_body
from dutyline.platform.account import service as accounts

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime
    from dutyline.kit.secretbox import SecretBox

log = structlog.get_logger("dutyline.monit")

MAX_LABELS = 50  # the push's label limit (incident/ingest/schemas.py)
EVAL_JOB = "monit.evaluate"
INTEGRATION_TYPE = "monit"
INTEGRATION_NAME = "Alert rules (monit)"
THRESHOLD, ANYDATA, NODATA = "threshold", "anydata", "nodata"
FIRING, PENDING, OK = "firing", "pending", "ok"

# Tests swap the network for a mock transport (the guard still checks URLs).
transport_override: httpx.AsyncBaseTransport | None = None


@dataclass
class Verdict:
    check: str
    ds_id: int
    labels: dict[str, str]
    alerting: bool | None  # None: no verdict this time (the series keeps its state)
    severity: str = ""
    value: float | None = None
    forget: bool = False  # a no-data series past its resolve_timeout
    related: dict[str, str] = field(default_factory=dict)  # relate query name -> its rows


@dataclass
class Outcome:
    verdicts: list[Verdict] = field(default_factory=list)
    failed_ds: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


def series_key(check: str, ds_id: int, labels: dict[str, str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{check}\x00{ds_id}".encode())
    for name in sorted(labels):
        h.update(b"\x00" + name.encode() + b"\x01" + labels[name].encode())
    return h.hexdigest()


def _identity(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def in_enabled_times(body: RuleBody, now_s: float, time_zone: str = "UTC") -> bool:
    """Whether `now_s` falls in one of the rule's windows, read on the wall clock of the
    account's zone (the reference's AlertRule has no zone of its own): a 09:00 window opens
    at 09:00 local on both sides of a daylight-saving change. `stime` inclusive, `etime`
    exclusive; `stime >= etime` runs over midnight (kit/timefilters)."""
    if not body.enabled_times:
        return True
    return enabled_window(body, time_zone).matches(now_s)


def enabled_window(body: RuleBody, time_zone: str) -> timefilters.TimeFilter:
    items = [{"start": w.stime, "end": w.etime, "repeat": list(w.days)}
             for w in body.enabled_times]
    return timefilters.compile_time_filters(items, path="enabled_times",
                                            tz=localtime.zone(time_zone) or "UTC")


def target_of(box: SecretBox, row: Any) -> prom.Target:
    payload = datasources.open_payload(box, row.payload_sealed)
    cfg = payload.prometheus or payload.loki or DSPrometheusConfig()
    headers = {}
    for line in cfg.headers:
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    params = {}
    for line in cfg.params:
        name, _, value = line.partition("=")
        params[name.strip()] = value.strip()
    return prom.Target(address=row.address, headers=headers, params=params,
                       username=cfg.basic_auth_username, password=cfg.basic_auth_password,
                       basic_auth=cfg.basic_auth_enabled, tls=tls.settings_of(cfg))


# --- the verdicts ----------------------------------------------------------------------


# The clients of the evaluation batch in progress (a connection pool per TLS settings).
_batch_clients: ContextVar[prom.ClientPool | None] = ContextVar("monit_clients", default=None)


async def _query(runtime: Runtime, target: prom.Target, expr: str, at_s: float) -> prom.Result:
    pool = _batch_clients.get()
    client = None if pool is None else await pool.get(target.tls)
    return await prom.instant_query(runtime.deps.policy, target, expr, at_s,
                                    transport=transport_override, client=client)


async def _judge_source(runtime: Runtime, body: RuleBody, ds_id: int, target: prom.Target,
                        at_s: float, known: dict[str, Any], now_s: int,
                        problems: list[str]) -> list[Verdict]:
    cfg = body.rule_configs
    queries = [q for q in cfg.queries if q.expr.strip()]
    results = {q.name: await _query(runtime, target, q.expr, at_s) for q in queries}
    primary = results[queries[0].name].samples
    joined: dict[str, dict[tuple[tuple[str, str], ...], float | None]] = {
        name: {_identity(s.labels): s.value for s in r.samples} for name, r in results.items()}
    verdicts: list[Verdict] = []
    seen: dict[str, set[str]] = {THRESHOLD: set(), ANYDATA: set(), NODATA: set()}

    def add(v: Verdict) -> None:
        seen[v.check].add(series_key(v.check, ds_id, v.labels))
        verdicts.append(v)

    threshold = cfg.check_threshold
    if threshold is not None and threshold.enabled:
        recovery = threshold.recovery
        mode = recovery.mode if recovery is not None else ""
        ql_hits = None
        if mode == "ql" and recovery is not None and recovery.condition.strip():
            ql = await _query(runtime, target, recovery.condition, at_s)
            ql_hits = {_identity(s.labels) for s in ql.samples}
        for sample in primary:
            ident = _identity(sample.labels)
            values = {name: rows.get(ident) for name, rows in joined.items()}
            severity = next((sev for sev in SEVERITIES
                             if (expr := getattr(threshold, SEVERITY_KEY[sev])).strip()
                             and conditions.evaluate(expr, values)), "")
            alerting: bool | None = bool(severity)
            if not severity and mode == "threshold" and recovery is not None:
                alerting = False if conditions.evaluate(recovery.condition, values) else None
            elif not severity and mode == "ql":
                alerting = False if ql_hits is not None and ident in ql_hits else None
            add(Verdict(THRESHOLD, ds_id, sample.labels, alerting, severity, sample.value))
    anydata = cfg.check_anydata
    if anydata is not None and anydata.enabled:
        for sample in primary:
            add(Verdict(ANYDATA, ds_id, sample.labels, True, anydata.severity, sample.value))
        if anydata.recovery is not None and anydata.recovery.mode == "ql":
            ql = await _query(runtime, target, anydata.recovery.condition, at_s)
            recovered = any(s.value for s in ql.samples)
            for v in verdicts:
                if v.check == ANYDATA and recovered:
                    v.alerting = False
    nodata = cfg.check_nodata
    if nodata is not None and nodata.enabled:
        for sample in primary:
            add(Verdict(NODATA, ds_id, sample.labels, False, nodata.severity, sample.value))
        tracked = [r for r in known.values() if r.check_kind == NODATA and r.ds_id == ds_id]
        for row in tracked:
            if row.series_key in seen[NODATA]:
                continue
            labels = msgspec.json.decode(row.labels)
            if not labels and primary:
                add(Verdict(NODATA, ds_id, labels, False, nodata.severity))
                continue
            forget = bool(nodata.resolve_timeout and row.state == FIRING
                          and now_s - row.last_seen_at >= nodata.resolve_timeout)
            add(Verdict(NODATA, ds_id, labels, not forget, nodata.severity, forget=forget))
        if not primary and not tracked:
            add(Verdict(NODATA, ds_id, {}, True, nodata.severity))
    # Series of this source the checks knew that the query no longer returns: recovered.
    for row in known.values():
        if (row.ds_id == ds_id and row.check_kind in (THRESHOLD, ANYDATA)
                and row.series_key not in seen[row.check_kind]):
            anyql = (row.check_kind == ANYDATA and anydata is not None
                     and anydata.recovery is not None and anydata.recovery.mode == "ql")
            verdicts.append(Verdict(row.check_kind, ds_id, msgspec.json.decode(row.labels),
                                    None if anyql else False))
    if cfg.relate_queries and any(v.alerting for v in verdicts):
        await related.attach(functools.partial(_query, runtime, target, at_s=at_s),
                             body.rule_configs.relate_queries, verdicts, problems)
    return verdicts


@dataclass(frozen=True)
class _Known:
    series_key: str
    check_kind: str
    ds_id: int
    labels: str
    state: str
    last_seen_at: int


async def judge(runtime: Runtime, rule_row: Any, sources: list[Any], known_rows: list[Any],
                *, at_s: float, now_s: int) -> Outcome:
    body = decode_body(rule_row.body)
    known = {r.series_key: _Known(r.series_key, r.check_kind, r.ds_id, r.labels, r.state,
                                  r.last_seen_at) for r in known_rows}
    outcome = Outcome()
    chosen = datasources.matching_datasources(sources, body, rule_row.ds_type)
    if not chosen:
        outcome.errors.append("no enabled data source matches ds_ids / ds_list")
    for source in chosen:
        try:
            problems: list[str] = []
            target = target_of(runtime.deps.box, source)
            outcome.verdicts += await _judge_source(runtime, body, source.id, target, at_s,
                                                    known, now_s, problems)
            outcome.errors += [f"{source.name}: {p}" for p in problems]
        except prom.QueryFailed as exc:
            outcome.failed_ds.add(source.id)
            outcome.errors.append(f"{source.name}: {exc.reason}")
    return outcome


# --- writing the verdicts --------------------------------------------------------------


def _check_cfg(body: RuleBody, check: str) -> Any:
    cfg = body.rule_configs
    return {THRESHOLD: cfg.check_threshold, ANYDATA: cfg.check_anydata,
            NODATA: cfg.check_nodata}[check]


def _event(rule_row: Any, body: RuleBody, row: dict[str, Any], status: str,
           value: float | None,
           related_rows: dict[str, str] | None = None) -> ingestion.PushRequest:
    labels: dict[str, str] = {}
    related_rows = related_rows or {}
    context = {f"related_{name}": text for name, text in related_rows.items()}
    for source in (msgspec.json.decode(row["labels"]), body.labels, body.annotations, context):
        for k, v in source.items():
            if k and len(labels) < MAX_LABELS - 3:
                labels[str(k)[:128]] = str(v)[:2048]
    labels["monit_rule_id"] = str(rule_row.id)
    labels["monit_check"] = row["check_kind"]
    description = body.annotations.get("description") or body.description
    if value is not None:
        description = f"{description}\n\nvalue: {value:g}".strip()
    if related_rows:
        lines = "\n".join(f"{name}: {text}" for name, text in related_rows.items())
        description = f"{description}\n\nrelated queries:\n{lines}".strip()
    return ingestion.PushRequest(
        title_rule=(body.annotations.get("summary") or rule_row.name)[:512],
        event_status=status,  # type: ignore[arg-type]
        alert_key=f"monit:{rule_row.id}:{row['series_key']}"[:255],
        description=description[:16_384], labels=labels,
    )


async def _send(conn: AsyncConnection, rule_row: Any, body: RuleBody, req: Any,
                now_s: int, problems: list[str]) -> None:
    for channel_id in body.channel_ids:
        key_hash = await integrations.system_integration(
            conn, system_actor(int(rule_row.account_id), FixedClock(now_s)),
            channel_id=channel_id,
            integration_type=INTEGRATION_TYPE, name=INTEGRATION_NAME)
        if key_hash is None:
            problems.append(f"channel {channel_id} does not exist")
            continue
        try:
            async with conn.begin_nested():
                await conn.run_sync(functools.partial(ingestion.ingest, key_hash=key_hash,
                                                      req=req, now_s=now_s))
        except errors.ApiError as exc:
            problems.append(f"channel {channel_id}: {exc}")


def _step(row: dict[str, Any], v: Verdict, cfg: Any, body: RuleBody,
          now_s: int) -> str | None:
    """Advance one series' state by its verdict; the event status to send, if any."""
    need_alert = max(1, int(getattr(cfg, "alerting_check_times", 0) or 0))
    need_recover = max(1, int(getattr(cfg, "recovery_check_times", 0) or 0))
    if v.alerting is None:
        return None
    if v.alerting:
        row["hits"] += 1
        row["misses"] = 0
        row["last_seen_at"] = row["last_seen_at"] if v.check == NODATA else now_s
        if row["state"] == FIRING:
            if v.severity and v.severity != row["severity"]:
                row["severity"] = v.severity
                row["last_sent_at"] = now_s
                return v.severity
            repeats_left = body.repeat_total == 0 or row["sent_count"] - 1 < body.repeat_total
            if (body.repeat_interval > 0 and repeats_left
                    and now_s - row["last_sent_at"] >= body.repeat_interval):
                row["sent_count"] += 1
                row["last_sent_at"] = now_s
                return str(row["severity"])
            return None
        if row["hits"] >= need_alert:
            row.update(state=FIRING, severity=v.severity or WARNING, fired_at=now_s,
                       last_sent_at=now_s, sent_count=1)
            return str(row["severity"])
        row["state"] = PENDING
        return None
    row["hits"] = 0
    row["misses"] += 1
    row["last_seen_at"] = now_s
    if row["state"] == FIRING and (row["misses"] >= need_recover or v.forget):
        row.update(state=OK, sent_count=0)
        push = bool(getattr(cfg, "push_recovery_event", False)) or v.forget
        return RECOVERED if push else None
    if row["state"] != FIRING:
        row["state"] = OK
    return None


async def write_verdicts(conn: AsyncConnection, rule_row: Any, outcome: Outcome, *,
                         now_s: int) -> list[str]:
    """Apply the verdicts to the rule's series (read again in this transaction) and send the
    events; returns problems met while sending."""
    body = decode_body(rule_row.body)
    existing = {r.series_key: r for r in await repo.series_of(conn, rule_row.id)}
    problems: list[str] = []
    writes: list[dict[str, Any]] = []
    drops: list[str] = []
    for v in outcome.verdicts:
        key = series_key(v.check, v.ds_id, v.labels)
        old = existing.get(key)
        row: dict[str, Any] = (
            {c: getattr(old, c) for c in old._fields} if old is not None else {
                "rule_id": rule_row.id, "series_key": key, "account_id": rule_row.account_id,
                "check_kind": v.check, "ds_id": v.ds_id,
                "labels": msgspec.json.encode(v.labels).decode(),
                "state": OK, "severity": "", "hits": 0, "misses": 0, "fired_at": 0,
                "last_sent_at": 0, "sent_count": 0, "last_seen_at": now_s})
        row["value"] = "" if v.value is None else f"{v.value:g}"[:64]
        status = _step(row, v, _check_cfg(body, v.check), body, now_s)
        if status is not None:
            context = v.related if status != RECOVERED else None  # a recovery needs none
            await _send(conn, rule_row, body,
                        _event(rule_row, body, row, status, v.value, context), now_s, problems)
        keep = row["state"] in (FIRING, PENDING) or (v.check == NODATA and not v.forget)
        if keep:
            writes.append(row)
        elif old is not None:
            drops.append(key)
    await repo.delete_series(conn, rule_row.id, drops)
    await repo.upsert_series(conn, writes)
    return problems


async def resolve_all(conn: AsyncConnection, rule_row: Any, *, now_s: int) -> None:
    """The rule goes away (deleted, disabled, channels changed): its firing series recover
    in its channels now, and its series state is dropped."""
    body = decode_body(rule_row.body)
    problems: list[str] = []
    for row in await repo.firing_series(conn, rule_row.id):
        fields = {c: getattr(row, c) for c in row._fields}
        await _send(conn, rule_row, body, _event(rule_row, body, fields, RECOVERED, None), now_s,
                    problems)
    await repo.delete_series(conn, rule_row.id,
                             [r.series_key for r in await repo.series_of(conn, rule_row.id)])
    await repo.set_eval_status(conn, rule_row.id, {"firing_count": 0})


# --- evaluations ----------------------------------------------------------------------

# Rules of one job evaluated at once (their queries in flight together).
PARALLEL_QUERIES = 64


@dataclass
class _Judged:
    rule_id: int
    outcome: Outcome
    skipped: bool
    started_ms: int
    took_ms: int


async def evaluate_many(runtime: Runtime, conn: AsyncConnection,
                        items: list[tuple[int, int]]) -> None:
    """Evaluate rules (rule id, due time ms): every query of the batch in flight together
    outside any write transaction, then each rule's verdicts written in a savepoint of the
    job's transaction (one rule that fails to write loses only its own evaluation)."""
    ids = [rule_id for rule_id, _ in items]
    async with runtime.db.transaction(write=False) as read:
        rows = {r.id: r for r in await repo.rules_any_account(read, ids)}
        sources = {account: await repo.list_datasources(read, account, "")
                   for account in {r.account_id for r in rows.values()}}
        known = await repo.series_of_rules(read, ids)
        zones = {account: await accounts.account_time_zone(
            read, system_actor(account, runtime.clock)) for account in sources}
    gate = asyncio.Semaphore(PARALLEL_QUERIES)

    async def one(rule_row: Any, due_ms: int) -> _Judged:
        async with gate:
            started = time.perf_counter()
            started_ms = int(runtime.clock.now() * 1000)
            body = decode_body(rule_row.body)
            if not in_enabled_times(body, due_ms / 1000, zones[rule_row.account_id]):
                return _Judged(rule_row.id, Outcome(), True, started_ms, 0)
            outcome = await judge(runtime, rule_row, sources[rule_row.account_id],
                                  known.get(rule_row.id, []),
                                  at_s=due_ms / 1000 - rule_row.delay_seconds,
                                  now_s=int(runtime.clock.now()))
            return _Judged(rule_row.id, outcome, False, started_ms,
                           int((time.perf_counter() - started) * 1000))

    due = [(rows[rule_id], due_ms) for rule_id, due_ms in items
           if rule_id in rows and rows[rule_id].enabled]
    if not due:
        return
    pool = prom.ClientPool(runtime.deps.policy, transport=transport_override)
    token = _batch_clients.set(pool)
    try:
        judged = await asyncio.gather(*(one(row, due_ms) for row, due_ms in due))
    finally:
        _batch_clients.reset(token)
        await pool.aclose()
    for result in judged:
        try:
            # A unit of work in the rule's savepoint: what its services note (an integration
            # made on first use) is flushed with it, or dropped with it.
            async with conn.begin_nested(), unit(runtime, None, write=True, conn=conn):
                await _write(runtime, conn, result)
        except Exception:
            log.exception("writing an alert rule's evaluation failed", rule_id=result.rule_id)


async def _write(runtime: Runtime, conn: AsyncConnection, judged: _Judged) -> None:
    # The rule read again (locked on PostgreSQL): deleted or disabled since -> nothing.
    current = await repo.get_rule_any_account(conn, judged.rule_id, lock=True)
    if current is None or not current.enabled:
        return
    now_s = int(runtime.clock.now())
    outcome = judged.outcome
    problems = [] if judged.skipped else await write_verdicts(conn, current, outcome,
                                                              now_s=now_s)
    firing = sum(1 for r in await repo.series_of(conn, judged.rule_id) if r.state == FIRING)
    error = "; ".join(outcome.errors + problems)[:4000]
    await repo.set_eval_status(conn, judged.rule_id, {
        "last_eval_at_ms": judged.started_ms, "last_error": error, "firing_count": firing,
        "last_eval_ms": judged.took_ms,
    })
    if error:
        log.warning("alert rule evaluation had errors", rule_id=judged.rule_id, error=error)
