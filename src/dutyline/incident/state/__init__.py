"""The incident state machine: every transition of an incident written once, whoever makes it
(an API operation, a console page, a signed link, ingestion, a job).

    Triggered -(acknowledge)-> Processing -(unacknowledge)-> Triggered
    Triggered | Processing -(close: resolve, recovery, timeout, merge away, emptied)-> Closed
    Closed -(reopen)-> Triggered
    snooze / wake: open incidents only; closing ends a snooze.
    severity: while open, the worst of its active alerts (kept when none is active) or what
    a person set; the status follows the severity while open and reads Ok once closed.

- `values`: what each transition accepts (its `Guard`) and the column values it writes;
- `transitions`: the transitions themselves (precondition, values, alert side effects, feed
  entry, event), sync functions of a `Connection`;
- `repository`: their SQL, with the severity rule as SQL for ingestion's one-statement
  count (`raised_severity`).

A close, however it happens, writes `values.closed`, ends the incident's active alerts (or
finds none left), and emits one `resolved` event naming its `reason`."""

from dutyline.incident.state.repository import raised_severity
from dutyline.incident.state.transitions import (
    BY_HAND,
    MERGED,
    RECOVERED,
    TIMED_OUT,
    By,
    acknowledge,
    alerts_joined,
    alerts_left,
    begin,
    by,
    close,
    counts,
    merge_away,
    recompute_severity,
    record,
    recounted,
    reopen,
    require,
    resolve,
    snooze,
    unacknowledge,
    wake,
)
from dutyline.incident.state.values import (
    ACKNOWLEDGE,
    MERGE_TARGET,
    REOPEN,
    RESOLVE,
    SNOOZE,
    UNACKNOWLEDGE,
    WAKE,
    Guard,
    Values,
    opened,
    severity_set,
)

__all__ = [
    "ACKNOWLEDGE",
    "BY_HAND",
    "MERGED",
    "MERGE_TARGET",
    "RECOVERED",
    "REOPEN",
    "RESOLVE",
    "SNOOZE",
    "TIMED_OUT",
    "UNACKNOWLEDGE",
    "WAKE",
    "By",
    "Guard",
    "Values",
    "acknowledge",
    "alerts_joined",
    "alerts_left",
    "begin",
    "by",
    "close",
    "counts",
    "merge_away",
    "opened",
    "raised_severity",
    "recompute_severity",
    "record",
    "recounted",
    "reopen",
    "require",
    "resolve",
    "severity_set",
    "snooze",
    "unacknowledge",
    "wake",
]
