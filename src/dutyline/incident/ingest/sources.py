"""Alert payloads of other tools, turned into standard push events (schemas.PushRequest):

- Prometheus Alertmanager's webhook (`/event/push/alert/prometheus`): one event per alert,
  `resolved` -> Ok, the `severity` label -> Critical/Warning/Info, the fingerprint as the
  alert key, annotations `summary` -> title and `description` -> description, the other
  annotations joined to the labels.
- Grafana alerting (`/event/push/alert/grafana`): unified alerting sends Alertmanager's
  shape (with extra fields); the legacy dashboard alerts (`ruleId`, `state`, `tags`) are
  read too.
- A generic JSON webhook (`/event/push/alert/webhook`): the query string maps fields of the
  body (dotted paths) to the event: `title`, `status`, `alert_key`, `description`, `labels`,
  `items` (a list in the body: one event per item) and `status_map` (`firing:Critical,...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from dutyline.api import errors
from dutyline.incident.ingest.schemas import MAX_LABELS, PushRequest
from dutyline.kit.vocabulary import CRITICAL, INFO, OK, WARNING

MAX_ALERTS = 500
# What other tools call each status, lowercased, beside its own name.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    CRITICAL: ("crit", "error", "page", "p0", "p1", "high", "fatal"),
    WARNING: ("warn", "p2", "medium"),
    INFO: ("information", "low", "p3", "none"),
    OK: ("resolved", "recovered", "normal", "inactive"),
}
_SEVERITIES = {word: status for status, words in _SYNONYMS.items()
               for word in (status.lower(), *words)}
_TAKEN_ANNOTATIONS = ("summary", "description")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return msgspec.json.encode(value).decode()


def _labels(*sources: Mapping[str, Any]) -> dict[str, str]:
    """Merged string labels within the push limits (the first 50 names, values cut)."""
    out: dict[str, str] = {}
    for source in sources:
        for key, value in source.items():
            name = str(key)[:128]
            if name and name not in out and len(out) < MAX_LABELS:
                out[name] = _text(value)[:2048]
    return out


def _event(title: str, status: str, alert_key: str, description: str,
           labels: dict[str, str]) -> PushRequest:
    title = title.strip() or "Alert"
    return PushRequest(title_rule=title[:512], event_status=status,  # type: ignore[arg-type]
                       alert_key=alert_key[:255], description=description[:16_384],
                       labels=labels)


def severity_of(raw: str, default: str = WARNING) -> str:
    return _SEVERITIES.get(raw.strip().lower(), default)


# --- Alertmanager (and Grafana unified alerting) -----------------------------------------


class AmAlert(msgspec.Struct, kw_only=True):
    status: str = "firing"
    labels: dict[str, Any] = msgspec.field(default_factory=dict)
    annotations: dict[str, Any] = msgspec.field(default_factory=dict)
    fingerprint: str = ""
    generatorURL: str = ""
    startsAt: str = ""
    endsAt: str = ""


class AmPayload(msgspec.Struct, kw_only=True):
    alerts: list[AmAlert]
    status: str = ""
    receiver: str = ""
    commonLabels: dict[str, Any] = msgspec.field(default_factory=dict)
    externalURL: str = ""


def alertmanager(doc: Any) -> list[PushRequest]:
    try:
        payload = msgspec.convert(doc, AmPayload)
    except msgspec.ValidationError as exc:
        raise errors.invalid("alerts", str(exc)) from None
    if len(payload.alerts) > MAX_ALERTS:
        raise errors.invalid("alerts", f"at most {MAX_ALERTS} alerts per push")
    events = []
    for alert in payload.alerts:
        labels = alert.labels
        annotations = alert.annotations
        name = _text(labels.get("alertname"))
        title = _text(annotations.get("summary")) or name or "Alertmanager alert"
        if alert.status == "resolved":
            status = OK
        else:
            status = severity_of(_text(labels.get("severity")))
            status = WARNING if status == OK else status
        extra = {k: v for k, v in annotations.items() if k not in _TAKEN_ANNOTATIONS}
        if alert.generatorURL:
            extra["generator_url"] = alert.generatorURL
        events.append(_event(
            title, status, alert.fingerprint,
            _text(annotations.get("description") or annotations.get("message")),
            _labels(labels, extra),
        ))
    return events


def grafana(doc: Any) -> list[PushRequest]:
    if isinstance(doc, dict) and "alerts" in doc:
        return alertmanager(doc)
    if not isinstance(doc, dict):
        raise errors.invalid("body", "must be a JSON object")
    # Legacy dashboard alerting.
    state = _text(doc.get("state")).lower()
    if state not in ("alerting", "ok", "no_data", "pending", "paused"):
        raise errors.invalid("state", "must be alerting, ok, no_data, pending or paused")
    if state in ("pending", "paused"):
        return []
    raw_tags = doc.get("tags")
    tags: dict[str, Any] = raw_tags if isinstance(raw_tags, dict) else {}
    status = OK if state == "ok" else severity_of(_text(tags.get("severity")), CRITICAL)
    rule = _text(doc.get("ruleId")) or _text(doc.get("ruleName"))
    extra = {"rule_url": doc["ruleUrl"]} if doc.get("ruleUrl") else {}
    return [_event(_text(doc.get("ruleName") or doc.get("title")), status,
                   f"grafana-{rule}" if rule else "", _text(doc.get("message")),
                   _labels(tags, extra))]


# --- generic JSON webhook --------------------------------------------------------------


def _at(doc: Any, path: str) -> Any:
    node = doc
    for part in path.split(".") if path else []:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _status_map(raw: str) -> dict[str, str]:
    out = {}
    for pair in raw.split(","):
        value, sep, status = pair.partition(":")
        if not sep:
            continue
        mapped = severity_of(status, "")
        if not mapped:
            raise errors.invalid("status_map", f"unknown status {status.strip()!r}")
        out[value.strip().lower()] = mapped
    return out


def generic(doc: Any, params: Mapping[str, str]) -> list[PushRequest]:
    title_path = params.get("title", "title")
    status_path = params.get("status", "status")
    statuses = _status_map(params.get("status_map", ""))
    items_path = params.get("items", "")
    items = _at(doc, items_path) if items_path else [doc]
    if not isinstance(items, list):
        raise errors.invalid("items", f"{items_path!r} is not a list in the body")
    if len(items) > MAX_ALERTS:
        raise errors.invalid("items", f"at most {MAX_ALERTS} items per push")
    events = []
    for item in items:
        title = _text(_at(item, title_path))
        if not title.strip():
            raise errors.invalid("title", f"nothing at {title_path!r} in the body")
        raw_status = _text(_at(item, status_path)).strip().lower()
        status = statuses.get(raw_status) or severity_of(raw_status, "")
        if not status:
            firing = ("firing", "alerting", "problem", "triggered")
            status = CRITICAL if raw_status in firing else WARNING
        labels_node = _at(item, params.get("labels", "labels"))
        labels = _labels(labels_node) if isinstance(labels_node, dict) else {}
        events.append(_event(
            title, status, _text(_at(item, params.get("alert_key", "alert_key"))),
            _text(_at(item, params.get("description", "description"))), labels,
        ))
    return events
