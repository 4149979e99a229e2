"""Domain values of the incident analytics: what to aggregate (a filter over a window, a grid
of local-time buckets) and what comes back (raw sums per group; the insight domain turns them
into means and percentages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Unit = Literal["day", "week", "month"]
Dimension = Literal["account", "channel", "team"]


@dataclass(frozen=True, slots=True)
class Filter:
    """Incidents started in [start_time, end_time] (both included), narrowed by the reference
    InsightFilter's fields (already validated by the caller)."""

    start_time: int
    end_time: int
    team_ids: tuple[int, ...] = ()
    channel_ids: tuple[int, ...] = ()
    responder_ids: tuple[int, ...] = ()
    severities: tuple[str, ...] = ()
    incident_ids: tuple[str, ...] = ()
    query: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    seconds_to_ack_from: int | None = None
    seconds_to_ack_to: int | None = None
    seconds_to_close_from: int | None = None
    seconds_to_close_to: int | None = None


@dataclass(frozen=True, slots=True)
class Grid:
    """How incidents fall into groups by their start time, in a time zone: `offsets` are the
    zone's UTC offsets over the window (kit/localtime.offsets); `unit` None means one group
    for the whole window; `month_starts` (local seconds) are needed for unit "month"."""

    offsets: tuple[tuple[int, int], ...]
    unit: Unit | None = None
    month_starts: tuple[int, ...] = ()
    split_hours: bool = False


@dataclass(slots=True)
class Totals:
    """Sums over one group. `bucket` is the unit's number (local day, Monday-week) or, for
    months, the local seconds of the month's first day; `key` the channel, team or responder
    id (0 for the account, or for incidents without a channel/team)."""

    bucket: int = 0
    hours: str = ""
    key: int = 0
    incidents: int = 0
    acknowledged: int = 0
    closed: int = 0
    manually_closed: int = 0
    timeout_closed: int = 0
    escalated: int = 0
    manually_escalated: int = 0
    timeout_escalated: int = 0
    reassigned: int = 0
    seconds_to_ack: int = 0
    seconds_to_close: int = 0
    engaged_seconds: int = 0
    alerts: int = 0
    alert_events: int = 0
    alerted_incidents: int = 0  # incidents with at least one alert (for noise reduction)
    notifications: int = 0  # deliveries to people (one per channel)
    interruptions: int = 0  # distinct moments a person was paged


@dataclass(slots=True)
class IncidentFacts:
    """One incident with its handling figures, for /insight/incident/list and its export."""

    incident_id: str
    title: str
    description: str
    channel_id: int
    channel_name: str
    team_id: int
    team_name: str
    progress: str
    severity: str
    start_time: int
    ack_time: int
    close_time: int
    closer_id: int
    creator_id: int
    creator_name: str
    timeout_closed: bool
    labels: dict[str, Any]
    fields: dict[str, Any]
    assigned_to: dict[str, Any]
    responders: list[dict[str, Any]]
    assignments: int = 0
    reassignments: int = 0
    acknowledgements: int = 0
    escalations: int = 0
    timeout_escalations: int = 0
    manual_escalations: int = 0


@dataclass(slots=True)
class LabelTotals:
    label: str
    hours: str
    alerts: int
    alert_events: int
