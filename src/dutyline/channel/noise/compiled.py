"""A channel's rules as ingestion uses them: compiled once, cached per process, reloaded when
the channel's `noise_version` (read with its settings on every push) moved.

The cache holds only what rows say, so every process that sees the same version holds the
same rules: a rule written through one process is used by every other from their next push
after the write commits."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from dutyline.kit.filters import Filter, FilterSet, compile_filters, read_text, resolver
from dutyline.kit.timefilters import LocalDays, TimeFilter, compile_time_filters

# A target alert is inhibited by a source seen at most this long ago (10 minutes): a source
# that stopped sending events no longer holds its targets back.
SOURCE_FRESH_S = 600
CACHED_CHANNELS = 2_000

_decode_config = msgspec.json.Decoder(dict[str, Any])
_FIELDS = {"title", "title_rule", "severity", "alert_severity", "description", "alert_key"}


def equals_reader(path: str) -> Callable[[Mapping[str, Any]], str | None]:
    """How an `equals` path reads an alert subject: `labels.<name>`, an alert field, or a bare
    label name (the grouping settings' convention)."""
    read = resolver(path if path.startswith("labels.") or path in _FIELDS or "." in path
                    else f"labels.{path}")
    return lambda subject: read_text(subject, read)


@dataclass(frozen=True, slots=True)
class InhibitRule:
    rule_id: str
    source: Filter
    target: Filter
    equals: tuple[Callable[[Mapping[str, Any]], str | None], ...]
    discard: bool

    def equals_values(self, subject: Mapping[str, Any]) -> list[str]:
        # A missing value counts as "" on both sides (as Alertmanager's equal labels do).
        return [read(subject) or "" for read in self.equals]


@dataclass(frozen=True, slots=True)
class SilenceRule:
    rule_id: str
    filter: Filter
    windows: TimeFilter | None  # recurring windows (within `once` when both are set)
    once: tuple[int, int] | None  # [start, end) Unix seconds
    discard: bool

    def effective(self, at_s: float, local_days: LocalDays | None = None) -> bool:
        """In effect at `at_s`: within its one-off span, and within one of its recurring
        windows read in the account's time zone, its calendar days judged by its calendars
        (both from `local_days`)."""
        if self.once is not None and not self.once[0] <= at_s < self.once[1]:
            return False
        return self.windows is None or self.windows.matches(at_s, local_days)

    @property
    def calendar_ids(self) -> frozenset[str]:
        return frozenset() if self.windows is None else self.windows.calendar_ids


@dataclass(frozen=True, slots=True)
class ChannelRules:
    version: int
    inhibit: dict[str, InhibitRule]
    inhibit_targets: FilterSet[InhibitRule]  # by target_filters, in priority order
    inhibit_sources: FilterSet[InhibitRule]  # by source_filters
    silence: dict[str, SilenceRule]
    silences: FilterSet[SilenceRule]
    drops: FilterSet[str]  # rule ids

    @property
    def empty(self) -> bool:
        return not (self.inhibit or self.silence or len(self.drops))


EMPTY = ChannelRules(0, {}, FilterSet([]), FilterSet([]), {}, FilterSet([]), FilterSet([]))


def compile_rows(version: int, rows: list[Any], tz: str | None = None) -> ChannelRules:
    """Rows of enabled rules (rule_id, kind, config), in priority order, compiled. Rows were
    checked when written; one that no longer compiles is skipped rather than stopping
    ingestion."""
    inhibit: dict[str, InhibitRule] = {}
    silence: dict[str, SilenceRule] = {}
    drops: list[tuple[str, Filter]] = []
    for row in rows:
        config = _decode_config.decode(row.config)
        try:
            if row.kind == "inhibit":
                inhibit[row.rule_id] = InhibitRule(
                    row.rule_id, compile_filters(config.get("source_filters")),
                    compile_filters(config.get("target_filters")),
                    tuple(equals_reader(p) for p in config.get("equals") or ()),
                    bool(config.get("is_directly_discard")),
                )
            elif row.kind == "silence":
                once = config.get("time_filter")
                silence[row.rule_id] = SilenceRule(
                    row.rule_id, compile_filters(config.get("filters")),
                    compile_time_filters(config["time_filters"], tz=tz, calendars=True)
                    if config.get("time_filters") else None,
                    (int(once["start_time"]), int(once["end_time"])) if once else None,
                    bool(config.get("is_directly_discard")),
                )
            elif row.kind == "drop":
                drops.append((row.rule_id, compile_filters(config.get("filters"))))
        except ValueError:
            continue
    return ChannelRules(
        version, inhibit,
        FilterSet([(r, r.target) for r in inhibit.values()]),
        FilterSet([(r, r.source) for r in inhibit.values()]),
        silence, FilterSet([(r, r.filter) for r in silence.values()]), FilterSet(drops),
    )


class RulesCache:
    """channel_id -> its compiled rules at a version; least recently used out."""

    def __init__(self, size: int = CACHED_CHANNELS) -> None:
        self._size = size
        self._entries: OrderedDict[int, ChannelRules] = OrderedDict()
        self._lock = threading.Lock()  # database threads of several connections share it

    def get(self, channel_id: int, version: int) -> ChannelRules | None:
        with self._lock:
            found = self._entries.get(channel_id)
            if found is None or found.version != version:
                return None
            self._entries.move_to_end(channel_id)
            return found

    def put(self, channel_id: int, rules: ChannelRules) -> None:
        with self._lock:
            self._entries[channel_id] = rules
            self._entries.move_to_end(channel_id)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


CACHE = RulesCache()
