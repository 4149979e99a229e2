"""Alerts into incidents: the grouping key, finding or opening the incident, its counters
and severity, closing it when every alert recovered (through incident/state, the one
place an incident's transitions are written), and the auto-resolve timer.

Grouping methods (the channel's `group.method`):
- `n`: every new alert opens its own incident.
- `p`: alerts agreeing on the values at the `equals` paths join the open (not Closed)
  incident of the channel with the same key, if it started within `time_window` (0: any).
  With no `equals` (the reference accepts `p` without it), every alert agrees: all the
  alerts of the window share one incident.
- `i`: "intelligent" grouping needs similarity scoring we do not have; it behaves as `p`,
  and with no `equals` configured groups by the alert's `title_rule`.

An `equals` entry is a list of paths (`labels.host`, a bare label name, or one of `title`,
`title_rule`, `severity`, `description`, `alert_key`). The first entry whose paths all
resolve is the key; when none does, the first entry is used with empty values, unless
`all_equals_required`, in which case the alert opens its own incident.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection

from dutyline.incident import events, state
from dutyline.incident.creation import NewIncident, open_incident_sync
from dutyline.incident.ingest import repository as repo
from dutyline.incident.ingest.alerts import encode
from dutyline.incident.ingest.channels import IngestSettings
from dutyline.kit.vocabulary import CLOSED, OK
from dutyline.work import queue

__all__ = ["AUTO_RESOLVE_JOB", "CLOSED", "attach", "attach_telling", "count_event",
           "drop_active_alert", "group_key", "schedule_auto_resolve"]

AUTO_RESOLVE_JOB = "incident.auto_resolve"
DEFAULT_EQUALS: tuple[tuple[str, ...], ...] = (("title_rule",),)

# `p` with no `equals`: no path to disagree on, so one key for the whole channel.
_EVERY_ALERT_AGREES = hashlib.md5(b'["p",[],[]]', usedforsecurity=False).hexdigest()
_FIELDS = {"title", "title_rule", "severity", "alert_severity", "description", "alert_key"}


def _resolve(path: str, fields: dict[str, str], labels: dict[str, str]) -> str | None:
    if path.startswith("labels."):
        return labels.get(path[7:])
    if path in _FIELDS:
        return fields.get(path)
    return labels.get(path)


def group_key(
    settings: IngestSettings, *, fields: dict[str, str], labels: dict[str, str]
) -> str | None:
    """The incident grouping key (equals_md5) of an alert; None: it opens its own incident."""
    method = settings.group_method
    if method not in ("p", "i"):
        return None
    if method == "p" and not settings.equals:
        return _EVERY_ALERT_AGREES
    candidates = settings.equals or DEFAULT_EQUALS
    chosen: tuple[tuple[str, ...], list[str]] | None = None
    for paths in candidates:
        values = [_resolve(p, fields, labels) for p in paths]
        if all(v is not None for v in values):
            chosen = (paths, [v or "" for v in values])
            break
    if chosen is None:
        if settings.all_equals_required:
            return None
        paths = candidates[0]
        chosen = (paths, [_resolve(p, fields, labels) or "" for p in paths])
    return hashlib.md5(encode([method, *chosen]).encode(), usedforsecurity=False).hexdigest()


def attach(
    conn: Connection, settings: IngestSettings, *, account_id: int, channel_id: int,
    integration_id: int, alert_id: str, title: str, description: str, severity: str,
    labels: dict[str, str], fields: dict[str, str], now_s: int,
) -> str:
    """Put a new alert into an incident (joining one or opening one); returns its id."""
    return attach_telling(
        conn, settings, account_id=account_id, channel_id=channel_id,
        integration_id=integration_id, alert_id=alert_id, title=title,
        description=description, severity=severity, labels=labels, fields=fields,
        now_s=now_s)[0]


def attach_telling(
    conn: Connection, settings: IngestSettings, *, account_id: int, channel_id: int,
    integration_id: int, alert_id: str, title: str, description: str, severity: str,
    labels: dict[str, str], fields: dict[str, str], now_s: int,
) -> tuple[str, bool]:
    """`attach`, telling whether the alert opened the incident (True) or joined one."""
    key = group_key(settings, fields=fields, labels=labels)
    if key is not None:
        repo.lock_group(conn, channel_id, key)
        found = repo.open_incident_of_group(
            conn, account_id=account_id, channel_id=channel_id, key=key,
            started_since=now_s - settings.time_window if settings.time_window > 0 else None)
        if found is not None:
            repo.count_joined_alert(conn, found, severity=severity, now_s=now_s)
            events.emit_sync(
                conn, account_id=account_id, incident_id=found, kind=events.ALERT_ADDED,
                now_s=now_s, payload={"alert_id": alert_id, "severity": severity},
            )
            schedule_auto_resolve(conn, settings, found, severity, now_s=now_s)
            return found, False
    incident_id = open_incident_sync(
        conn,
        NewIncident(
            account_id=account_id, title=title, severity=severity, channel_id=channel_id,
            integration_id=integration_id, description=description, labels=labels,
            equals_md5=key or "", group_method=settings.group_method, first_alert=True,
        ),
        now_s=now_s,
    )
    schedule_auto_resolve(conn, settings, incident_id, severity, now_s=now_s)
    return incident_id, True


def count_event(
    conn: Connection, settings: IngestSettings, *, incident_id: str, status: str,
    raised_to: str | None, now_s: int,
) -> None:
    """Count one more event of an alert already in the incident. `raised_to`: the alert's
    new worst severity when this event raised it. An Ok event recovered the alert."""
    recovered = status == OK
    # The UPDATE comes first: on PostgreSQL it locks the incident row, so the severity
    # recomputed below sees every concurrent change to its alerts.
    row = repo.count_event(conn, incident_id, raised_to=raised_to, recovered=recovered,
                           now_s=now_s)
    if row is None or row[2] == CLOSED:
        return
    account_id, active_cnt, channel_id = int(row[0]), int(row[1]), int(row[3])
    if recovered:
        if active_cnt <= 0:
            if not settings.disable_auto_close:
                state.close(conn, incident_id=incident_id, account_id=account_id,
                            channel_id=channel_id, now_s=now_s, reason=state.RECOVERED)
                return
        else:
            state.recompute_severity(conn, incident_id)
    schedule_auto_resolve(conn, settings, incident_id, status, now_s=now_s)


def drop_active_alert(conn: Connection, incident_id: str, *, now_s: int) -> None:
    """One alert of a closed incident ended without an Ok: keep its counter honest."""
    repo.drop_active_alert(conn, incident_id, now_s=now_s)


def schedule_auto_resolve(
    conn: Connection, settings: IngestSettings, incident_id: str, status: str, *,
    now_s: int,
) -> None:
    """(Re)arm the channel's auto-resolve timer: mode `trigger` counts from the last
    triggering (non-Ok) event, `update` from the last event of any kind."""
    timeout = settings.auto_resolve_timeout
    if timeout <= 0 or (status == OK and settings.auto_resolve_mode != "update"):
        return
    queue.schedule_sync(
        conn, AUTO_RESOLVE_JOB, {"incident_id": incident_id}, now_ms=now_s * 1000,
        run_at_ms=(now_s + timeout) * 1000, dedupe_key=f"{AUTO_RESOLVE_JOB}:{incident_id}",
    )
