"""The words an incident's state is written in, defined once: its severities (and their
rank, worst last), the `Ok` status of a recovered alert or a closed incident, and its
progress. The wire types (`Literal`s) are the source; the tuples are read from them."""

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

OK: Final = "Ok"
TRIGGERED: Final = "Triggered"
PROCESSING: Final = "Processing"
CLOSED: Final = "Closed"
OPEN: Final[tuple[str, ...]] = (TRIGGERED, PROCESSING)

# Higher is worse; Ok (and anything unknown, read with .get(s, 0)) ranks below every severity.
SEVERITY_RANK: Final[dict[str, int]] = {OK: 0, "Info": 1, "Warning": 2, "Critical": 3}


def worst_severity(severities: Iterable[str]) -> str | None:
    """The worst of these severities; None when none is one (empty, or only Ok)."""
    ranked = [s for s in severities if SEVERITY_RANK.get(s, 0) > 0]
    return max(ranked, key=SEVERITY_RANK.__getitem__) if ranked else None


def worse(a: str, b: str) -> str:
    """The worse of two statuses (the first on a tie)."""
    return a if SEVERITY_RANK.get(a, 0) >= SEVERITY_RANK.get(b, 0) else b
