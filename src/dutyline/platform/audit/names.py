"""Operation names in the live service's form.

dutyline names an audited operation after its path (`/template/create` -> `template.create`,
`/incident/ack` -> `incident.ack`). The live service names it `<resource>:<read|write>:<verb>`
(`template:write:create`, `incident:write:acknowledge`), and its clients filter the audit log
with those names, so the search accepts both."""

from __future__ import annotations

# The live service's verbs where dutyline's path says it shorter.
_VERBS = {"acknowledge": "ack", "unacknowledge": "unack"}


def own_name(name: str) -> str:
    """dutyline's name for an operation named either way (a name of neither form is kept)."""
    parts = name.split(":")
    if len(parts) != 3 or parts[1] not in ("read", "write") or not parts[0] or not parts[2]:
        return name
    resource, _, verb = parts
    return f"{resource.replace('-', '_').replace('/', '.')}.{_VERBS.get(verb, verb)}"
