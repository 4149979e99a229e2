"""What a page says, per channel: e-mail (subject, text and HTML with the person's signed
links), the outgoing webhook payload (the reference's incident webhook shape), and the text
chat robots post. A template of the rule, when the renderer is there, replaces the text."""

from __future__ import annotations

import html
from typing import Any

import msgspec

from dutyline.incident.service import IncidentInfo

WEBHOOK_EVENT = "i_assign"


def headline(info: IncidentInfo) -> str:
    return f"[{info.incident_severity}] {info.title} (#{info.num})"


def text_body(info: IncidentInfo, links: dict[str, str]) -> str:
    lines = [headline(info), f"Channel: {info.channel_name or '-'}",
             f"Progress: {info.progress}"]
    if info.description:
        lines += ["", info.description]
    if info.labels:
        lines += ["", *(f"{k}: {v}" for k, v in sorted(info.labels.items()))]
    lines.append("")
    if "ack" in links:
        lines += [f"Acknowledge: {links['ack']}", f"Resolve: {links['resolve']}"]
    lines.append(f"Open: {links.get('open', info.detail_url)}")
    return "\n".join(lines) + "\n"


def html_body(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> str:
    e = html.escape
    main = rendered if rendered is not None else (
        f"<h2>{e(headline(info))}</h2>"
        f"<p>Channel: {e(info.channel_name or '-')} · Progress: {e(info.progress)}</p>"
        + (f"<p>{e(info.description)}</p>" if info.description else ""))
    buttons = ""
    if "ack" in links:
        buttons = (f'<a href="{e(links["ack"])}">Acknowledge</a> · '
                   f'<a href="{e(links["resolve"])}">Resolve</a> · ')
    buttons += f'<a href="{e(links.get("open", info.detail_url))}">Open</a>'
    return f"{main}<p>{buttons}</p>"


def email(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> dict[str, Any]:
    return {"subject": headline(info), "text": text_body(info, links),
            "html": html_body(info, links, rendered)}


def webhook_payload(info: IncidentInfo, *, event_id: str, now_ms: int,
                    assigned_to: dict[str, Any]) -> str:
    """The incident webhook body: event_time (ms), event_type, event_id, incident."""
    incident = {
        "incident_id": info.incident_id, "title": info.title, "description": info.description,
        "impact": info.impact, "root_cause": info.root_cause, "resolution": info.resolution,
        "incident_severity": info.incident_severity, "incident_status": info.incident_status,
        "progress": info.progress, "created_at": info.created_at,
        "updated_at": info.updated_at, "start_time": info.start_time,
        "last_time": info.last_time, "end_time": info.end_time, "ack_time": info.ack_time,
        "close_time": info.close_time, "snoozed_before": info.snoozed_before,
        "labels": info.labels, "fields": info.fields,
        "responders": msgspec.to_builtins(info.responders),
        "alert_cnt": info.alert_cnt, "channel_id": info.channel_id,
        "channel_name": info.channel_name, "num": info.num, "detail_url": info.detail_url,
        "assigned_to": assigned_to,
    }
    body = {"event_time": now_ms, "event_type": WEBHOOK_EVENT, "event_id": event_id,
            "incident": incident}
    return msgspec.json.encode(body).decode()


def chat_text(info: IncidentInfo, rendered: str | None) -> str:
    return rendered if rendered is not None else text_body(info, {})
