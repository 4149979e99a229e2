"""The data a notification template sees (the variables of the live service's templates:
`.Title .Num .IncidentSeverity .Labels .Alerts .DetailUrl` ...), built from the
incident domain's records (incident.query.service), never its tables."""

from __future__ import annotations

from typing import Any

from dutyline.incident.service import AlertInfo, IncidentInfo
from dutyline.kit.vocabulary import CRITICAL, TRIGGERED


def _person(person_id: int, people: dict[int, tuple[str, str]]) -> dict[str, Any]:
    name, email = people.get(person_id, ("", ""))
    return {"PersonID": person_id, "PersonName": name, "Email": email}


def incident_data(inc: IncidentInfo, alerts: list[AlertInfo], *, fire_type: str = "fire",
                  fire_times: int = 1) -> dict[str, Any]:
    people = {r.person_id: (r.person_name, r.email) for r in inc.responders}
    assigned = inc.assigned_to or {}
    return {
        "ID": inc.incident_id,
        "Num": inc.num,
        "Title": inc.title,
        "Description": inc.description,
        "IncidentSeverity": inc.incident_severity,
        "IncidentStatus": inc.incident_status,
        "Progress": inc.progress,
        "DetailUrl": inc.detail_url,
        "StartTime": inc.start_time,
        "LastTime": inc.last_time,
        "AckTime": inc.ack_time,
        "CloseTime": inc.close_time,
        "SnoozedBefore": inc.snoozed_before,
        "Creator": _person(inc.creator_id, people),
        "Closer": _person(inc.closer_id, people),
        "Owner": _person(inc.owner_id, people),
        "Responders": [
            {"PersonID": r.person_id, "PersonName": r.person_name, "Email": r.email,
             "AssignedAt": r.assigned_at, "AcknowledgedAt": r.acknowledged_at}
            for r in inc.responders
        ],
        "AssignedTo": {
            "EscalateRuleID": str(assigned.get("escalate_rule_id", "")),
            "EscalateRuleName": str(assigned.get("escalate_rule_name", "")),
            "LayerIdx": int(assigned.get("layer_idx", 0) or 0),
            "Type": str(assigned.get("type", "")),
        },
        "AlertCnt": inc.alert_cnt,
        "ActiveAlertCnt": inc.active_alert_cnt,
        "AlertEventCnt": inc.alert_event_cnt,
        "Alerts": [
            {"Title": a.title, "Description": a.description, "AlertSeverity": a.alert_severity,
             "AlertStatus": a.alert_status, "StartTime": a.start_time,
             "LastTime": a.last_time, "EndTime": a.end_time, "Labels": dict(a.labels)}
            for a in alerts
        ],
        "Labels": dict(inc.labels),
        "Fields": dict(inc.fields),
        "Images": [{"Src": i.src, "Alt": i.alt} for i in inc.images],
        "ChannelName": inc.channel_name,
        "ChannelID": inc.channel_id,
        "AccountName": inc.account_name,
        "AccountLocale": inc.account_locale,
        "AccountTimeZone": inc.account_time_zone,
        "FireType": fire_type,
        "FireTimes": fire_times,
        "IsFlapping": False,
        "IsInStorm": False,
        "Flapping": False,
        "GroupMethod": inc.group_method,
        "Impact": inc.impact,
        "RootCause": inc.root_cause,
        "Resolution": inc.resolution,
        "AISummary": inc.ai_summary,
    }


def sample_data(now_s: int, base_url: str, account_name: str = "",
                time_zone: str = "") -> dict[str, Any]:
    """A made-up incident for previews without an incident_id."""
    labels = {"host": "db-01", "service": "checkout", "env": "prod"}
    return {
        "ID": "000000000000000000000000", "Num": "A1B2C", "Title": "CPU usage above 90% on db-01",
        "Description": "CPU usage has been above 90% for 5 minutes.",
        "IncidentSeverity": CRITICAL, "IncidentStatus": CRITICAL, "Progress": TRIGGERED,
        "DetailUrl": f"{base_url}/console/incidents/000000000000000000000000",
        "StartTime": now_s - 300, "LastTime": now_s, "AckTime": 0, "CloseTime": 0,
        "SnoozedBefore": 0,
        "Creator": {"PersonID": 0, "PersonName": "", "Email": ""},
        "Closer": {"PersonID": 0, "PersonName": "", "Email": ""},
        "Owner": {"PersonID": 0, "PersonName": "", "Email": ""},
        "Responders": [], "AssignedTo": {"EscalateRuleID": "", "EscalateRuleName": "",
                                          "LayerIdx": 0, "Type": ""},
        "AlertCnt": 1, "ActiveAlertCnt": 1, "AlertEventCnt": 1,
        "Alerts": [{"Title": "CPU usage above 90% on db-01", "Description": "",
                    "AlertSeverity": CRITICAL, "AlertStatus": CRITICAL,
                    "StartTime": now_s - 300, "LastTime": now_s, "EndTime": 0,
                    "Labels": dict(labels)}],
        "Labels": labels, "Fields": {}, "Images": [],
        "ChannelName": "Sample channel", "ChannelID": 0, "AccountName": account_name,
        "AccountLocale": "en-US", "AccountTimeZone": time_zone, "FireType": "fire",
        "FireTimes": 1, "IsFlapping": False, "IsInStorm": False, "Flapping": False,
        "GroupMethod": "n", "Impact": "", "RootCause": "", "Resolution": "", "AISummary": "",
    }
