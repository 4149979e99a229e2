"""On-call reports: the SMS, voice calls and e-mails sent, and the changes made, per local
day, week or month of a window.

The sums are GROUP BY queries of the incident domain (incident/analytics for deliveries,
incident/change for changes), on the same local-time grid as the insights (kit/localtime);
this module validates the question, lays the grid, and answers one item per bucket of the
window, zeros included, so a chart needs no gaps filled. Buckets are in the account's time
zone unless the request names one. Who may ask: those who may read the insights (READ)."""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.incident.service import analytics, changes
from dutyline.insight.report_schemas import ChangeReportItem, NotificationReportItem
from dutyline.insight.service import MAX_WINDOW_S, READ
from dutyline.kit import localtime
from dutyline.platform.account import service as accounts


@dataclass(frozen=True)
class _Window:
    grid: analytics.Grid
    buckets: list[tuple[int, int]]  # (bucket, ts) of every bucket of the window, in order


def _window(conn: Connection, actor: Actor, *, start_time: int, end_time: int,
            step: str, time_zone: str) -> _Window:
    if end_time <= start_time:
        raise errors.invalid("end_time", "must be after start_time")
    if end_time - start_time > MAX_WINDOW_S:
        raise errors.invalid("end_time", "the time range cannot exceed one year")
    tz = localtime.zone(time_zone or accounts.account_time_zone_sync(conn, actor))
    if tz is None:
        if time_zone:
            raise errors.invalid("time_zone", "is not a known IANA time zone")
        tz = ZoneInfo("UTC")
    first = localtime.local_seconds(tz, start_time)
    last = localtime.local_seconds(tz, end_time - 1)
    months: tuple[int, ...] = ()
    buckets: list[tuple[int, int]]
    if step == "month":
        months = tuple(localtime.month_starts_local(first, last))
        buckets = [(m, localtime.midnight_utc(tz, m // localtime.DAY_S)) for m in months]
    elif step == "week":
        buckets = [(w, localtime.week_start_utc(tz, w)) for w in
                   range((first // localtime.DAY_S + 3) // 7,
                         (last // localtime.DAY_S + 3) // 7 + 1)]
    else:
        buckets = [(d, localtime.midnight_utc(tz, d)) for d in
                   range(first // localtime.DAY_S, last // localtime.DAY_S + 1)]
    grid = analytics.Grid(offsets=tuple(localtime.offsets(tz, start_time, end_time)),
                          unit=step, month_starts=months)  # type: ignore[arg-type]
    return _Window(grid, buckets)


@reads_sync(*READ)
def notifications_sync(conn: Connection, actor: Actor, *, start_time: int,
                       end_time: int, step: str, time_zone: str = "",
                       channel_ids: list[int] | None = None) -> list[NotificationReportItem]:
    """/report/oncall/notifications: per bucket, the SMS, voice calls and e-mails sent for
    the incidents the caller may see (of `channel_ids` when given)."""
    w = _window(conn, actor, start_time=start_time, end_time=end_time, step=step,
                time_zone=time_zone)
    sums = analytics.delivery_totals_sync(
        conn, actor, start_time=start_time, end_time=end_time, grid=w.grid,
        channel_ids=tuple(dict.fromkeys(channel_ids or ())))
    items = []
    for bucket, ts in w.buckets:
        kinds = sums.get(bucket, {})
        items.append(NotificationReportItem(ts=ts, sms_cnt=kinds.get("sms", 0),
                                            voice_cnt=kinds.get("voice", 0),
                                            email_cnt=kinds.get("email", 0)))
    return items


@reads_sync(*READ)
def changes_made_sync(conn: Connection, actor: Actor, *, start_time: int,
                      end_time: int, step: str, time_zone: str = "") -> list[ChangeReportItem]:
    """/report/oncall/changes: per bucket, the changes that started and the change events
    received, of the channels the caller may see."""
    w = _window(conn, actor, start_time=start_time, end_time=end_time, step=step,
                time_zone=time_zone)
    started, received = changes.change_totals_sync(conn, actor, start_time=start_time,
                                                   end_time=end_time, grid=w.grid)
    return [ChangeReportItem(ts=ts, change_cnt=started.get(bucket, 0),
                             change_event_cnt=received.get(bucket, 0))
            for bucket, ts in w.buckets]
