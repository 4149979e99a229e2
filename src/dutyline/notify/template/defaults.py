"""The built-in default template of every channel, and the rendered size limits.

The preset template (fixed ids below) is these bodies; rendering falls back to them when a
custom template fails. Email bodies are html/template (escaped); the rest text/template.
The e-mail gives the start time with its zone (the account's, which the reader may not
share) and makes a label whose value is an http(s) URL (a runbook, a dashboard) a link; it
uses only Go's own functions, so the body also works as a template elsewhere.
"""

from __future__ import annotations

from typing import Final

from dutyline.db.tables.notify import TEMPLATE_CHANNELS

CHANNELS: Final = TEMPLATE_CHANNELS
HTML_CHANNELS: Final = frozenset({"email"})

# The preset's id as the live service's clients know it, and the one the reference's
# examples use: both read the preset.
PRESET_TEMPLATE_ID: Final = "6321aad26c12104586a88916"
PRESET_IDS: Final = frozenset({PRESET_TEMPLATE_ID, "000000000000000000000001"})
PRESET_NAME: Final = "Default"

# Rendered size limits in bytes (what each platform accepts in one message): past them a
# preview warns and delivery truncates.
SIZE_LIMITS: Final[dict[str, int]] = {
    "dingtalk": 4000, "feishu": 4000, "wecom": 4000, "slack": 15000, "slack_app": 15000,
    "telegram": 4096, "teams_app": 28000,
}

_SHORT = (
    "[{{.IncidentSeverity}}] {{if eq .Progress \"Closed\"}}Recovered: {{end}}"
    "{{.Title}}"
)

_HEADLINE = (
    # Closed is a progress: IncidentStatus is the severity while open and Ok once closed.
    '{{if eq .Progress "Closed"}}Recovered{{else}}{{fireReason .FireType}}{{end}}: '
    "{{.Title}}"
)

_MARKDOWN = "**" + _HEADLINE + """**
- Severity: {{.IncidentSeverity}}
- Status: {{.IncidentStatus}} / {{.Progress}}
- Channel: {{.ChannelName}}
- Started: {{date "2006-01-02 15:04:05" .StartTime}}{{if .AlertCnt}}
- Alerts: {{.AlertCnt}} ({{.ActiveAlertCnt}} active){{end}}{{if .Labels}}
{{range $k, $v := .Labels}}- {{$k}}: {{$v}}
{{end}}{{end}}{{if .Description}}
{{.Description}}
{{end}}
[Details]({{.DetailUrl}})"""

_TEXT = _HEADLINE + """
Severity: {{.IncidentSeverity}}  Status: {{.IncidentStatus}}/{{.Progress}}
Channel: {{.ChannelName}}  Started: {{date "2006-01-02 15:04:05" .StartTime}}
{{range $k, $v := .Labels}}{{$k}}={{$v}} {{end}}
{{.DetailUrl}}"""

_STARTED_IN_ZONE = (
    '{{date "2006-01-02 15:04:05 -07:00" .StartTime}} '
    "({{if .AccountTimeZone}}{{.AccountTimeZone}}{{else}}UTC{{end}})"
)
# A link only for http(s) (html/template also filters the href itself).
_LABEL_VALUE = (
    '{{if or (eq (printf "%.7s" $v) "http://") (eq (printf "%.8s" $v) "https://")}}'
    '<a href="{{$v}}">{{$v}}</a>{{else}}{{$v}}{{end}}'
)

_EMAIL = """<html><body>
<h3><font color="{{colorSeverity .IncidentSeverity}}">[{{.IncidentSeverity}}]</font>
{{if eq .Progress "Closed"}}Recovered: {{end}}{{.Title}}</h3>
<table>
<tr><td>Status</td><td>{{.IncidentStatus}} / {{.Progress}}</td></tr>
<tr><td>Channel</td><td>{{.ChannelName}}</td></tr>
<tr><td>Started</td><td>""" + _STARTED_IN_ZONE + """</td></tr>
<tr><td>Alerts</td><td>{{.AlertCnt}}</td></tr>
{{range $k, $v := .Labels}}<tr><td>{{$k}}</td><td>""" + _LABEL_VALUE + """</td></tr>
{{end}}</table>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p><a href="{{.DetailUrl}}">Open the incident</a></p>
</body></html>"""

_VOICE = (
    "{{if eq .Progress \"Closed\"}}Recovered: {{end}}"
    "{{.IncidentSeverity}} incident on channel {{.ChannelName}}: {{.Title}}. "
    "{{if .AlertCnt}}{{.AlertCnt}} alerts.{{end}}"
)

DEFAULT_BODIES: Final[dict[str, str]] = {
    "email": _EMAIL,
    "sms": _SHORT,
    "voice": _VOICE,
    "dingtalk": _MARKDOWN,
    "wecom": _MARKDOWN,
    "feishu": _MARKDOWN,
    "slack": _MARKDOWN,
    "telegram": _TEXT,
    "zoom": _TEXT,
    "feishu_app": _MARKDOWN,
    "dingtalk_app": _MARKDOWN,
    "wecom_app": _MARKDOWN,
    "slack_app": _MARKDOWN,
    "teams_app": _MARKDOWN,
}
assert set(DEFAULT_BODIES) == set(CHANNELS)
