"""The escalation rule form without JSON: its fields are named after the dispatch service's
record (`layers[1].target.person_ids`, `layers[0].target.schedule_to_role_ids[12]`,
`time_filters[0].start`, `filters[0][1].vals`), so a refusal names the field it came from.

Everything the form shows comes from one mapping of those names to the values typed
(`Form`): a stored rule is flattened into one (`from_rule`), a posted form is one already,
and "Add a layer" / "Remove this layer" change it (`with_layer`, `without_layer`) before
it is shown again, so the form keeps what was typed without JavaScript. `to_record`
reshapes a posted form into what `forms.decode` reads into the service's `RuleSpec`:
e-mail addresses and filter values split, the "how" choice made into `by`, empty rows
left out. Pure functions: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dutyline.kit.channels import APP_TYPES, PERSONAL_CHANNELS, WEBHOOK_TYPES
from dutyline.kit.vocabulary import SEVERITY_KEYS

Form = Mapping[str, list[str]]

SEVERITIES = SEVERITY_KEYS
CHANNELS = PERSONAL_CHANNELS
# Group targets reached by a URL (the apps' group chats are named by ids the API sets).
URL_WEBHOOK_TYPES = tuple(t for t in WEBHOOK_TYPES if t not in APP_TYPES)
WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
OPERATORS = ("IN", "NOTIN")
LAYER_DEFAULTS = {"max_times": "0", "notify_step": "10", "escalate_window": "30"}

_LAYER = re.compile(r"^layers\[(\d{1,3})\](.*)$")
_ROW = re.compile(r"^time_filters\[(\d{1,3})\]")
_GROUP = re.compile(r"^filters\[(\d{1,3})\]\[(\d{1,3})\]")
_HOOK = re.compile(r"^layers\[(\d{1,3})\]\.target\.webhooks\[(\d{1,3})\]")
_SPLIT = re.compile(r"[\s,;]+")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- a stored rule as a form -------------------------------------------------------------------


def new_rule() -> dict[str, list[str]]:
    """The form of a new rule: one layer following each person's preferences."""
    return with_layer({"priority": ["0"], "aggr_window": ["0"], "template_id": [""]})


def from_rule(rule: Any) -> dict[str, list[str]]:
    """The form of a stored rule (the service's EscalateRuleItem)."""
    out: dict[str, list[str]] = {
        "rule_name": [rule.rule_name], "description": [rule.description],
        "priority": [str(rule.priority)], "aggr_window": [str(rule.aggr_window)],
        "template_id": [rule.template_id]}
    for i, layer in enumerate(rule.layers):
        at = f"layers[{i}]"
        out[f"{at}.was"] = [str(i)]  # the stored layer it is, wherever it moves
        for key in ("max_times", "notify_step", "escalate_window"):
            out[f"{at}.{key}"] = [_text(layer.get(key, LAYER_DEFAULTS[key]))]
        if layer.get("force_escalate"):
            out[f"{at}.force_escalate"] = ["on"]
        target = layer.get("target") or {}
        out[f"{at}.target.person_ids"] = [str(p) for p in target.get("person_ids") or ()]
        out[f"{at}.target.team_ids"] = [str(t) for t in target.get("team_ids") or ()]
        for sid, roles in (target.get("schedule_to_role_ids") or {}).items():
            out[f"{at}.target.schedule_to_role_ids[{sid}]"] = (
                [str(r) for r in roles] if roles else [""])
        out[f"{at}.emails"] = ["\n".join(target.get("emails") or ())]
        by = target.get("by")
        follow = by is None or bool(by.get("follow_preference"))
        out[f"{at}.how"] = ["preference" if follow else "channels"]
        for sev in SEVERITIES:
            out[f"{at}.target.by.{sev}"] = list((by or {}).get(sev) or ())
        j = 0
        for hook in target.get("webhooks") or ():
            settings = hook.get("settings") or {}
            if hook.get("type") in APP_TYPES:
                continue
            out[f"{at}.target.webhooks[{j}].type"] = [str(hook.get("type", ""))]
            out[f"{at}.target.webhooks[{j}].settings.url"] = [str(settings.get("url", ""))]
            j += 1
    for k, window in enumerate(rule.time_filters):
        at = f"time_filters[{k}]"
        out[f"{at}.start"] = [str(window.get("start", ""))]
        out[f"{at}.end"] = [str(window.get("end", ""))]
        out[f"{at}.repeat"] = [str(d) for d in window.get("repeat") or ()]
        out[f"{at}.cal_id"] = [str(window.get("cal_id") or "")]
        if window.get("is_off"):
            out[f"{at}.is_off"] = ["on"]
    for g, group in enumerate(rule.filters):
        for r, cond in enumerate(group):
            at = f"filters[{g}][{r}]"
            out[f"{at}.key"] = [str(cond.get("key", ""))]
            out[f"{at}.oper"] = [str(cond.get("oper", "IN"))]
            out[f"{at}.vals"] = [", ".join(str(v) for v in cond.get("vals") or ())]
    return out


