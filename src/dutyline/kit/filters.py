"""The filter engine: OR-of-AND groups of `{key, oper: IN|NOTIN, vals}` conditions, compiled
once (when a rule is written or loaded) and matched many times (every alert at ingest).

Wire shape (reference `FilterGroup` / `FilterCondition`; groups OR-ed, conditions AND-ed):

    [[{"key": "severity", "oper": "IN", "vals": ["Critical"]},
      {"key": "labels.env", "oper": "NOTIN", "vals": ["/dev|test/"]}],
     [{"key": "title", "oper": "IN", "vals": ["disk*"]}]]

The outer list is an OR of AND groups; an empty or missing filter matches everything.

Keys: `labels.<name>` reads the label `<name>` (the whole rest of the key, so label names may
hold dots); any other key is a top-level field of the subject (`severity`, `title`,
`description`, `alert_key`...) or, failing that, a dotted path through nested mappings.

A value matches the field when it is, by its form:
- `/regex/`: the whole field matches the RE2 expression (linear time: RE2 never backtracks,
  so no pattern can blow up, e.g. `(a+)+$` over 50,000 `a`s is answered in one pass);
- `cidr:10.0.0.0/8`: the field is an IP address inside that network;
- `num:gt:5` (`gt|ge|lt|le`): the field is a number so ordered against 5;
- containing `*` or `?`: a wildcard (`*` any run of characters, `?` one character);
- anything else: the field equals it exactly.

`IN` holds when some value matches; `NOTIN` when none does. A missing field matches no value
(so `IN` is false and `NOTIN` true). A list field (e.g. a multi-valued custom field) matches
when one of its items does. Numbers and booleans are compared in their JSON spelling.

Limits, refused at compile time with the path of the offending part: at most
`MAX_GROUPS` groups, `MAX_CONDITIONS` conditions per group, `MAX_VALS` values per condition,
`MAX_VALUE_LEN` characters per value and `MAX_KEY_LEN` per key.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, Literal, TypeVar

import msgspec
import re2

T = TypeVar("T")

MAX_GROUPS: Final = 100
MAX_CONDITIONS: Final = 50
MAX_VALS: Final = 100
MAX_VALUE_LEN: Final = 1024
MAX_KEY_LEN: Final = 256
# Memory RE2 may spend on one compiled expression (its DFA cache); a bound, not a tuning knob.
_RE2_MAX_MEM: Final = 8 << 20

_NUM_OPS: Final[dict[str, Callable[[float, float], bool]]] = {
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
}


class FilterError(ValueError):
    """An invalid filter; `path` names the offending part, e.g. `filters[1][0].vals[2]`."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class FilterCondition(msgspec.Struct, forbid_unknown_fields=False):
    """The wire condition, for records that carry filters (decoded leniently: the engine,
    not msgspec, says what is wrong and where)."""

    key: str
    oper: Literal["IN", "NOTIN"]
    vals: list[str]


_Resolver = Callable[[Mapping[str, Any]], Any]
_ValueTest = Callable[[str], bool]
_Missing: Final = object()


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a user's bad pattern is a 400, not a line on stderr
    options.max_mem = _RE2_MAX_MEM
    return options


_OPTIONS: Final = _re2_options()


