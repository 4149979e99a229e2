"""What a service takes, checked when the service is entered.

The limits of an input (length, range, pattern) are `msgspec.Meta` constraints on the fields
of the record a service takes (`TeamChanges`, `ChannelChanges`, an escalation rule's
`RuleSpec`...). The API's request structs are built from those records, so msgspec refuses a
request body against the same constraints; a service checks them again on entry, so a caller
that builds a record in code (the console, a job, a command) is refused alike, with the same
`InvalidParameter` (field and reason) that the API answers.

    @writes("/team/upsert", ACCOUNT_MANAGE, inputs=TeamChanges)
    async def upsert_team(conn, actor, *, team: TeamChanges) -> int: ...

`inputs` names the record: a keyword argument that is such a record is checked whole, the
way it would arrive as a request body; otherwise the keyword arguments named by the record's
fields are checked together, as the fields of one body (so a list of layers is refused at
`layers[0].target.person_ids`, the path the API names)."""

from __future__ import annotations

import datetime
import decimal
import re
import uuid
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from dutyline.api import errors

S = TypeVar("S", bound=msgspec.Struct)

# msgspec names a bad mapping key "at `key` in `$.path`": the field is the mapping.
_AT_PATH = re.compile(r"^(?P<reason>.*?) - at (?P<key>`key` in )?`\$\.?(?P<path>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`")
# Kept as they are by to_builtins, so that converting back needs no string parsing.
_AS_IS = (bytes, bytearray, datetime.datetime, datetime.date, datetime.time, datetime.timedelta,
          uuid.UUID, decimal.Decimal)


def invalid_parameter(detail: str) -> errors.InvalidParameter:
    """msgspec's validation message as our 400, naming the field (`layers[0].rule_name`)."""
    field, reason = "body", detail
    if m := _AT_PATH.match(detail):
        reason, field = m["reason"], m["path"] or "body"
        if m["key"]:
            reason = f"{reason} (a key)"
    if m := _MISSING.match(reason):
        missing = m["field"]
        field = f"{field}.{missing}" if field != "body" else missing
        reason = "is required"
    elif reason.startswith("p × limit"):
        field = "p"
    return errors.invalid(field, reason)


def convert(value: Any, record: type[S], *, strict: bool = True) -> S:
    """`value` (builtins: dicts, lists, strings...) as `record`, or the 400 naming the field."""
    try:
        return msgspec.convert(value, record, strict=strict)
    except msgspec.ValidationError as exc:
        raise invalid_parameter(str(exc)) from None


def checked(value: S, record: type[S] | None = None) -> S:
    """A record built in code, checked against its type's constraints (msgspec checks them
    only when it decodes or converts): a new record, or the 400 naming the field."""
    return convert(_builtins(value), record or type(value))


def checked_arguments(record: type[msgspec.Struct],
                      arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A service's keyword arguments checked against `record` (see the module's docstring):
    the same arguments, those the record describes replaced by their checked values."""
    out = dict(arguments)
    whole = [name for name, value in arguments.items() if isinstance(value, record)]
    if whole:
        for name in whole:
            out[name] = checked(arguments[name], record)
        return out
    fields = record.__struct_fields__
    given = {name: _builtins(value) for name, value in arguments.items()
             if name in fields and value is not msgspec.UNSET}
    encoded = {_encoded_name(record, name): value for name, value in given.items()}
    value = convert(encoded, record)
    for name in given:
        out[name] = getattr(value, name)
    return out


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value, builtin_types=_AS_IS)


def _encoded_name(record: type[msgspec.Struct], name: str) -> str:
    encoded: tuple[str, ...] = record.__struct_encode_fields__
    return encoded[record.__struct_fields__.index(name)]
