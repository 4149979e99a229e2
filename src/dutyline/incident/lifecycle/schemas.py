"""Incident write requests (reference: CreateIncidentRequest, Ack/Unack/Resolve/Reopen/Snooze/
Wake/Remove/CommentIncidentRequest, UpdateIncidentFieldsRequest, AssignIncidentRequest,
MergeIncidentsRequest, ResetIncidentFieldRequest)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64
from dutyline.incident.query.schemas import IncidentId, IncidentIds
from dutyline.kit.channels import PersonalChannel
from dutyline.kit.vocabulary import Severity

_Text1024 = Annotated[str, msgspec.Meta(max_length=1024)]
_LongText = Annotated[str, msgspec.Meta(min_length=3, max_length=6144)]
_MaybeEmptyIds = Annotated[list[IncidentId], msgspec.Meta(max_length=100)]


class AssignedTo(msgspec.Struct, kw_only=True):
    person_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=100)] | None = None
    escalate_rule_id: IncidentId | None = None
    layer_idx: Annotated[int, msgspec.Meta(ge=0, le=100)] = 0
    type: Literal["assign", "reassign", "escalate", "reopen"] = "assign"
    emails: Annotated[list[Annotated[str, msgspec.Meta(max_length=255)]],
                      msgspec.Meta(min_length=1, max_length=100)] | None = None


class CreateInput(msgspec.Struct, kw_only=True):
    """What the lifecycle's create takes (as each `...Input`: its keyword arguments, with
    their limits, checked when the service is entered; the request is built from it)."""

    incident_severity: Severity
    title: Annotated[str, msgspec.Meta(max_length=512)] = ""
    description: _Text1024 = ""
    channel_id: NonNegInt64 = 0  # 0 or absent: a standalone incident
    assigned_to: AssignedTo | None = None


class CreateIncidentRequest(CreateInput, kw_only=True):
    pass


class CreateIncidentResponse(msgspec.Struct, kw_only=True):
    incident_id: str
    title: str
    num: str


class IncidentIdsRequest(msgspec.Struct, kw_only=True):
    """Ack, unack, wake: 1 to 100 ids, all or nothing."""

    incident_ids: IncidentIds


class ResolveInput(msgspec.Struct, kw_only=True):
    incident_ids: IncidentIds
    root_cause: _Text1024 | None = None
    resolution: _Text1024 | None = None


class ResolveIncidentRequest(ResolveInput, kw_only=True):
    pass


class ReopenInput(msgspec.Struct, kw_only=True):
    incident_ids: IncidentIds
    reason: _Text1024 = ""


class ReopenIncidentRequest(ReopenInput, kw_only=True):
    pass


class SnoozeInput(msgspec.Struct, kw_only=True):
    incident_ids: _MaybeEmptyIds
    minutes: Annotated[int, msgspec.Meta(ge=1, le=1440)]


class SnoozeIncidentRequest(SnoozeInput, kw_only=True):
    pass


class RemoveIncidentRequest(msgspec.Struct, kw_only=True):
    incident_ids: _MaybeEmptyIds


class CommentInput(msgspec.Struct, kw_only=True):
    incident_ids: IncidentIds
    comment: Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]
    mute_reply: bool = False


class CommentIncidentRequest(CommentInput, kw_only=True):
    pass


class ResetInput(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    title: Annotated[str, msgspec.Meta(min_length=3, max_length=200)] | None = None
    description: _LongText | None = None
    impact: _LongText | None = None
    root_cause: _LongText | None = None
    resolution: _LongText | None = None
    incident_severity: Severity | None = None


class UpdateIncidentFieldsRequest(ResetInput, kw_only=True):
    pass


class AssignInput(msgspec.Struct, kw_only=True):
    # The service names an empty list itself ("is required"), as the API's request allows
    # `incident_id` instead.
    incident_ids: _MaybeEmptyIds
    assigned_to: AssignedTo


class AssignIncidentRequest(msgspec.Struct, kw_only=True):
    assigned_to: AssignedTo
    incident_id: IncidentId | None = None
    incident_ids: IncidentIds | None = None


class MergeInput(msgspec.Struct, kw_only=True):
    source_incident_ids: IncidentIds
    target_incident_id: IncidentId
    title: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    comment: _Text1024 = ""
    owner_id: Id | None = None
    remove_source_incidents: bool = False


class MergeIncidentsRequest(MergeInput, kw_only=True):
    pass


class FieldResetInput(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    field_name: Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
    # Any JSON value that fits the field's definition; null clears the value.
    field_value: Any = None


class ResetIncidentFieldRequest(FieldResetInput, kw_only=True):
    pass


class ResponderNotify(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How the added responders are notified; omitted: each person's own preference."""

    follow_preference: bool = True
    personal_channels: Annotated[list[PersonalChannel], msgspec.Meta(max_length=20)] = \
        msgspec.field(default_factory=list)
    template_id: IncidentId | None = None


class RespondersInput(msgspec.Struct, kw_only=True):
    incident_id: IncidentId
    person_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=100)]


class AddIncidentResponderRequest(RespondersInput, kw_only=True):
    notify: ResponderNotify | None = None


class DisableIncidentMergeRequest(msgspec.Struct, kw_only=True):
    incident_ids: IncidentIds
