"""Custom field requests and records (the reference defines no field operations: these follow
the conventions of the others)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

FieldType = Literal["text", "single_select", "multi_select", "checkbox"]
# Checked against the name rule by the service, so the message names the rule.
FieldName = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
FieldId = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{24}$")]
DisplayName = Annotated[str, msgspec.Meta(max_length=128)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
OptionText = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Options = Annotated[list[OptionText], msgspec.Meta(max_length=200)]


class CreateFieldRequest(msgspec.Struct, kw_only=True):
    field_name: FieldName
    field_type: FieldType
    display_name: DisplayName = ""
    description: Description = ""
    options: Options = []
    default_value: Any = None


class CreateFieldResponse(msgspec.Struct, kw_only=True):
    field_id: str
    field_name: str


class FieldLookup(msgspec.Struct, kw_only=True):
    """A field by id or by name."""

    field_id: FieldId | None = None
    field_name: FieldName | None = None


class UpdateFieldRequest(msgspec.Struct, kw_only=True):
    """Only the fields given change; a field's name and type are fixed once created, since
    incidents already hold values of that name and shape."""

    field_id: FieldId
    display_name: DisplayName | None = None
    description: Description | None = None
    options: Options | None = None
    default_value: Any = msgspec.UNSET


VALUE_TYPES = {"text": "string", "single_select": "string", "multi_select": "string",
               "checkbox": "bool"}


class FieldItem(msgspec.Struct, kw_only=True):
    field_id: str
    field_name: str
    display_name: str
    description: str
    field_type: str
    options: list[str]
    default_value: Any
    status: str
    creator_id: int
    created_at: int
    updated_at: int
    # The type of each value: "bool" for checkbox, "string" for the others (a multi_select
    # holds a list of strings). Clients of the live service read it beside field_type.
    value_type: str = ""

    def __post_init__(self) -> None:
        self.value_type = self.value_type or VALUE_TYPES.get(self.field_type, "string")


class ListFieldsResponse(msgspec.Struct, kw_only=True):
    total: int
    items: list[FieldItem]