def compile_regex(pattern: str, path: str) -> Any:
    """Compile one RE2 expression (used by the value forms and by other full-match users)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise FilterError(path, f"invalid regular expression: {detail}") from None


def _wildcard_to_re2(pattern: str) -> str:
    out: list[str] = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re2.escape(char))
    return "".join(out)


def _is_regex(value: str) -> bool:
    return len(value) >= 2 and value[0] == "/" and value[-1] == "/"


def _cidr_test(value: str, path: str) -> _ValueTest:
    try:
        network = ipaddress.ip_network(value[5:].strip(), strict=False)
    except ValueError:
        raise FilterError(path, f"invalid network {value[5:]!r} (want cidr:10.0.0.0/8)") from None

    def test(field: str) -> bool:
        try:
            address = ipaddress.ip_address(field.strip())
        except ValueError:
            return False
        return address.version == network.version and address in network

    return test


def _num_test(value: str, path: str) -> _ValueTest:
    parts = value.split(":", 2)
    if len(parts) != 3 or parts[1] not in _NUM_OPS:
        raise FilterError(path, f"invalid number test {value!r} (want num:gt|ge|lt|le:<number>)")
    try:
        bound = float(parts[2])
    except ValueError:
        raise FilterError(path, f"invalid number {parts[2]!r} in {value!r}") from None
    if not math.isfinite(bound):
        raise FilterError(path, f"invalid number {parts[2]!r} in {value!r}")
    compare = _NUM_OPS[parts[1]]

    def test(field: str) -> bool:
        try:
            number = float(field)
        except ValueError:
            return False
        return math.isfinite(number) and compare(number, bound)

    return test


def _field_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return msgspec.json.encode(value).decode()
    return None


class _Condition:
    __slots__ = ("_exact", "_negate", "_pattern", "_resolve", "_tests", "key")

    def __init__(
        self,
        key: str,
        resolve: _Resolver,
        negate: bool,
        exact: frozenset[str],
        pattern: Any,
        tests: tuple[_ValueTest, ...],
    ) -> None:
        self.key = key
        self._resolve = resolve
        self._negate = negate
        self._exact = exact
        self._pattern = pattern  # one RE2 alternation of every regex and wildcard, or None
        self._tests = tests

    @property
    def exact_only(self) -> frozenset[str] | None:
        """The values of an IN condition made of exact values only (an index can find the
        subjects it may hold for), else None."""
        if self._negate or self._pattern is not None or self._tests:
            return None
        return self._exact

    def _one(self, text: str) -> bool:
        if text in self._exact:
            return True
        if self._pattern is not None and self._pattern.fullmatch(text) is not None:
            return True
        return any(test(text) for test in self._tests)

    def holds(self, subject: Mapping[str, Any]) -> bool:
        value = self._resolve(subject)
        found = False
        if value is _Missing or value is None:
            found = False
        elif isinstance(value, list | tuple):
            for item in value:
                text = _field_text(item)
                if text is not None and self._one(text):
                    found = True
                    break
        else:
            text = _field_text(value)
            found = text is not None and self._one(text)
        return found != self._negate


class Filter:
    """A compiled filter. `matches(subject)` over a plain mapping (see the module doc)."""

    __slots__ = ("_groups",)

    def __init__(self, groups: tuple[tuple[_Condition, ...], ...]) -> None:
        self._groups = groups

    @property
    def matches_everything(self) -> bool:
        return not self._groups

    def matches(self, subject: Mapping[str, Any]) -> bool:
        if not self._groups:
            return True
        return any(all(c.holds(subject) for c in group) for group in self._groups)

    def index_hints(self) -> list[tuple[str, frozenset[str]]] | None:
        """One (key, exact values) per group such that the group can only hold when the
        subject's key has one of the values; None when some group has no such condition
        (or the filter matches everything), so the filter must always be tried."""
        hints: list[tuple[str, frozenset[str]]] = []
        for group in self._groups:
            best: tuple[str, frozenset[str]] | None = None
            for condition in group:
                values = condition.exact_only
                if values is not None and (best is None or len(values) < len(best[1])):
                    best = (condition.key, values)
            if best is None:
                return None
            hints.append(best)
        return hints or None


MATCH_ALL: Final = Filter(())


def resolver(key: str) -> _Resolver:
    """How a key reads a subject: `labels.<rest>` is a label; otherwise the top-level field of
    that exact name, else a dotted path through nested mappings. Exposed so rules can read
    other paths (e.g. an inhibit rule's `equals`) exactly as filters do."""
    if key.startswith("labels."):
        label = key[7:]

        def read_label(subject: Mapping[str, Any]) -> Any:
            labels = subject.get("labels")
            if isinstance(labels, Mapping):
                return labels.get(label, _Missing)
            return _Missing

        return read_label
    if "." not in key:
        return lambda subject: subject.get(key, _Missing)
    steps = key.split(".")

    def read_path(subject: Mapping[str, Any]) -> Any:
        if key in subject:
            return subject[key]
        node: Any = subject
        for step in steps:
            if not isinstance(node, Mapping) or step not in node:
                return _Missing
            node = node[step]
        return node

    return read_path


def read_text(subject: Mapping[str, Any], read: _Resolver) -> str | None:
    """The text a resolver reads (None when missing or not a scalar)."""
    value = read(subject)
    if value is _Missing or value is None:
        return None
    return _field_text(value)


def _get(condition: Any, name: str) -> Any:
    if isinstance(condition, FilterCondition):
        return getattr(condition, name)
    if isinstance(condition, Mapping):
        return condition.get(name, _Missing)
    return _Missing


def validate_key(key: Any, path: str) -> str:
    """A filter key (or any field path read by `resolver`)."""
    if not isinstance(key, str) or not key.strip():
        raise FilterError(path, "must be a non-empty string")
    if len(key) > MAX_KEY_LEN:
        raise FilterError(path, f"at most {MAX_KEY_LEN} characters")
    if key.startswith("labels."):
        if not key[7:]:
            raise FilterError(path, "labels.<name> needs a label name")
    elif "" in key.split("."):
        raise FilterError(path, f"invalid field path {key!r}")
    return key


def _compile_condition(condition: Any, path: str) -> _Condition:
    if not isinstance(condition, Mapping | FilterCondition):
        raise FilterError(path, "a condition is an object {key, oper, vals}")
    key = _get(condition, "key")
    if key is _Missing:
        raise FilterError(f"{path}.key", "is required")
    validate_key(key, f"{path}.key")
    oper = _get(condition, "oper")
    if oper not in ("IN", "NOTIN"):
        raise FilterError(f"{path}.oper", "must be IN or NOTIN")
    vals = _get(condition, "vals")
    if not isinstance(vals, list | tuple):
        raise FilterError(f"{path}.vals", "must be a list of strings")
    if not vals:
        raise FilterError(f"{path}.vals", "must not be empty")
    if len(vals) > MAX_VALS:
        raise FilterError(f"{path}.vals", f"at most {MAX_VALS} values")
    exact: set[str] = set()
    alternatives: list[str] = []
    tests: list[_ValueTest] = []
    for index, value in enumerate(vals):
        vpath = f"{path}.vals[{index}]"
        if not isinstance(value, str):
            raise FilterError(vpath, "must be a string")
        if len(value) > MAX_VALUE_LEN:
            raise FilterError(vpath, f"at most {MAX_VALUE_LEN} characters")
        if _is_regex(value):
            body = value[1:-1]
            compile_regex(body, vpath)  # each alone, so an error names its own value
            alternatives.append(f"(?:{body})")
        elif value.startswith("cidr:"):
            tests.append(_cidr_test(value, vpath))
        elif value.startswith("num:"):
            tests.append(_num_test(value, vpath))
        elif "*" in value or "?" in value:
            alternatives.append(f"(?:{_wildcard_to_re2(value)})")
        else:
            exact.add(value)
    pattern = compile_regex("|".join(alternatives), f"{path}.vals") if alternatives else None
    return _Condition(key, resolver(key), oper == "NOTIN", frozenset(exact), pattern, tuple(tests))


def compile_filters(
    groups: Sequence[Sequence[Mapping[str, Any] | FilterCondition]] | None,
    *,
    path: str = "filters",
) -> Filter:
    """Compile an OR-of-AND filter; raises FilterError naming the offending part."""
    if groups is None:
        return MATCH_ALL
    if not isinstance(groups, list | tuple):
        raise FilterError(path, "must be a list of condition groups")
    if len(groups) > MAX_GROUPS:
        raise FilterError(path, f"at most {MAX_GROUPS} groups (got {len(groups)})")
    compiled: list[tuple[_Condition, ...]] = []
    for gi, group in enumerate(groups):
        gpath = f"{path}[{gi}]"
        if not isinstance(group, list | tuple):
            raise FilterError(gpath, "a group is a list of conditions")
        if not group:
            raise FilterError(gpath, "a group needs at least one condition")
        if len(group) > MAX_CONDITIONS:
            raise FilterError(
                gpath, f"at most {MAX_CONDITIONS} conditions in a group (got {len(group)})"
            )
        compiled.append(
            tuple(_compile_condition(c, f"{gpath}[{ci}]") for ci, c in enumerate(group))
        )
    return Filter(tuple(compiled))


class FilterSet(Generic[T]):
    """Many filters matched against one subject, each item's filter tried only when an index
    of their exact `IN` values says it may hold: with 100 rules keyed on `labels.alertname`,
    a subject costs one dict lookup and the few filters that can match, not 100 filters."""

    __slots__ = ("_always", "_by_key", "_items")

    def __init__(self, items: Sequence[tuple[T, Filter]]) -> None:
        self._items = tuple(items)
        self._always: list[int] = []
        by_key: dict[str, tuple[_Resolver, dict[str, list[int]]]] = {}
        for position, (_, compiled) in enumerate(self._items):
            hints = compiled.index_hints()
            if hints is None:
                self._always.append(position)
                continue
            for key, values in hints:
                entry = by_key.setdefault(key, (resolver(key), {}))
                for value in values:
                    entry[1].setdefault(value, []).append(position)
        self._by_key = tuple(by_key.values())

    def __len__(self) -> int:
        return len(self._items)

    def matching(self, subject: Mapping[str, Any]) -> list[T]:
        """Items whose filter matches, in the order given."""
        if not self._items:
            return []
        positions: set[int] = set(self._always)
        for read, table in self._by_key:
            value = read(subject)
            if value is _Missing or value is None:
                continue
            for item in value if isinstance(value, list | tuple) else (value,):
                text = _field_text(item)
                if text is not None:
                    found = table.get(text)
                    if found:
                        positions.update(found)
        return [self._items[p][0] for p in sorted(positions)
                if self._items[p][1].matches(subject)]


def filters_to_builtins(groups: Sequence[Sequence[Any]] | None) -> list[list[dict[str, Any]]]:
    """The canonical wire form of a (valid) filter, for storage and records."""
    if not groups:
        return []
    out: list[list[dict[str, Any]]] = []
    for group in groups:
        out.append(
            [
                {
                    "key": _get(c, "key"),
                    "oper": _get(c, "oper"),
                    "vals": list(_get(c, "vals")),
                }
                for c in group
            ]
        )
    return out
