"""The default post-mortem template: markdown sections filled from the material. The model's
draft later replaces the sections it writes (summary, impact, contributing factors), found
by their headings."""

from __future__ import annotations

import re

from dutyline.incident.postmortem.material import (
    Material,
    alert_lines,
    change_lines,
    incident_lines,
    timeline_lines,
)

TEMPLATE_ID = "post_mortem_default_tmpl_en-us"
SUMMARY = "Summary"
TIMELINE = "Timeline"
IMPACT = "Impact"
CONTRIBUTING_FACTORS = "Contributing factors"
ACTION_ITEMS = "Action items"
MODEL_SECTIONS = (SUMMARY, IMPACT, CONTRIBUTING_FACTORS)
_TO_WRITE = "_To be written._"
_HEADING = re.compile(r"^## +(.+?)\s*$")


def render(m: Material) -> str:
    sections = {
        SUMMARY: _summary(m),
        TIMELINE: "\n".join(f"- {line}" for line in timeline_lines(m)) or _TO_WRITE,
        IMPACT: _noted(m, "impact", "Describe who and what was affected, and for how long."),
        CONTRIBUTING_FACTORS: _contributing(m),
        ACTION_ITEMS: _actions(m),
    }
    return "\n\n".join(f"## {name}\n\n{body}" for name, body in sections.items()) + "\n"


def _summary(m: Material) -> str:
    lines = [f"- {line}" for line in incident_lines(m)]
    described = [f"{i.description.strip()}" for i in m.incidents if i.description.strip()]
    return "\n".join(lines + (["", *described] if described else []))


def _noted(m: Material, attribute: str, hint: str) -> str:
    noted = [getattr(i, attribute).strip() for i in m.incidents]
    texts = [t for t in noted if t]
    return "\n\n".join(texts) if texts else f"{_TO_WRITE} {hint}"


def _contributing(m: Material) -> str:
    body = _noted(m, "root_cause", "What made this happen, and what let it last.")
    alerts = alert_lines(m)
    if alerts:
        body += "\n\nAlerts:\n\n" + "\n".join(f"- {line}" for line in alerts)
    changes = change_lines(m)
    if changes:
        body += "\n\nChanges just before:\n\n" + "\n".join(f"- {line}" for line in changes)
    return body


def _actions(m: Material) -> str:
    done = [f"- Resolution: {i.resolution.strip()}" for i in m.incidents if i.resolution.strip()]
    return "\n".join([*done, "- [ ] _Follow-up to be decided._"])


def replace_sections(markdown: str, bodies: dict[str, str]) -> str:
    """`markdown` with the body of each `## heading` named in `bodies` replaced; a heading
    not found is appended at the end."""
    out: list[str] = []
    current: str | None = None
    done: set[str] = set()
    for line in markdown.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
            out.append(line)
            if current in bodies:
                out += ["", bodies[current].strip(), ""]
                done.add(current)
            continue
        if current not in bodies:
            out.append(line)
    for name, body in bodies.items():
        if name not in done:
            out += ["", f"## {name}", "", body.strip(), ""]
    return "\n".join(out).strip() + "\n"
