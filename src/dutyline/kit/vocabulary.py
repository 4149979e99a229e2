"""The words an incident's state is written in, defined once: its severities (and their
rank, worst last), the `Ok` status of a recovered alert or a closed incident, and its
progress. The wire types (`Literal`s) are the source; the tuples are read from them.

No other module of the package spells these words, nor a list of the lowercase keys
severities are stored under (`tests/arch/test_vocabulary.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, get_args

Severity = Literal["Critical", "Warning", "Info"]
# An alert event's status, an alert's or an incident's: a severity while firing, Ok after.
Status = Literal["Critical", "Warning", "Info", "Ok"]
Progress = Literal["Triggered", "Processing", "Closed"]

SEVERITIES: Final[tuple[Severity, ...]] = get_args(Severity)
STATUSES: Final[tuple[Status, ...]] = get_args(Status)
PROGRESSES: Final[tuple[Progress, ...]] = get_args(Progress)

CRITICAL: Final = "Critical"
WARNING: Final = "Warning"
INFO: Final = "Info"
OK: Final = "Ok"
TRIGGERED: Final = "Triggered"
PROCESSING: Final = "Processing"
CLOSED: Final = "Closed"
OPEN: Final[tuple[str, ...]] = (TRIGGERED, PROCESSING)

# The lowercase keys a record holds one value per severity under, in SEVERITIES' order: a
# member's channels (`critical`, `warning`, `info`), an escalation layer's `by`, a monitor's
# threshold conditions. `SEVERITY_KEY[s]` is the key of severity `s`.
SEVERITY_KEYS: Final[tuple[str, ...]] = tuple(s.lower() for s in SEVERITIES)
SEVERITY_KEY: Final[dict[str, str]] = dict(zip(SEVERITIES, SEVERITY_KEYS, strict=True))

# Higher is worse; Ok (and anything unknown, read with .get(s, 0)) ranks below every severity.
SEVERITY_RANK: Final[dict[str, int]] = {OK: 0, INFO: 1, WARNING: 2, CRITICAL: 3}


def worst_severity(severities: Iterable[str]) -> str | None:
    """The worst of these severities; None when none is one (empty, or only Ok)."""
    ranked = [s for s in severities if SEVERITY_RANK.get(s, 0) > 0]
    return max(ranked, key=SEVERITY_RANK.__getitem__) if ranked else None


def worse(a: str, b: str) -> str:
    """The worse of two statuses (the first on a tie)."""
    return a if SEVERITY_RANK.get(a, 0) >= SEVERITY_RANK.get(b, 0) else b
