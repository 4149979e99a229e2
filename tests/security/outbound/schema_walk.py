"""Walks every request schema of dutyline's writing operations (and the structs they nest)
for the fields the outbound rules care about: those marked as an outbound URL or secret
(api/outbound_secrets.py), and those that look like one by their name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import inspect as mi

from dutyline.api.outbound_secrets import OUTBOUND_MARK
from dutyline.domains import all_routers

# Names of fields that hold an address dutyline may call, or a credential.
LOOKS_OUTBOUND = re.compile(
    r"url|address|endpoint|host|webhook|token|secret|password|passwd|api_?key|headers"
    r"|credential|auth|private_key|tls_key|cert")


@dataclass(frozen=True)
class Field:
    struct: str  # module-qualified struct name
    name: str  # dotted: a settings object's keys are `settings.<key>`
    mark: str  # "url", "secret", or "" when unmarked


def request_structs() -> list[type[msgspec.Struct]]:
    """The request schemas of every operation that writes (a stored target is saved by
    one), from the composition root's list of routers."""
    found: dict[str, type[msgspec.Struct]] = {}
    for router in all_routers():
        for op in router.operations:
            t = op.request_type
            if op.write and isinstance(t, type) and issubclass(t, msgspec.Struct):
                found[f"{t.__module__}.{t.__qualname__}"] = t
    return [found[k] for k in sorted(found)]


def _marks(t: Any) -> tuple[dict[str, Any], Any]:
    """The merged `Meta.extra` on a type (through unions and optionals) and the bare type."""
    extra: dict[str, Any] = {}
    while True:
        if isinstance(t, mi.Metadata):
            extra.update(t.extra or {})
            t = t.type
        elif isinstance(t, mi.UnionType):
            rest = [u for u in t.types if not isinstance(u, mi.NoneType)]
            if len(rest) != 1:
                return extra, t
            t = rest[0]
        else:
            return extra, t


def _nested(t: Any) -> Iterator[mi.StructType]:
    if isinstance(t, mi.StructType):
        yield t
    elif isinstance(t, mi.Metadata):
        yield from _nested(t.type)
    elif isinstance(t, mi.UnionType):
        for u in t.types:
            yield from _nested(u)
    elif isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        yield from _nested(t.item_type)
    elif isinstance(t, mi.DictType):
        yield from _nested(t.value_type)


def fields() -> list[Field]:
    """Every field of a request schema (nested ones included) that is marked or looks
    outbound, each once."""
    seen: set[type] = set()
    out: set[Field] = set()
    todo = [mi.type_info(cls) for cls in request_structs()]
    while todo:
        info = todo.pop()
        if info.cls in seen:
            continue
        seen.add(info.cls)
        owner = f"{info.cls.__module__}.{info.cls.__qualname__}"
        for f in info.fields:
            extra, _ = _marks(f.type)
            mark = str(extra.get(OUTBOUND_MARK, ""))
            if mark == "settings":
                out.add(Field(owner, f"{f.name}.{extra['url']}", "url"))
                out.update(Field(owner, f"{f.name}.{k}", "secret") for k in extra["secrets"])
            elif mark or LOOKS_OUTBOUND.search(f.name):
                out.add(Field(owner, f.name, mark))
            todo.extend(_nested(f.type))
    return sorted(out, key=lambda x: (x.struct, x.name))
