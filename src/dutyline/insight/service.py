"""Insights: incident figures per account, channel, team and responder, per local day, week or
month or over the whole window, and the incidents behind them.

The sums come from the incident domain (incident/analytics: GROUP BY in the database, over
what the caller may see); this module validates the question, lays the time zone's grid
(kit/localtime), and derives the reference's figures from the sums:
- mean_seconds_to_ack: over acknowledged incidents, first acknowledgement - start;
- mean_seconds_to_close: over closed incidents, close - start;
- acknowledgement_pct / escalation_pct: share of the incidents acknowledged / escalated;
- noise_reduction_pct: 100 * (1 - incidents with alerts / their alerts), the alerts that
  grouping kept from opening incidents of their own (alerts per incident a/i: 1 - 1/(a/i));
- engaged seconds: first acknowledgement to close, for closed incidents;
- notifications: the deliveries to people for the incidents (one per person and channel);
  interruptions: the distinct moments a person was paged (an escalation step's channels
  reach a person at once: one interruption). Group targets page nobody and count in neither.

The reference asks for "Analytics Read" (on-call). dutyline has no analytics permission; the
figures are aggregates of the incidents /incident/list shows, so each service here takes the
same read permissions (`READ`: channel_view, which Member holds, or incident_manage), and
counts only what the caller may see there (private channels of other teams are left out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.incident.service import analytics
from dutyline.insight import export
from dutyline.insight.schemas import (
    DimensionInsightItem,
    IncidentRawItem,
    InsightAlertByLabelItem,
    ResponderInsightItem,
)
from dutyline.kit import localtime
from dutyline.kit.vocabulary import CLOSED
from dutyline.platform.account import service as accounts
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams

MAX_WINDOW_S = 366 * 86_400  # "the time range cannot exceed one year"
MAX_DAY_WINDOW_S = 31 * 86_400  # aggregate_unit day: at most 31 days
EXPORT_MAX_ROWS = 10_000  # an export is one response: bounded like a page window
_EXPORT_CHUNK = 500
READ = (CHANNEL_VIEW, INCIDENT_MANAGE)


@dataclass(frozen=True)
class Query:
    """The question of every /insight/* operation (reference InsightFilter and
    InsightQueryRequest), as the endpoints pass it on."""

    start_time: int
    end_time: int
    team_ids: list[int] = field(default_factory=list)
    channel_ids: list[int] = field(default_factory=list)
    responder_ids: list[int] = field(default_factory=list)
    severities: list[str] = field(default_factory=list)
    incident_ids: list[str] = field(default_factory=list)
    query: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    asc: bool = False
    is_my_team: bool = False
    time_zone: str = ""
    seconds_to_close_from: int | None = None
    seconds_to_close_to: int | None = None
    seconds_to_ack_from: int | None = None
    seconds_to_ack_to: int | None = None
    split_hours: bool = False
    aggregate_unit: str = ""
    export_fields: list[str] = field(default_factory=list)
    description_html_to_text: bool = False


@dataclass(frozen=True)
class _Prepared:
    filter: analytics.Filter
    grid: analytics.Grid
    tz: ZoneInfo
    empty: bool  # is_my_team and the caller has no team: nothing to count


def _range(q: Query, lo: str) -> None:
    a, b = getattr(q, f"{lo}_from"), getattr(q, f"{lo}_to")
    if a is not None and b is not None and b <= a:
        raise errors.invalid(f"{lo}_to", f"must be greater than {lo}_from")


def _prepare(conn: Connection, actor: Actor, q: Query, *, grid: bool = True) -> _Prepared:
    if q.end_time <= q.start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if q.end_time - q.start_time > MAX_WINDOW_S:
        raise errors.invalid("end_time", "the time range cannot exceed one year")
    unit = q.aggregate_unit if grid else ""
    if unit and q.end_time - q.start_time < 86_400:
        raise errors.invalid("end_time", "with aggregate_unit the range must cover 24 hours")
    if unit == "day" and q.end_time - q.start_time > MAX_DAY_WINDOW_S:
        raise errors.invalid("end_time", "with aggregate_unit day the range is at most 31 days")
    _range(q, "seconds_to_ack")
    _range(q, "seconds_to_close")
    for key in q.labels:
        if not key or len(key) > 128:
            raise errors.invalid("labels", "keys must be 1 to 128 characters")
    fields: dict[str, str] = {}
    for key, value in q.fields.items():
        if not key or len(key) > 128 or not isinstance(value, str):
            raise errors.invalid("fields", "must map field names to string values")
        fields[key] = value
    name = q.time_zone or accounts.account_time_zone_sync(conn, actor)
    tz = localtime.zone(name)
    if tz is None:
        if q.time_zone:
            raise errors.invalid("time_zone", "is not a known IANA time zone")
        tz = ZoneInfo("UTC")
    team_ids = set(q.team_ids)
    empty = False
    if q.is_my_team:
        mine = actor.team_ids_sync(conn)
        team_ids = (team_ids & mine) if team_ids else set(mine)
        empty = not team_ids
    offsets = localtime.offsets(tz, q.start_time, q.end_time + 1)  # the end is included
    months: tuple[int, ...] = ()
    if unit == "month":
        months = tuple(localtime.month_starts_local(
            localtime.local_seconds(tz, q.start_time), localtime.local_seconds(tz, q.end_time)))
    return _Prepared(
        filter=analytics.Filter(
            start_time=q.start_time, end_time=q.end_time, team_ids=tuple(sorted(team_ids)),
            channel_ids=tuple(dict.fromkeys(q.channel_ids)),
            responder_ids=tuple(dict.fromkeys(q.responder_ids)),
            severities=tuple(dict.fromkeys(q.severities)),
            incident_ids=tuple(dict.fromkeys(i.lower() for i in q.incident_ids)),
            query=q.query.strip(), labels=dict(q.labels), fields=fields,
            seconds_to_ack_from=q.seconds_to_ack_from, seconds_to_ack_to=q.seconds_to_ack_to,
            seconds_to_close_from=q.seconds_to_close_from,
            seconds_to_close_to=q.seconds_to_close_to,
        ),
        grid=analytics.Grid(offsets=tuple(offsets), unit=unit or None,  # type: ignore[arg-type]
                            month_starts=months, split_hours=q.split_hours and grid),
        tz=tz, empty=empty,
    )


def _ts(tz: ZoneInfo, grid: analytics.Grid, bucket: int) -> int | None:
    if grid.unit == "day":
        return localtime.midnight_utc(tz, bucket)
    if grid.unit == "week":
        return localtime.week_start_utc(tz, bucket)
    if grid.unit == "month":
        return localtime.midnight_utc(tz, bucket // localtime.DAY_S)
    return None


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def _mean(total: int, count: int) -> float:
    return round(total / count, 2) if count else 0.0


def _noise(t: analytics.Totals) -> float:
    if t.alerts <= 0:
        return 0.0
    return max(0.0, round(100.0 * (1 - t.alerted_incidents / t.alerts), 2))


def _dimension_item(t: analytics.Totals, ts: int | None, hours: str | None,
                    **ids: Any) -> DimensionInsightItem:
    return DimensionInsightItem(
        ts=ts, hours=hours, **ids,
        total_incident_cnt=t.incidents, total_incidents_acknowledged=t.acknowledged,
        total_incidents_closed=t.closed,
        total_incidents_auto_closed=t.closed - t.manually_closed - t.timeout_closed,
        total_incidents_manually_closed=t.manually_closed,
        total_incidents_timeout_closed=t.timeout_closed,
        total_incidents_escalated=t.escalated,
        total_incidents_manually_escalated=t.manually_escalated,
        total_incidents_timeout_escalated=t.timeout_escalated,
        total_incidents_reassigned=t.reassigned, total_interruptions=t.interruptions,
        total_notifications=t.notifications,
        total_engaged_seconds=t.engaged_seconds, total_seconds_to_ack=t.seconds_to_ack,
        total_seconds_to_close=t.seconds_to_close,
        mean_seconds_to_ack=_mean(t.seconds_to_ack, t.acknowledged),
        mean_seconds_to_close=_mean(t.seconds_to_close, t.closed),
        noise_reduction_pct=_noise(t), acknowledgement_pct=_pct(t.acknowledged, t.incidents),
        escalation_pct=_pct(t.escalated, t.incidents),
        total_alert_cnt=t.alerts, total_alert_event_cnt=t.alert_events,
    )


@reads_sync(*READ)
def dimension_sync(conn: Connection, actor: Actor, *, by: analytics.Dimension,
                   query: Query) -> list[DimensionInsightItem]:
    """/insight/account|channel|team: one item per (bucket, hours, group) with incidents;
    the account over the whole window always answers one item (zeros when quiet)."""
    p = _prepare(conn, actor, query)
    rows = [] if p.empty else analytics.totals_sync(conn, actor, filter=p.filter,
                                                    grid=p.grid, by=by)
    if by == "account" and not rows and p.grid.unit is None and not p.grid.split_hours:
        rows = [analytics.Totals()]
    if by == "channel":
        found = channels.channel_names_sync(conn, actor, [t.key for t in rows if t.key])
        names = {channel_id: name for channel_id, (name, _) in found.items()}
    elif by == "team":
        names = teams.team_names_sync(conn, actor, {t.key for t in rows})
    items: list[DimensionInsightItem] = []
    for t in rows:
        ts, hours = _ts(p.tz, p.grid, t.bucket), (t.hours or None)
        if by == "channel":
            items.append(_dimension_item(t, ts, hours, channel_id=t.key,
                                         channel_name=names.get(t.key, "")))
        elif by == "team":
            items.append(_dimension_item(t, ts, hours, team_id=t.key,
                                         team_name=names.get(t.key, "")))
        else:
            items.append(_dimension_item(t, ts, hours, account_id=actor.account_id))
    return items


@reads_sync(*READ)
def responders_sync(conn: Connection, actor: Actor, *,
                    query: Query) -> list[ResponderInsightItem]:
    """/insight/responder: one item per (bucket, hours, responder)."""
    p = _prepare(conn, actor, query)
    rows = [] if p.empty else analytics.responder_totals_sync(conn, actor, filter=p.filter,
                                                              grid=p.grid)
    names = {person_id: name for person_id, (name, _) in
             members.member_names_sync(conn, actor, {t.key for t in rows}).items()}
    return [
        ResponderInsightItem(
            ts=_ts(p.tz, p.grid, t.bucket), hours=t.hours or None, responder_id=t.key,
            responder_name=names.get(t.key, ""), total_incident_cnt=t.incidents,
            total_incidents_acknowledged=t.acknowledged,
            total_incidents_reassigned=t.reassigned, total_incidents_escalated=t.escalated,
            total_incidents_timeout_escalated=t.timeout_escalated,
            total_incidents_manually_escalated=t.manually_escalated,
            total_interruptions=t.interruptions,
            total_notifications=t.notifications, total_engaged_seconds=t.engaged_seconds,
            total_seconds_to_ack=t.seconds_to_ack,
            mean_seconds_to_ack=_mean(t.seconds_to_ack, t.acknowledged),
            acknowledgement_pct=_pct(t.acknowledged, t.incidents),
        )
        for t in rows
    ]


def _raw_item(tz: ZoneInfo, f: analytics.IncidentFacts, html_to_text: bool) -> IncidentRawItem:
    closed = f.progress == CLOSED
    closed_by = None
    if closed:
        closed_by = "manually" if f.closer_id else ("timeout" if f.timeout_closed else "auto")
    return IncidentRawItem(
        incident_id=f.incident_id, title=f.title,
        description=export.html_to_text(f.description) if html_to_text else f.description,
        team_id=f.team_id, team_name=f.team_name, channel_id=f.channel_id,
        channel_name=f.channel_name, progress=f.progress, severity=f.severity,
        created_at=f.start_time, closed_by=closed_by,  # type: ignore[arg-type]
        seconds_to_ack=f.ack_time - f.start_time if f.ack_time else 0,
        seconds_to_close=f.close_time - f.start_time if closed else 0,
        engaged_seconds=f.close_time - f.ack_time if closed and f.ack_time else 0,
        hours=localtime.hours_of(localtime.local_seconds(tz, f.start_time)),
        responders=f.responders, assigned_to=f.assigned_to or None, labels=f.labels,
        fields=f.fields, notifications=0, interruptions=0, assignments=f.assignments,
        reassignments=f.reassignments, acknowledgements=f.acknowledgements,
        escalations=f.escalations, timeout_escalations=f.timeout_escalations,
        manual_escalations=f.manual_escalations, creator_id=f.creator_id,
        creator_name=f.creator_name,
    )


@reads_sync(*READ)
def incidents_sync(conn: Connection, actor: Actor, *, query: Query, offset: int,
                   limit: int) -> tuple[int, bool, list[IncidentRawItem]]:
    """/insight/incident/list: (total, has_next_page, items) of one page."""
    p = _prepare(conn, actor, query, grid=False)
    if p.empty:
        return 0, False, []
    total, facts = analytics.incident_page_sync(conn, actor, filter=p.filter, asc=query.asc,
                                                offset=offset, limit=limit)
    items = [_raw_item(p.tz, f, query.description_html_to_text) for f in facts]
    return total, offset + len(items) < total, items


@reads_sync(*READ)
def alert_topk_sync(conn: Connection, actor: Actor, *, query: Query, label: str, k: int,
                    orderby: str, asc: bool) -> list[InsightAlertByLabelItem]:
    """/insight/alert/topk-by-label: the k `check` or `resource` label values with the most
    alerts (or alert events) that started in the window."""
    p = _prepare(conn, actor, query)
    if p.empty:
        return []
    rows = analytics.alert_label_totals_sync(
        conn, actor, filter=p.filter, grid=p.grid, label=label, k=k,
        by_events=orderby == "total_alert_event_cnt", asc=asc)
    return [InsightAlertByLabelItem(label=r.label, hours=r.hours or None,
                                    total_alert_cnt=r.alerts,
                                    total_alert_event_cnt=r.alert_events) for r in rows]


@reads(*READ)
async def dimension(conn: AsyncConnection, actor: Actor, *, by: analytics.Dimension,
                    query: Query) -> list[DimensionInsightItem]:
    """`dimension_sync` on an async connection."""
    return await conn.run_sync(lambda sync: dimension_sync(sync, actor, by=by, query=query))


@reads(*READ)
async def responders(conn: AsyncConnection, actor: Actor, *,
                     query: Query) -> list[ResponderInsightItem]:
    """`responders_sync` on an async connection."""
    return await conn.run_sync(lambda sync: responders_sync(sync, actor, query=query))


# --- exports -------------------------------------------------------------------------------

def _csv_of(items: list[Any], struct: type[Any], wanted: list[str],
            drop: tuple[str, ...] = ()) -> str:
    available = [f for f in struct.__struct_fields__ if f not in drop]
    header = export.columns(available, wanted)
    return export.render(header, ({f: getattr(i, f) for f in header} for i in items))


@reads(*READ)
async def dimension_csv(conn: AsyncConnection, actor: Actor, *, by: analytics.Dimension,
                        query: Query) -> str:
    items = await dimension(conn, actor, by=by, query=query)
    drop = {"channel": ("account_id", "team_id", "team_name"),
            "team": ("account_id", "channel_id", "channel_name"),
            "account": ("channel_id", "channel_name", "team_id", "team_name")}[by]
    return _csv_of(items, DimensionInsightItem, query.export_fields, drop)


@reads(*READ)
async def responders_csv(conn: AsyncConnection, actor: Actor, *, query: Query) -> str:
    return _csv_of(await responders(conn, actor, query=query), ResponderInsightItem,
                   query.export_fields)


_INCIDENT_COLUMNS: dict[str, Callable[[IncidentRawItem], Any]] = {
    name: (lambda n: lambda i: getattr(i, n))(name)
    for name in IncidentRawItem.__struct_fields__
}
# Responders in a spreadsheet: their names (or ids), not the JSON of their entries.
_INCIDENT_COLUMNS["responders"] = lambda i: ";".join(
    str(r.get("person_name") or r.get("person_id", "")) for r in i.responders)


@reads(*READ)
async def incidents_csv(conn: AsyncConnection, actor: Actor, *, query: Query) -> str:
    """Every incident of the filter (at most EXPORT_MAX_ROWS), one row each."""
    return await conn.run_sync(_incidents_csv, actor, query)


def _incidents_csv(conn: Connection, actor: Actor, query: Query) -> str:
    header = export.columns(list(_INCIDENT_COLUMNS), query.export_fields)
    p = _prepare(conn, actor, query, grid=False)
    records: list[dict[str, Any]] = []
    offset = 0
    while not p.empty and offset < EXPORT_MAX_ROWS:
        _, facts = analytics.incident_page_sync(
            conn, actor, filter=p.filter, asc=query.asc, offset=offset,
            limit=min(_EXPORT_CHUNK, EXPORT_MAX_ROWS - offset), with_total=False)
        for f in facts:
            item = _raw_item(p.tz, f, query.description_html_to_text)
            records.append({h: _INCIDENT_COLUMNS[h](item) for h in header})
        if len(facts) < _EXPORT_CHUNK:
            break
        offset += len(facts)
    return export.render(header, records)
