"""A posted form decoded into the record a service takes, and the service's refusal mapped back
to the form's field.

The console declares no limit of its own: the record (`teams.TeamChanges`,
`members.NewMember`...) carries them, and the service checks them again when it is entered
(api/inputs.py). So a page is

    form = await ctx.form_lists()
    team = forms.decode(form, teams.TeamChanges, shown=("person_ids",),
                        given={"team_id": team_id})
    await teams.upsert_team(conn, ctx.actor, team=team)

Field names follow the record, nested ones with dots and indices as the API names them:
`layers[0].target.person_ids`, `im.slack`; a mapping keyed by ids takes them as indices
(`layers[0].target.schedule_to_role_ids[12]`). A name posted several times (checkboxes, a
multiple select) fills a list, blank values left out; a scalar takes the last value
posted. Text keeps what was typed (the service trims), with a textarea's CRLF line breaks
read as LF. An empty number is left out (the record's default, or "is required"); an
empty optional value is None.
A checkbox sends `on` (or its `value`) when ticked and nothing otherwise: the fields a form
`shows` decode as False or [] when the browser sent nothing for them. `given` holds what
the page knows itself (the id in its path); no form value overrides it. `names` maps a
record field to the form's own name for it (`{"role_ids": "role_id"}`).

A value the record refuses is the API's 400 (same field, same reason), renamed to the form
field that carried it and worded for a person (`must be at most 39 characters`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi

from dutyline.api import errors
from dutyline.api.inputs import convert

S = TypeVar("S", bound=msgspec.Struct)

Form = Mapping[str, list[str]]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# An index, or an id of a mapping keyed by ids (up to 19 digits).
_STEP = re.compile(r"\[(\d{1,19})\]|\.([A-Za-z_][A-Za-z0-9_]*)")
_TRUE = frozenset({"on", "true", "1", "yes"})
_UNUSABLE = "must not contain NUL characters or unpaired surrogates"
_INDEX = re.compile(r"\[\d+\]$")


class _Leaf(list[str]):
    """The values posted under one full name."""


def decode(form: Form, record: type[S], *, shown: Iterable[str] = (),
           given: Mapping[str, Any] | None = None,
           names: Mapping[str, str] | None = None) -> S:
    """`form` (name -> values posted, as `ConsoleContext.form_lists` gives it) as `record`:
    see the module's docstring. Raises InvalidParameter naming the form's field."""
    renamed = dict(names or {})
    to_field = {form_name: field for field, form_name in renamed.items()}
    tree: dict[str, Any] = {}
    for name, values in form.items():
        for value in values:
            if "\x00" in value:
                raise errors.invalid(name, _UNUSABLE)
        path = _path(name)
        if path is None:
            continue
        head = path[0]
        path[0] = to_field.get(head, head) if isinstance(head, str) else head
        _place(tree, path, values)
    info = mi.type_info(record)
    assert isinstance(info, mi.StructType)
    data = _struct(tree, info, shown=frozenset(shown))
    data.update(given or {})
    try:
        return convert(data, record, strict=False)
    except errors.InvalidParameter as exc:
        raise on_form(exc, form=form, names=renamed) from None


def decode_known(form: Form, record: type[S]) -> S:
    """`decode` for a GET form of filters: a value the record refuses is left out (the
    record's default), as any value the form does not know, so a stale or hand-edited
    address still opens the page."""
    left = dict(form)
    while True:
        try:
            return decode(left, record)
        except errors.InvalidParameter as exc:
            field = exc.fields.get("field")
            if not isinstance(field, str) or field not in left:
                raise
            del left[field]


def on_form(exc: errors.ApiError, *, form: Form | None = None,
            names: Mapping[str, str] | None = None,
            prefix: str | tuple[str, ...] = ()) -> errors.ApiError:
    """A service's refusal as the form's: an InvalidParameter's field renamed to the form's
    (`members[0].email` -> `email` with the prefix `members[0].`, or one of several;
    `person_ids[3]` -> `person_ids` when the form posted the list under one name; a record
    field to its name in `names`) and its reason in plain words. Any other error as it is."""
    field = exc.fields.get("field") if isinstance(exc, errors.InvalidParameter) else None
    if not isinstance(field, str):
        return exc
    name = field
    for start in (prefix,) if isinstance(prefix, str) else prefix:
        if start and name.startswith(start):
            name = name.removeprefix(start)
            break
    posted = set(form or ())
    while name not in posted and _INDEX.search(name) and form is not None:
        name = _INDEX.sub("", name)
    head, dot, rest = name.partition(".")
    bare = _INDEX.sub("", head)
    if names and bare in names:
        name = names[bare] + head[len(bare):] + dot + rest
        while _INDEX.search(name) and name not in posted and form is not None:
            name = _INDEX.sub("", name)
    return errors.invalid(name, plain(str(exc.fields.get("reason", "is invalid"))))


_PLAIN = (
    (re.compile(r"^Expected `str` of length >= 1$"), "is required"),
    (re.compile(r"^Expected `str` of length >= (\d+)$"), "must be at least {0} characters"),
    (re.compile(r"^Expected `str` of length <= (\d+)$"), "must be at most {0} characters"),
    (re.compile(r"^Expected `array` of length >= 1$"), "choose at least one"),
    (re.compile(r"^Expected `array` of length >= (\d+)$"), "choose at least {0}"),
    (re.compile(r"^Expected `array` of length <= (\d+)$"), "choose at most {0}"),
    (re.compile(r"^Expected `(?:int|float)` >= (-?[\d.]+)$"), "must be at least {0}"),
    (re.compile(r"^Expected `(?:int|float)` <= (-?[\d.]+)$"), "must be at most {0}"),
    # An optional field's type reads `int | null`.
    (re.compile(r"^Expected `int(?: \| null)?`, got `.*`$"), "must be a whole number"),
    (re.compile(r"^Expected `float(?: \| null)?`, got `.*`$"), "must be a number"),
    (re.compile(r"^Expected `str` matching regex .*$"), "is invalid"),
    (re.compile(r"^Invalid enum value .*$"), "is not one of the choices"),
)


def plain(reason: str) -> str:
    """msgspec's wording of a refused value in a person's words; other reasons unchanged."""
    for pattern, words in _PLAIN:
        if m := pattern.match(reason):
            return words.format(*m.groups())
    return reason


def _path(name: str) -> list[str | int] | None:
    head = _NAME.match(name)
    if head is None:
        return None
    path: list[str | int] = [head.group()]
    at = head.end()
    while at < len(name):
        step = _STEP.match(name, at)
        if step is None:
            return None
        path.append(int(step[1]) if step[1] is not None else step[2])
        at = step.end()
    return path


def _place(tree: dict[Any, Any], path: list[str | int], values: list[str]) -> None:
    node = tree
    for step in path[:-1]:
        child = node.get(step)
        if not isinstance(child, dict):
            child = node[step] = {}
        node = child
    node[path[-1]] = _Leaf(values)


def _struct(tree: Mapping[Any, Any], info: mi.StructType, *, shown: frozenset[str] = frozenset(),
            ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in info.fields:
        key = field.encode_name
        if key in tree or field.name in tree:
            value = _value(tree.get(key, tree.get(field.name)), field.type)
            if value is not _ABSENT:
                out[key] = value
        elif field.name in shown:
            out[key] = _nothing_posted(field.type)
    return out


_ABSENT: Any = object()


def _nothing_posted(kind: mi.Type) -> Any:
    """What a shown field the browser sent nothing for means: an unticked box, no choice."""
    kind = _without_none(kind)
    if isinstance(kind, mi.BoolType):
        return False
    if isinstance(kind, mi.ListType | mi.SetType | mi.VarTupleType | mi.FrozenSetType):
        return []
    return None


def _without_none(kind: mi.Type) -> mi.Type:
    # A type with metadata of its own (Annotated with an `extra` mark) is read as its type.
    while isinstance(kind, mi.Metadata):
        kind = kind.type
    if isinstance(kind, mi.UnionType):
        rest = [t for t in kind.types if not isinstance(t, mi.NoneType)]
        if len(rest) == 1:
            return rest[0]
    return kind


def _value(node: Any, kind: mi.Type) -> Any:
    while isinstance(kind, mi.Metadata):
        kind = kind.type
    optional = isinstance(kind, mi.UnionType) and any(
        isinstance(t, mi.NoneType) for t in kind.types)
    kind = _without_none(kind)
    if isinstance(kind, mi.ListType | mi.SetType | mi.VarTupleType | mi.FrozenSetType):
        if isinstance(node, _Leaf):
            return [v for v in (_scalar(v, kind.item_type) for v in node if v.strip())
                    if v is not _ABSENT]
        if isinstance(node, dict):
            return [_value(node[i], kind.item_type)
                    for i in sorted(k for k in node if isinstance(k, int))]
        return _ABSENT
    if isinstance(kind, mi.StructType):
        return _struct(node, kind) if isinstance(node, dict) else _ABSENT
    if isinstance(kind, mi.DictType):
        if not isinstance(node, dict):
            return _ABSENT
        # `ids[12]` names the key 12 of a mapping keyed by ids (as JSON's text keys do).
        return {str(k): v for k, sub in node.items() if isinstance(k, str | int)
                and (v := _value(sub, kind.value_type)) is not _ABSENT}
    if not isinstance(node, _Leaf) or not node:
        return _ABSENT
    value = _scalar(node[-1], kind)
    if value is _ABSENT and optional:
        return None
    return value


def _scalar(text: str, kind: mi.Type) -> Any:
    kind = _without_none(kind)
    if isinstance(kind, mi.BoolType):
        return text.strip().lower() in _TRUE
    if isinstance(kind, mi.IntType | mi.FloatType):
        return text.strip() if text.strip() else _ABSENT
    if isinstance(kind, mi.StrType | mi.AnyType):
        return text.replace("\r\n", "\n")
    return text if text.strip() else _ABSENT
