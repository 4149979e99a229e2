"""The areas the API reference groups its operations by, as docs/api.md does: each operation
falls in the area of the longest path prefix that names it."""

from __future__ import annotations

# (area, what it holds, path prefixes); a prefix ending in "/" takes every path below it.
AREAS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Account, members", "The account, its members and their contact preferences.",
     ("/account/", "/member/", "/person/")),
    ("Roles, keys, teams, audit", "Roles and permissions, app keys, teams and the audit log.",
     ("/role/", "/app-key/", "/team/", "/audit/")),
    ("Channels", "Channels, their integrations and custom fields.",
     ("/channel/", "/integration/", "/field/")),
    ("Incidents", "Reading incidents and acting on them.", ("/incident/",)),
    ("Post-mortems", "Post-mortems of closed incidents.", ("/incident/post-mortem/",)),
    ("War rooms", "Chat rooms opened for an incident.",
     ("/incident/war-room/", "/datasource/im/war-room-enabled/")),
    ("Alerts", "Alerts, their events, and pushing alerts in from monitoring tools.",
     ("/alert/", "/alert-event/", "/event/push/alert/")),
    ("AI SRE", "MCP servers and A2A agents the AI SRE may use.",
     ("/safari/mcp/", "/safari/a2a-agent/")),
    ("BYOC runners", "Worknodes and runner keys for runners in your own network.",
     ("/safari/worknode/", "/safari/runner/")),
    ("Status pages", "Status pages, their events, subscribers and migration.",
     ("/status-page/",)),
    ("Insights", "Figures and exports over incidents, alerts and notifications.",
     ("/insight/", "/report/")),
    ("Change events", "Changes (deploys, config) pushed in and listed.",
     ("/change/", "/event/push/change/")),
    ("Noise control", "Inhibit, silence and unsubscribe rules.",
     ("/channel/inhibit/", "/channel/silence/", "/channel/unsubscribe/",
      "/incident/silence/quick")),
    ("Templates", "Notification templates.", ("/template/",)),
    ("Schedules", "On-call schedules and their calendar feeds.", ("/schedule/",)),
    ("Service calendars", "Working-day calendars that schedules and rules refer to.",
     ("/calendar/",)),
    ("Paging", "Escalation and notification rules, deliveries and webhook history.",
     ("/channel/escalate/", "/channel/notify/", "/notify/", "/member/notify/test",
      "/webhook/history/")),
    ("Automations", "AI SRE automation rules, their runs and triggers.",
     ("/safari/automation/",)),
    ("Enrichment", "Mapping schemas, data and APIs, enrichment rules, pipelines and routes.",
     ("/enrichment/", "/alert/pipeline/", "/route/")),
    ("Monitors", "Data sources, alert rules and the monitor tools for agents.", ("/monit/",)),
)


def area_of(path: str) -> str:
    best, length = "", -1
    for area, _, prefixes in AREAS:
        for prefix in prefixes:
            hit = path.startswith(prefix) if prefix.endswith("/") else path == prefix
            if hit and len(prefix) > length:
                best, length = area, len(prefix)
    return best


def tags() -> list[dict[str, str]]:
    return [{"name": area, "description": words} for area, words, _ in AREAS]
