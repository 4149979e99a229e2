"""What a person pastes into an alert source to send its alerts to an integration: the push
address of each source (the server's base URL, the one e-mailed links use, then the source's
path and the key) and a snippet in the source's own format: an `alertmanager.yml` (a
receiver and the route to it), a Grafana contact point (its provisioning file), and `curl`
commands. Built as plain text: the templates escape it, so it is selectable and copyable
with or without JavaScript.

A key shown once goes into the addresses whole; an integration's page, which never has the
key, shows its last characters (`ik_…abc123`) in its place."""

from __future__ import annotations

import json
from dataclasses import dataclass

from dutyline.kit.vocabulary import CRITICAL

# The push paths of incident/ingest/endpoint.py, by the source a person picks.
PATHS = {
    "standard": "/event/push/alert/standard",
    "prometheus": "/event/push/alert/prometheus",
    "grafana": "/event/push/alert/grafana",
    "webhook": "/event/push/alert/webhook",
}
# Labels of the sources (catalog messages: the templates translate them).
SOURCES = {
    "prometheus": "Prometheus Alertmanager",
    "grafana": "Grafana",
    "webhook": "Generic JSON webhook",
    "standard": "Standard API",
}
# The generic webhook's field mapping the snippet shows (sources.generic reads the query).
WEBHOOK_MAPPING = "&title=title&status=status&alert_key=id&description=message"


@dataclass(frozen=True)
class Snippets:
    urls: dict[str, str]  # source -> push address
    alertmanager: str
    grafana: str
    curl: dict[str, str]  # source -> a curl command pushing a sample alert


def _yaml_string(text: str) -> str:
    """A double-quoted YAML scalar (JSON's string syntax is valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _shell(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def snippets(base_url: str, key: str, name: str, *, masked_suffix: str = "") -> Snippets:
    shown_key = key or f"ik_…{masked_suffix}"
    base = base_url.rstrip("/")
    urls = {source: f"{base}{path}?integration_key={shown_key}"
            for source, path in PATHS.items()}
    urls["webhook"] += WEBHOOK_MAPPING
    receiver = "dutyline"
    alertmanager = "\n".join((
        "route:",
        f"  receiver: {receiver}",
        "  group_by: [alertname]",
        "receivers:",
        f"  - name: {receiver}",
        "    webhook_configs:",
        f"      - url: {_yaml_string(urls['prometheus'])}",
        "        send_resolved: true",
        "",
    ))
    grafana = "\n".join((
        "apiVersion: 1",
        "contactPoints:",
        "  - orgId: 1",
        f"    name: {_yaml_string('dutyline ' + name)}",
        "    receivers:",
        "      - uid: dutyline",
        "        type: webhook",
        "        settings:",
        f"          url: {_yaml_string(urls['grafana'])}",
        "          httpMethod: POST",
        "        disableResolveMessage: false",
        "",
    ))
    samples = {
        "standard": {"title_rule": "Disk almost full on db-1", "event_status": CRITICAL,
                     "alert_key": "disk-db-1", "labels": {"host": "db-1"}},
        "prometheus": {"alerts": [{
            "status": "firing", "fingerprint": "disk-db-1",
            "labels": {"alertname": "DiskAlmostFull", "severity": "critical",
                       "instance": "db-1"},
            "annotations": {"summary": "Disk almost full on db-1"}}]},
        "grafana": {"alerts": [{
            "status": "firing", "fingerprint": "disk-db-1",
            "labels": {"alertname": "DiskAlmostFull", "severity": "critical"},
            "annotations": {"summary": "Disk almost full on db-1"}}]},
        "webhook": {"title": "Disk almost full on db-1", "status": "firing",
                    "id": "disk-db-1", "message": "92% used on /var"},
    }
    curl = {source: "\n".join((
        f"curl -X POST {_shell(urls[source])} \\",
        "  -H 'Content-Type: application/json' \\",
        f"  -d {_shell(json.dumps(body))}",
    )) for source, body in samples.items()}
    return Snippets(urls=urls, alertmanager=alertmanager, grafana=grafana, curl=curl)
