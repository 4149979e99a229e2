"""The notification functions of the live service's templates (`date ago toHtml fireReason
colorSeverity joinAlertLabels` ...) and the common Sprig functions.

`notification_funcs(tz, now)` returns them bound to a time zone (for `date`) and a clock
(for `ago`). Argument handling is ours (Go would type-check them through reflection): an
argument of the wrong kind is a clear render error, never a crash of the process.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dutyline.kit.vocabulary import CRITICAL, INFO, OK, STATUSES, WARNING

from .budget import check_size, check_time, max_value
from .builtins import GoFunc, is_true
from .errors import TemplateExecError
from .gofmt import sprint
from .gotime import format_time
from .markdown import md_to_html
from .values import to_any

SEVERITY_COLORS = {CRITICAL: "#C80000", WARNING: "#FA7D00", INFO: "#FABE00", OK: "#008800"}
# An argument longer than this cost its length to read: the function looks at the clock after.
LARGE_INPUT = 4096
_SEVERITY_NAMES = {**{s.lower(): s for s in STATUSES}, "p1": CRITICAL, "p2": WARNING, "p3": INFO}


def _args(args: list[Any], lo: int, hi: int | None, name: str) -> list[Any]:
    if len(args) < lo or (hi is not None and len(args) > hi):
        want = str(lo) if hi == lo else f"{lo}..{hi if hi is not None else 'n'}"
        raise TemplateExecError(f"wrong number of args for {name}: want {want} got {len(args)}")
    return [to_any(a) for a in args]


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else sprint([v]))


def _int(v: Any, name: str) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    if isinstance(v, str):
        try:
            return int(float(v)) if v.strip() else 0
        except ValueError:
            return 0
    if v is None:
        return 0
    raise TemplateExecError(f"{name}: expected a number, got {sprint([v])}")


def _zone(tz: str) -> Any:
    try:
        return ZoneInfo(tz) if tz else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


# Layouts longer than this are formatted without the cache, which would otherwise keep
# thousands of large strings alive.
_CACHED_LAYOUT = 256


def _format_time(ts: int, tz: str, layout: str) -> str:
    if len(layout) > _CACHED_LAYOUT:
        return _format_uncached(ts, tz, layout)
    return _format_cached(ts, tz, layout)


@functools.lru_cache(maxsize=4096)
def _format_cached(ts: int, tz: str, layout: str) -> str:
    return _format_uncached(ts, tz, layout)


def _format_uncached(ts: int, tz: str, layout: str) -> str:
    try:
        return format_time(datetime.fromtimestamp(ts, _zone(tz)), layout)
    except (OverflowError, OSError, ValueError) as e:
        raise TemplateExecError(f"date: {e}") from None


def _severity(v: Any) -> str:
    return _SEVERITY_NAMES.get(_str(v).strip().lower(), INFO)


def _alert_values(alerts: Any, key: str) -> list[str]:
    if not isinstance(alerts, list | tuple):
        raise TemplateExecError("expected a list of alerts")
    seen: dict[str, None] = {}
    for a in alerts:
        labels = a.get("Labels") if isinstance(a, dict) else None
        if isinstance(labels, dict) and key in labels and labels[key] not in (None, ""):
            seen[_str(labels[key])] = None
    return list(seen)


def _json_get(doc: Any, path: str) -> Any:
    if isinstance(doc, str):
        size = len(doc)
        try:
            doc = json.loads(doc)
        except ValueError:
            return ""
        if size > LARGE_INPUT:
            check_time("jsonGet")  # parsing costs its input's size, whatever it returns
    cur = doc
    for part in re.split(r"(?<!\\)\.", path) if path else []:
        part = part.replace("\\.", ".")
        if isinstance(cur, dict):
            if part not in cur:
                return ""
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, list) and part == "#":
            cur = len(cur)
        else:
            return ""
    if isinstance(cur, dict | list):
        _check_tree(cur)
        return json.dumps(cur, ensure_ascii=False, separators=(",", ":"))
    return cur


def _check_tree(value: Any) -> None:
    """Refuse to serialize a list or map whose text would be over the value bound: a list
    built from itself doubles at each level, so its size is counted, with an early stop."""
    cap, size = max_value(), 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            size += len(v) + 3
        elif isinstance(v, dict):
            size += 2 + len(v)
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            size += 2 + len(v)
            stack.extend(v)
        else:
            size += 4
        if size > cap:
            check_size(size, "jsonGet")


def _empty(v: Any) -> bool:
    return not is_true(v)


def notification_funcs(tz: str = "", now: Callable[[], float] | None = None) -> dict[str, GoFunc]:
    clock = now or (lambda: datetime.now(UTC).timestamp())

    def date(args: list[Any]) -> str:
        a = _args(args, 2, 3, "date")
        return _format_time(_int(a[1], "date"), _str(a[2]) if len(a) > 2 else tz,
                              _str(a[0]))

    def ago(args: list[Any]) -> str:
        (t,) = _args(args, 1, 1, "ago")
        secs = max(0, int(clock()) - _int(t, "ago"))
        d, rest = divmod(secs, 86400)
        h, rest = divmod(rest, 3600)
        m, s = divmod(rest, 60)
        parts = [f"{d}d" if d else "", f"{h}h" if h else "", f"{m}m" if m else "",
                 f"{s}s" if s or not (d or h or m) else ""]
        return "".join(parts)

    def to_html(args: list[Any]) -> str:
        for v in _args(args, 0, None, "toHtml"):
            if is_true(v):
                return html.escape(_str(v), quote=True)
        return ""

    def fire_reason(args: list[Any]) -> str:
        (v,) = _args(args, 1, 1, "fireReason")
        return {"fire": "New incident", "refire": "Reminder: still not acknowledged"}.get(
            _str(v), _str(v))

    def color(args: list[Any]) -> str:
        (v,) = _args(args, 1, 1, "colorSeverity")
        return SEVERITY_COLORS[_severity(v)]

    def to_severity(args: list[Any]) -> str:
        (v,) = _args(args, 1, 1, "toSeverity")
        return _severity(v)

    def join_alert_labels(args: list[Any]) -> str:
        a = _args(args, 2, 3, "joinAlertLabels")
        return (_str(a[2]) if len(a) > 2 else ",").join(_alert_values(a[0], _str(a[1])))

    def alert_labels(args: list[Any]) -> list[Any]:
        a = _args(args, 2, 2, "alertLabels")
        return list(_alert_values(a[0], _str(a[1])))

    def max_label(args: list[Any]) -> str:
        a = _args(args, 2, 2, "maxAlertLabel")
        vals = _alert_values(a[0], _str(a[1]))
        return max(vals) if vals else ""

    def min_label(args: list[Any]) -> str:
        a = _args(args, 2, 2, "minAlertLabel")
        vals = _alert_values(a[0], _str(a[1]))
        return min(vals) if vals else ""

    def in_(args: list[Any]) -> bool:
        a = _args(args, 2, None, "in")
        needle, hay = a[0], a[1:]
        if len(hay) == 1 and isinstance(hay[0], list | tuple):
            hay = list(hay[0])
        return any(type(h) is type(needle) and h == needle for h in hay)

    def md(args: list[Any]) -> str:
        (v,) = _args(args, 1, 1, "mdToHtml")
        return md_to_html(_str(v))

    def json_get(args: list[Any]) -> Any:
        a = _args(args, 2, 2, "jsonGet")
        return _json_get(a[0], _str(a[1]))

    def one_str(name: str, fn: Callable[[str], Any]) -> GoFunc:
        def call(args: list[Any]) -> Any:
            (v,) = _args(args, 1, 1, name)
            return fn(_str(v))
        return call

    def replace(args: list[Any]) -> str:
        old, new, s = (_str(x) for x in _args(args, 3, 3, "replace"))
        if len(new) > len(old):
            # counted before it is built: "" matches between every character
            check_size(len(s) + s.count(old) * (len(new) - len(old)), "replace")
        return s.replace(old, new)

    def contains(args: list[Any]) -> bool:
        sub, s = (_str(x) for x in _args(args, 2, 2, "contains"))
        return sub in s

    def default(args: list[Any]) -> Any:
        a = _args(args, 1, 2, "default")
        given = a[1] if len(a) > 1 else None
        return a[0] if _empty(given) else given

    def ternary(args: list[Any]) -> Any:
        t, f, cond = _args(args, 3, 3, "ternary")
        return t if is_true(cond) else f

    def add(args: list[Any]) -> int:
        return sum(_int(x, "add") for x in _args(args, 0, None, "add"))

    def sub(args: list[Any]) -> int:
        a, b = _args(args, 2, 2, "sub")
        return _int(a, "sub") - _int(b, "sub")

    def list_(args: list[Any]) -> list[Any]:
        return _args(args, 0, None, "list")

    def dict_(args: list[Any]) -> dict[str, Any]:
        a = _args(args, 0, None, "dict")
        out: dict[str, Any] = {}
        for i in range(0, len(a), 2):
            out[_str(a[i])] = a[i + 1] if i + 1 < len(a) else ""
        return out

    def has_key(args: list[Any]) -> bool:
        d, k = _args(args, 2, 2, "hasKey")
        return isinstance(d, dict) and _str(k) in d

    def keys(args: list[Any]) -> list[Any]:
        out: list[Any] = []
        for d in _args(args, 1, None, "keys"):
            if isinstance(d, dict):
                out += list(d)
        return out

    def values(args: list[Any]) -> list[Any]:
        (d,) = _args(args, 1, 1, "values")
        return list(d.values()) if isinstance(d, dict) else []

    def empty(args: list[Any]) -> bool:
        (v,) = _args(args, 1, 1, "empty")
        return _empty(v)

    def coalesce(args: list[Any]) -> Any:
        for v in _args(args, 0, None, "coalesce"):
            if not _empty(v):
                return v
        return None

    def join(args: list[Any]) -> str:
        sep, seq = _args(args, 2, 2, "join")
        if isinstance(seq, list | tuple):
            parts = [_str(x) for x in seq if x is not None]
            sep = _str(sep)
            check_size(sum(map(len, parts)) + len(sep) * len(parts), "join")
            return sep.join(parts)
        return _str(seq)

    def to_int64(args: list[Any]) -> int:
        (v,) = _args(args, 1, 1, "toInt64")
        return _int(v, "toInt64")

    return {
        "date": date, "ago": ago, "toHtml": to_html, "fireReason": fire_reason,
        "colorSeverity": color, "colorBySeverity": color, "serverityToColor": color,
        "toSeverity": to_severity, "joinAlertLabels": join_alert_labels,
        "alertLabels": alert_labels, "maxAlertLabel": max_label, "minAlertLabel": min_label,
        "in": in_, "mdToHtml": md, "jsonGet": json_get,
        "trim": one_str("trim", str.strip), "upper": one_str("upper", str.upper),
        "lower": one_str("lower", str.lower), "replace": replace, "contains": contains,
        "default": default, "ternary": ternary, "add": add, "sub": sub, "list": list_,
        "dict": dict_, "hasKey": has_key, "keys": keys, "values": values, "empty": empty,
        "coalesce": coalesce, "toString": one_str("toString", lambda s: s),
        "toInt64": to_int64, "join": join,
    }
