"""Custom action requests and answers (reference DoIncidentCustomActionRequest/Response)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.types import Id

IncidentId = Annotated[str, msgspec.Meta(pattern="^[0-9a-fA-F]{24}$")]


class DoIncidentCustomActionRequest(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    # A custom-action integration of the incident's channel.
    integration_id: Id


class DoIncidentCustomActionResponse(msgspec.Struct, kw_only=True):
    # Empty when the action's endpoint answered 2xx; else why the call failed.
    message: str = ""
