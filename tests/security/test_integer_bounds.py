"""Every integer a request carries is bounded at decode: no number an int64 column cannot
hold reaches the database (SQLite's driver raises OverflowError on one, a 500), and the
answer is a 400 InvalidParameter naming the field.

The walk takes every request struct from the operation registry (and the request structs of
the routes outside it), recursively: nested structs, list and tuple items, dict keys and
values, optionals and unions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from msgspec import inspect as mi

from dutyline.api.operation import Operation
from dutyline.api.types import MAX_INT64
from dutyline.domains import all_routers
from dutyline.incident.change.schemas import ChangePushRequest
from dutyline.incident.ingest.schemas import PushRequest
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

OPERATIONS: list[Operation] = [op for router in all_routers() for op in router.operations]
# The request structs of the routes outside the operation layer (alert and change pushes).
OTHER_REQUESTS: list[type[msgspec.Struct]] = [PushRequest, ChangePushRequest]
TOO_BIG = [2**63, 2**64]
MIN_INT64 = -(2**63)


@dataclass(frozen=True)
class IntSite:
    """One place a request carries an integer: the JSON body that puts `value` there, built
    by `body(value)`, and the field the answer must name."""

    owner: str  # "Struct.field" where it was found, for the failure message
    steps: tuple[Any, ...]  # how to reach it (see _build)
    field: str
    bounded: bool


def _strip(t: mi.Type) -> mi.Type:
    while isinstance(t, mi.Metadata):
        t = t.type
    return t


def _sites(t: mi.Type, steps: tuple[Any, ...], field: str, owner: str,
           seen: frozenset[type]) -> Iterator[IntSite]:
    """Every integer reachable in `t`: its steps from the request's root and its field name
    as the handler reports it (`a.b[0].c`; a bad key names its mapping)."""
    t = _strip(t)
    if isinstance(t, mi.IntType):
        high = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else None)
        low = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else None)
        ok = high is not None and high <= MAX_INT64 and low is not None and low >= MIN_INT64
        yield IntSite(owner, steps, field or "body", ok)
    elif isinstance(t, mi.UnionType):
        for u in t.types:
            yield from _sites(u, steps, field, owner, seen)
    elif isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType):
        yield from _sites(t.item_type, (*steps, ("item",)), f"{field}[0]", owner, seen)
    elif isinstance(t, mi.TupleType):
        for i, u in enumerate(t.item_types):
            yield from _sites(u, (*steps, ("tuple", i, len(t.item_types))), f"{field}[{i}]",
                              owner, seen)
    elif isinstance(t, mi.DictType):
        yield from _sites(t.key_type, (*steps, ("key",)), field, owner, seen)
        # msgspec names a value by its mapping and `[...]`, whatever the key.
        yield from _sites(t.value_type, (*steps, ("value",)), f"{field}[...]", owner, seen)
    elif isinstance(t, mi.StructType | mi.DataclassType | mi.TypedDictType):
        if t.cls in seen:
            return
        tag: tuple[str, Any] | None = None
        if isinstance(t, mi.StructType) and t.tag_field is not None:
            tag = (t.tag_field, t.tag)
        for f in t.fields:
            name = getattr(f, "encode_name", f.name)
            yield from _sites(f.type, (*steps, ("field", name, tag)),
                              f"{field}.{name}" if field else name,
                              f"{t.cls.__qualname__}.{f.name}", seen | {t.cls})


def _build(steps: tuple[Any, ...], value: Any) -> Any:
    """The smallest JSON document that puts `value` at the end of `steps`: the decoder
    stops at the first bad value, before it asks for missing required fields."""
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    inner = _build(rest, value)
    kind = step[0]
    if kind == "item":
        return [inner]
    if kind == "tuple":
        _, i, n = step
        return [inner if j == i else 0 for j in range(n)]
    if kind == "key":
        return {str(value): []}
    if kind == "value":
        return {"1": inner}  # a key any key type takes
    _, name, tag = step
    doc: dict[str, Any] = {tag[0]: tag[1]} if tag else {}
    doc[name] = inner
    return doc


def request_sites() -> dict[str, list[IntSite]]:
    """The integer sites of every operation's request (by path) and of the other routes'."""
    out: dict[str, list[IntSite]] = {}
    for op in OPERATIONS:
        out[op.path] = list(_sites(mi.type_info(op.request_type), (), "", "", frozenset()))
    for cls in OTHER_REQUESTS:
        out[cls.__qualname__] = list(_sites(mi.type_info(cls), (), "", "", frozenset()))
    return out


SITES = request_sites()


def test_the_walk_reaches_the_known_integers() -> None:
    """The five places an unbounded integer once answered 500 are among those walked."""
    fields = {(path, s.field) for path, sites in SITES.items() for s in sites}
    assert {
        ("/incident/post-mortem/list", "channel_ids[0]"),
        ("/route/upsert", "cases[0].channel_ids[0]"),
        ("/channel/escalate/rule/create", "layers[0].target.schedule_to_role_ids"),
        ("/channel/notify/rule/create", "target.schedule_to_role_ids"),
        ("/safari/automation/rule/list", "team_ids[0]"),
    } <= fields
    assert sum(len(s) for s in SITES.values()) > 200


def test_every_request_integer_is_bounded_to_int64() -> None:
    unbounded = sorted({f"{path}: {s.owner} ({s.field})" for path, sites in SITES.items()
                        for s in sites if not s.bounded})
    assert unbounded == [], ("type them with an id or a bounded integer of api/types.py: "
                             "an int64 column cannot hold more")


def _body(site: IntSite, value: int) -> bytes:
    # Encoded by hand: a dict key must carry the number itself, and msgspec's encoder
    # writes any Python int, however large.
    return msgspec.json.encode(_build(site.steps, value))


# The bodies of the five places named by the robustness issue, in full (a request a client
# would send, not the walk's smallest document).
NAMED: list[tuple[str, str, str]] = [
    ("/incident/post-mortem/list", '{"channel_ids": [%d]}', "channel_ids[0]"),
    ("/route/upsert", '{"integration_id": 1, "cases": [{"if": [{"key": "a", "oper": "IN", '
     '"vals": ["b"]}], "channel_ids": [%d]}], "default": {"channel_ids": []}}',
     "cases[0].channel_ids[0]"),
    ("/channel/escalate/rule/create", '{"channel_id": 1, "template_id": "' + "a" * 24 + '", '
     '"rule_name": "r", "layers": [{"target": {"schedule_to_role_ids": {"%d": [0]}}}]}',
     "layers[0].target.schedule_to_role_ids"),
    ("/channel/notify/rule/create", '{"channel_id": 1, "rule_name": "r", "events": ["i_new"], '
     '"target": {"schedule_to_role_ids": {"%d": [0]}}}', "target.schedule_to_role_ids"),
    ("/safari/automation/rule/list", '{"team_ids": [%d]}', "team_ids[0]"),
]


async def _post(api: Api, path: str, body: bytes, key: str) -> Any:
    response = await api.client.post(path, params={"app_key": key}, content=body,
                                     headers={"content-type": "application/json"})
    return response


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "template", "field"), NAMED, ids=[n[0] for n in NAMED])
async def test_the_named_places_refuse_numbers_beyond_int64(
        api: Api, owner: Person, path: str, template: str, field: str) -> None:
    for value in TOO_BIG:
        response = await _post(api, path, (template % value).encode(), owner.key)
        body = response.json()
        assert response.status_code == 400, (path, value, body)
        assert body["error"]["code"] == "InvalidParameter", body
        assert field in body["error"]["message"], body


@pytest.mark.anyio
async def test_every_request_integer_refuses_numbers_beyond_int64(
        api: Api, owner: Person) -> None:
    """2^63 and 2^64 at every integer the walk reaches, in every operation: a 400 naming
    the field, never a 500."""
    wrong: list[str] = []
    for op in OPERATIONS:
        for site in SITES[op.path]:
            for value in TOO_BIG:
                response = await _post(api, op.path, _body(site, value), owner.key)
                error = response.json().get("error") or {}
                if (response.status_code != 400 or error.get("code") != "InvalidParameter"
                        or site.field not in error.get("message", "")):
                    wrong.append(f"{op.path} {site.field}={value}: {response.status_code} "
                                 f"{error}")
    assert wrong == []
