"""Relate queries (reference `RuleConfigs.relate_queries`): auxiliary queries whose rows go
with an alert as context. They run once per data source and evaluation, only when some
series alerts, at the same instant as the rule's queries; each alerting series gets the rows
that agree with it on every label they share (a `node_load1` row of instance web-1 goes with
the web-1 series, a label-less `count(up)` with every series). The event carries them as
labels `related_<name>` and a "related queries" section of its description. A relate query
that fails is reported on the rule's status and does not hold the alert back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from dutyline.monit import prom
from dutyline.monit.schemas import RelateQuery

MAX_ROWS = 5
MAX_CHARS = 1024


class Alerting(Protocol):
    alerting: bool | None
    labels: dict[str, str]
    related: dict[str, str]


async def attach(query: Callable[[str], Awaitable[prom.Result]],
                 relate_queries: Sequence[RelateQuery], verdicts: Sequence[Alerting],
                 problems: list[str]) -> None:
    for relate in relate_queries:
        try:
            result = await query(relate.expr)
        except prom.QueryFailed as exc:
            problems.append(f"relate query {relate.name}: {exc.reason}")
            continue
        for verdict in verdicts:
            if not verdict.alerting:
                continue
            rows = [s for s in result.samples if _agrees(s.labels, verdict.labels)]
            if rows:
                verdict.related[relate.name] = _text(rows)


def _agrees(row: dict[str, str], series: dict[str, str]) -> bool:
    return all(series.get(k, v) == v for k, v in row.items() if k != "__name__")


def _value(sample: prom.Sample) -> str:
    return "NaN" if sample.value is None else f"{sample.value:g}"


def _text(rows: list[prom.Sample]) -> str:
    if len(rows) == 1:
        return _value(rows[0])
    parts = []
    for sample in rows[:MAX_ROWS]:
        labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items())
                          if k != "__name__")
        parts.append(f"{_value(sample)} {{{labels}}}")
    more = len(rows) - MAX_ROWS
    return ("; ".join(parts) + (f"; and {more} more" if more > 0 else ""))[:MAX_CHARS]