def app_webhooks(rule: Any) -> list[list[dict[str, Any]]]:
    """Per layer, the group-chat targets of the apps, which the form does not edit: kept as
    they are when the rule is saved from it."""
    return [[h for h in (layer.get("target") or {}).get("webhooks") or ()
             if h.get("type") in APP_TYPES] for layer in rule.layers]


# --- what the form shows ------------------------------------------------------------------------


def layer_count(form: Form) -> int:
    found = [int(m[1]) for name in form if (m := _LAYER.match(name))]
    return max(found) + 1 if found else 0


def row_count(form: Form) -> int:
    """Time windows typed (the form shows one more, empty)."""
    found = [int(m[1]) for name in form if (m := _ROW.match(name))]
    return max(found) + 1 if found else 0


def filter_rows(form: Form) -> list[int]:
    """Conditions typed in each group of filters (the form shows one more group)."""
    rows: dict[int, int] = {}
    for name in form:
        if m := _GROUP.match(name):
            rows[int(m[1])] = max(rows.get(int(m[1]), 0), int(m[2]) + 1)
    return [rows.get(g, 0) for g in range(max(rows) + 1)] if rows else []


def hook_count(form: Form, layer: int) -> int:
    found = [int(m[2]) for name in form if (m := _HOOK.match(name)) and int(m[1]) == layer]
    return max(found) + 1 if found else 0


def value(form: Form, name: str, default: str = "") -> str:
    values = form.get(name)
    return values[-1] if values else default


def chosen(form: Form, name: str, option: Any) -> bool:
    return str(option) in (form.get(name) or ())


# --- adding and removing a layer -------------------------------------------------------------


def with_layer(form: Form) -> dict[str, list[str]]:
    """The form with one more layer, empty, following each person's preferences."""
    out = {k: list(v) for k, v in form.items()}
    at = f"layers[{layer_count(form)}]"
    out.update({f"{at}.{k}": [v] for k, v in LAYER_DEFAULTS.items()})
    out[f"{at}.how"] = ["preference"]
    return out


def without_layer(form: Form, index: int) -> dict[str, list[str]]:
    """The form without layer `index` (the later ones move up); a rule keeps one layer."""
    if layer_count(form) <= 1:
        return {k: list(v) for k, v in form.items()}
    out: dict[str, list[str]] = {}
    for name, values in form.items():
        m = _LAYER.match(name)
        if m is None or int(m[1]) < index:
            out[name] = list(values)
        elif int(m[1]) > index:
            out[f"layers[{int(m[1]) - 1}]{m[2]}"] = list(values)
    return out


# --- the posted form as the service's record --------------------------------------------------


def _split(text: str, pattern: re.Pattern[str] = _SPLIT) -> list[str]:
    return [p for p in (s.strip() for s in pattern.split(text)) if p]


