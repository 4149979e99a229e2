"""What a page says, per channel: e-mail (subject, text and HTML with the person's signed
links), the outgoing webhook payload (the reference's incident webhook shape), and the text
chat robots post. A template of the rule, when the renderer is there, replaces the text.
Every link is absolute (the server's base URL): a mail client or a chat has no page to
resolve a relative one against."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from dutyline.incident.service import IncidentInfo
from dutyline.kit.localtime import zone

# Incident webhook event types (reference IncidentFeedType): a layer's webhook hears the
# assignment that pages it, then the acknowledgement and the resolution.
ASSIGN_EVENT, ACK_EVENT, RESOLVE_EVENT = "i_assign", "i_ack", "i_rslv"


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


def started(info: IncidentInfo) -> str:
    """The start time in the account's time zone, saying which: '2023-11-15 06:13:20 +08:00
    (Asia/Shanghai)' (the reader may be anywhere)."""
    name = info.account_time_zone if zone(info.account_time_zone) else "UTC"
    at = datetime.fromtimestamp(info.start_time, zone(name) or UTC)
    offset = at.strftime("%z")
    return f"{at:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:]} ({name})"


def _is_link(value: str) -> bool:
    return value.startswith(("http://", "https://"))


def _label_cell(value: str) -> str:
    """A label's value, a link when it is an http(s) URL (a runbook, a dashboard)."""
    e = html.escape
    return f'<a href="{e(value)}">{e(value)}</a>' if _is_link(value) else e(value)


_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)


def _inside_body(document: str, block: str) -> str:
    """`block` at the end of the document's body: a full HTML document (a template's) gets
    it before its last `</body>` (or `</html>`), where every mail client shows it."""
    for end in (_BODY_END, _HTML_END):
        found = list(end.finditer(document))
        if found:
            at = found[-1].start()
            return document[:at] + block + document[at:]
    return document + block


def html_body(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> str:
    e = html.escape
    labels = "".join(f"<tr><td>{e(k)}</td><td>{_label_cell(str(v))}</td></tr>"
                     for k, v in sorted(info.labels.items()))
    main = rendered if rendered is not None else (
        f"<h2>{e(headline(info))}</h2>"
        f"<p>Channel: {e(info.channel_name or '-')} · Progress: {e(info.progress)}</p>"
        f"<p>Started: {e(started(info))}</p>"
        + (f"<p>{e(info.description)}</p>" if info.description else "")
        + (f"<table>{labels}</table>" if labels else ""))
    buttons = ""
    if "ack" in links:
        buttons = (f'<a href="{e(links["ack"])}">Acknowledge</a> · '
                   f'<a href="{e(links["resolve"])}">Resolve</a> · ')
    buttons += f'<a href="{e(links.get("open", info.detail_url))}">Open</a>'
    return _inside_body(main, f"<p>{buttons}</p>")


def email(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> dict[str, Any]:
    return {"subject": headline(info), "text": text_body(info, links),
            "html": html_body(info, links, rendered)}


def webhook_payload(info: IncidentInfo, *, event_id: str, now_ms: int,
                    assigned_to: dict[str, Any], event_type: str = ASSIGN_EVENT,
                    person: dict[str, Any] | None = None) -> str:
    """The incident webhook body: event_time (ms), event_type, event_id, incident; and
    `person` (person_id, person_name, email), who acknowledged or resolved, when a member
    did."""
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
    body: dict[str, Any] = {"event_time": now_ms, "event_type": event_type,
                            "event_id": event_id}
    if person is not None:
        body["person"] = person
    body["incident"] = incident
    return msgspec.json.encode(body).decode()


def chat_text(info: IncidentInfo, rendered: str | None) -> str:
    return rendered if rendered is not None else text_body(info, {})


SMS_MAX = 1_600


def sms_text(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> str:
    """A short page: the template's SMS body (or the headline), then the acknowledge link."""
    head = (rendered if rendered is not None else headline(info)).strip()
    tail = f"\nAck: {links['ack']}" if "ack" in links else ""
    return head[:SMS_MAX - len(tail)] + tail


def voice_text(info: IncidentInfo, rendered: str | None) -> str:
    """What a call reads out: no links, no markup."""
    if rendered is not None and rendered.strip():
        return rendered.strip()
    return (f"{info.incident_severity} incident number {info.num}: {info.title}. "
            f"Channel {info.channel_name or 'unknown'}.")


def personal_chat_text(info: IncidentInfo, links: dict[str, str], rendered: str | None) -> str:
    """A chat message to one person: the text, then their own links."""
    text = chat_text(info, rendered).rstrip()
    if "ack" not in links:
        return text + "\n"
    return (f"{text}\n\nAcknowledge: {links['ack']}\nResolve: {links['resolve']}\n"
            f"Open: {links.get('open', info.detail_url)}\n")