def continues(form: Form) -> list[int | None]:
    """For each layer of the form, the stored layer it is (None: a layer added)."""
    out: list[int | None] = []
    for i in range(layer_count(form)):
        was = value(form, f"layers[{i}].was")
        out.append(int(was) if was.isdigit() and len(was) <= 3 else None)
    return out


def to_record(form: Form) -> tuple[dict[str, list[str]], dict[str, Any], dict[str, str]]:
    """(the form as `forms.decode` reads it into `RuleSpec`, the values it cannot carry
    itself: `time_filters` and `filters`, for its `given`, and where each of their rows was
    typed: {"filters[0][0]": "filters[1][2]"}, empty rows being left out)."""
    out: dict[str, list[str]] = {}
    for name, values in form.items():
        if name.startswith(("time_filters[", "filters[")) or name == "layer_count":
            continue
        m = _LAYER.match(name)
        rest = m[2] if m else ""
        if rest in (".how", ".was") or rest.startswith(".target.by."):
            continue
        if rest == ".emails":
            out[f"layers[{m[1]}].target.emails" if m else name] = [
                e for v in values for e in _split(v)]
            continue
        if hook := _HOOK.match(name):
            url = form.get(f"{hook[0]}.settings.url") or [""]
            if not url[-1].strip():
                continue  # an empty webhook row
        out[name] = list(values)
    for i in range(layer_count(form)):
        at = f"layers[{i}].target.by"
        if value(form, f"layers[{i}].how", "preference") == "preference":
            out[f"{at}.follow_preference"] = ["on"]
        else:
            out[f"{at}.follow_preference"] = [""]
            for sev in SEVERITIES:
                out[f"{at}.{sev}"] = list(form.get(f"{at}.{sev}") or ())
    typed_at: dict[str, str] = {}
    given = {"time_filters": _time_filters(form, typed_at),
             "filters": _filters(form, typed_at)}
    return out, given, typed_at


def typed_field(field: str, typed_at: Mapping[str, str]) -> str:
    """The form's name of a record's field (`filters[0][0].vals` -> `filters[1][2].vals`)."""
    m = re.match(r"^(filters\[\d+\]\[\d+\]|time_filters\[\d+\])(.*)$", field)
    if m and m[1] in typed_at:
        return typed_at[m[1]] + m[2]
    return field


def _time_filters(form: Form, typed_at: dict[str, str]) -> list[dict[str, Any]]:
    windows: list[dict[str, Any]] = []
    for k in range(row_count(form)):
        at = f"time_filters[{k}]"
        start, end = value(form, f"{at}.start").strip(), value(form, f"{at}.end").strip()
        days = form.get(f"{at}.repeat") or []
        cal = value(form, f"{at}.cal_id").strip()
        if not (start or end):
            continue  # an empty row
        window: dict[str, Any] = {"start": start, "end": end,
                                  "repeat": sorted({int(d) for d in days if d.isdigit()})}
        if cal:
            window["cal_id"] = cal
            window["is_off"] = value(form, f"{at}.is_off") == "on"
        typed_at[f"time_filters[{len(windows)}]"] = at
        windows.append(window)
    return windows


def _filters(form: Form, typed_at: dict[str, str]) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    for g, rows in enumerate(filter_rows(form)):
        group: list[dict[str, Any]] = []
        for r in range(rows):
            at = f"filters[{g}][{r}]"
            key = value(form, f"{at}.key").strip()
            if not key:
                continue  # an empty row
            typed_at[f"filters[{len(groups)}][{len(group)}]"] = at
            group.append({"key": key, "oper": value(form, f"{at}.oper", "IN"),
                          "vals": _split(value(form, f"{at}.vals"), re.compile(r","))})
        if group:
            groups.append(group)
    return groups


def layer_of(field: str) -> int | None:
    m = _LAYER.match(field)
    return int(m[1]) if m else None

