"""Routes (reference RouteItem, UpsertRouteRequest): a shared integration's ordered cases, each
an AND list of conditions (`if`, the filter forms of kit/filters) and its channels, with a
`default`. At ingest, after the pipeline and enrichment, the cases are tried top to bottom:
a matching case dispatches the alert to its channels and stops the walk, unless it has
`fallthrough: true`, which goes on to the next cases (so an alert can land in several
channels). A case's channels are its `channel_ids` (`routing_mode: standard`, the default) or,
with `routing_mode: name_mapping`, the channel whose name equals the value of the label
`name_mapping_label` (`labels.service` or `service`; compared as channel names are, without
case). When the matched cases yield no live, enabled channel, `default`'s channels take the
alert; failing those, the integration's own channel. Writes honour `version` (optimistic
concurrency: a stale one is a 400). Each save is kept as a version (the newest HISTORY_KEPT
of each integration), read back by /route/history/list; `preview` answers where an alert
would go under a proposed route, or the current one, storing nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import INTEGRATION_MANAGE, INTEGRATION_VIEW
from dutyline.api.types import Id, Int64, NonNegInt64
from dutyline.channel import service as channels
from dutyline.channel.integration import service as integrations
from dutyline.channel.route import repository as repo
from dutyline.db.per_integration import saved_values
from dutyline.kit.filters import Filter, FilterError, compile_filters

MAX_CASES = 100
HISTORY_KEPT = 100
DEFAULT_CASE = "default"  # a preview's matched case when the default's channels take the alert
_LABEL = re.compile(r"(labels\.)?[A-Za-z_][A-Za-z0-9_.\-]{0,127}")
_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(dict[str, Any])


class RouteCase(msgspec.Struct, kw_only=True):
    if_: list[Any] = msgspec.field(name="if", default_factory=list)
    # null in the reference's name_mapping example; stored and shown as [].
    channel_ids: list[Id] | None = None
    fallthrough: bool = False
    routing_mode: str = ""
    name_mapping_label: str = ""


class RouteSection(msgspec.Struct, kw_only=True):
    name: str
    position: Int64  # checked against the cases by the service


class RouteDefault(msgspec.Struct, kw_only=True):
    channel_ids: list[Id] = msgspec.field(default_factory=list)


class RouteSpec(msgspec.Struct, kw_only=True):
    """An integration's route as `upsert` takes it (its keyword arguments, checked on entry
    with these limits; /route/upsert's request is built from it)."""

    integration_id: Id
    cases: Annotated[list[RouteCase], msgspec.Meta(max_length=MAX_CASES)] | None = None
    sections: Annotated[list[RouteSection], msgspec.Meta(max_length=100)] | None = None
    default: RouteDefault | None = None
    version: NonNegInt64 | None = None


class RouteItem(msgspec.Struct, kw_only=True):
    integration_id: int
    cases: list[RouteCase]
    sections: list[RouteSection]
    default: RouteDefault
    status: str
    version: int
    updated_by: int
    creator_id: int
    created_at: int
    updated_at: int


def _filter(conditions: list[Any], path: str) -> Filter:
    if not conditions:
        raise errors.invalid(path, "needs at least one condition")
    try:
        return compile_filters([conditions], path=path)
    except FilterError as exc:
        raise errors.invalid(exc.path.replace(f"{path}[0]", path, 1), exc.message) from None


def _check_case(case: RouteCase, path: str) -> None:
    """Check one case and spell out its defaults as records show them."""
    case.channel_ids = case.channel_ids or []
    if case.routing_mode in ("", "standard"):
        case.routing_mode, case.name_mapping_label = "standard", ""
        if not case.channel_ids:
            raise errors.invalid(f"{path}.channel_ids", "is required")
    elif case.routing_mode == "name_mapping":
        if not _LABEL.fullmatch(case.name_mapping_label):
            raise errors.invalid(f"{path}.name_mapping_label",
                                 "is required with routing_mode name_mapping (a label: "
                                 "labels.service or service)")
        if case.channel_ids:
            raise errors.invalid(f"{path}.channel_ids", "must be empty with routing_mode "
                                 "name_mapping: the label's value names the channel")
    else:
        raise errors.invalid(f"{path}.routing_mode", "must be standard or name_mapping")
    _filter(case.if_, f"{path}.if")


def _label_name(name_mapping_label: str) -> str:
    return name_mapping_label.removeprefix("labels.")


@writes("/route/upsert", INTEGRATION_MANAGE, inputs=RouteSpec)
async def upsert(conn: AsyncConnection, actor: Actor, *, integration_id: int,
                 cases: list[RouteCase] | None, sections: list[RouteSection] | None,
                 default: RouteDefault | None, version: int | None) -> None:
    """Check and store the route of a live integration the actor sees."""
    await integrations.require_live(conn, actor, integration_id=integration_id)
    actor.note_audit_targets(integration_id)
    if cases is None and default is None:
        raise errors.invalid("cases", "give cases or default (or both)")
    cases, sections = cases or [], sections or []
    default = default or RouteDefault()
    if len(cases) > MAX_CASES:
        raise errors.invalid("cases", f"at most {MAX_CASES} cases")
    wanted: set[int] = set(default.channel_ids)
    for i, case in enumerate(cases):
        _check_case(case, f"cases[{i}]")
        wanted.update(case.channel_ids or ())
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        raise errors.invalid("sections", "section names must be unique")
    for i, section in enumerate(sections):
        if not 0 <= section.position <= len(cases):
            raise errors.invalid(f"sections[{i}].position",
                                 f"must be between 0 and {len(cases)}")
    found = await channels.channel_names(conn, actor, sorted(wanted))
    unknown = sorted(c for c in wanted if c not in found or found[c][1] == "deleted")
    if unknown:
        raise errors.invalid("channel_ids", "channels not found: "
                             + ",".join(map(str, unknown)))
    existing = await repo.get(conn, actor.account_id, integration_id)
    if version is not None and existing is not None and version != existing.version:
        raise errors.invalid("version", f"is {version} but the route is at version "
                                        f"{existing.version}; read it again")
    config = {"cases": cases, "sections": sections, "default": default}
    values = saved_values(actor, {"config": _encode(config).decode()}, new=existing is None)
    await repo.save(conn, exists=existing is not None, integration_id=integration_id,
                    values=values)
    await repo.add_version(
        conn, account_id=actor.account_id, integration_id=integration_id,
        version=1 if existing is None else existing.version + 1, config=values["config"],
        updated_by=actor.person_id, updated_at=actor.now_s, keep=HISTORY_KEPT)


def _item(row: Any) -> RouteItem:
    config = msgspec.json.decode(row.config, type=_Config)
    return RouteItem(integration_id=row.integration_id, cases=config.cases,
                     sections=config.sections, default=config.default, status=row.status,
                     version=row.version, updated_by=row.updated_by,
                     creator_id=row.creator_id, created_at=row.created_at,
                     updated_at=row.updated_at)


class _Config(msgspec.Struct, kw_only=True):
    cases: list[RouteCase] = msgspec.field(default_factory=list)
    sections: list[RouteSection] = msgspec.field(default_factory=list)
    default: RouteDefault = msgspec.field(default_factory=RouteDefault)


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def info_sync(conn: Connection, actor: Actor, *, integration_id: int) -> RouteItem | None:
    """The route of a live integration the actor sees; None when it has none."""
    integrations.require_live_sync(conn, actor, integration_id=integration_id)
    row = repo.get_sync(conn, actor.account_id, integration_id)
    return None if row is None else _item(row)


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def list_routes_sync(conn: Connection, actor: Actor, *,
                     integration_ids: list[int]) -> list[RouteItem]:
    return [_item(r) for r in repo.list_for_sync(conn, actor.account_id, integration_ids)]


class RouteVersion(msgspec.Struct, kw_only=True):
    """One saved version of a route: what it was, who saved it and when."""

    integration_id: int
    version: int
    cases: list[RouteCase]
    sections: list[RouteSection]
    default: RouteDefault
    updated_by: int
    updated_at: int


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def history_sync(conn: Connection, actor: Actor, *, integration_id: int, offset: int,
                 limit: int, asc: bool = False) -> tuple[int, list[RouteVersion]]:
    """(total, one page) of the saved versions of a live integration's route, newest first
    unless `asc`."""
    integrations.require_live_sync(conn, actor, integration_id=integration_id)
    total, rows = repo.history_page_sync(conn, actor.account_id, integration_id,
                                         offset=offset, limit=limit, asc=asc)
    items = []
    for r in rows:
        config = msgspec.json.decode(r.config, type=_Config)
        items.append(RouteVersion(
            integration_id=integration_id, version=r.version, cases=config.cases,
            sections=config.sections, default=config.default, updated_by=r.updated_by,
            updated_at=r.updated_at))
    return total, items


# -- ingest (sync, on the push's connection) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Case:
    position: int  # in the route's cases
    when: Filter
    channel_ids: tuple[int, ...]
    label: str  # name_mapping: the label whose value names the channel; "" for standard
    fallthrough: bool


@dataclass(frozen=True, slots=True)
class _Compiled:
    cases: tuple[_Case, ...]
    default: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a route sends an alert: the channels of the cases it matched (in case order),
    and the default's, for when none of those is live. The caller checks liveness."""

    matched: tuple[int, ...]
    default: tuple[int, ...]


_CACHE: dict[int, tuple[int, _Compiled | None]] = {}
_CACHE_MAX = 10_000


def _load(conn: Connection, integration_id: int, version: int | None) -> _Compiled | None:
    if version is None:
        return None
    cached = _CACHE.get(integration_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    row = repo.config_sync(conn, integration_id)
    if row is None:
        return None
    compiled: _Compiled | None
    try:
        compiled = _compile(msgspec.json.decode(row.config, type=_Config), "")
    except errors.ApiError:
        compiled = None
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[integration_id] = (row.version, compiled)
    return compiled


def _compile(config: _Config, path: str) -> _Compiled:
    return _Compiled(
        cases=tuple(_Case(i, _filter(c.if_, f"{path}cases[{i}].if"), tuple(c.channel_ids or ()),
                          _label_name(c.name_mapping_label)
                          if c.routing_mode == "name_mapping" else "", c.fallthrough)
                    for i, c in enumerate(config.cases)),
        default=tuple(config.default.channel_ids))


def _walk(conn: Connection, compiled: _Compiled, account_id: int,
          subject: dict[str, Any]) -> tuple[list[int], tuple[int, ...]]:
    """(the positions of the cases the alert matched, their channels in case order)."""
    positions: list[int] = []
    out: list[int] = []
    for case in compiled.cases:
        if not case.when.matches(subject):
            continue
        positions.append(case.position)
        if case.label:
            value = subject["labels"].get(case.label, "")
            found = repo.channel_named_sync(conn, account_id, value) if value else None
            if found is not None:
                out.append(found)
        else:
            out.extend(case.channel_ids)
        if not case.fallthrough:
            break
    return positions, tuple(dict.fromkeys(out))


def plan_sync(conn: Connection, integration_id: int, *, account_id: int, version: int | None,
              subject: dict[str, Any]) -> Plan | None:
    """The channels the integration's route (at `version`) gives an alert; None when the
    integration has no route."""
    compiled = _load(conn, integration_id, version)
    if compiled is None:
        return None
    _, matched = _walk(conn, compiled, account_id, subject)
    return Plan(matched=matched, default=compiled.default)


# -- preview (a read: nothing is stored) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Routing:
    """Where a route sends one alert: the positions (from 0, as strings) of the cases it
    matched, DEFAULT_CASE when the default's channels take it, and the live, enabled
    channels it lands in (the integration's own channel when no case or default gives one)."""

    matched_cases: list[str]
    channel_ids: list[int]


class Proposal:
    """A route checked as a save checks it (channels not required to exist), compiled."""

    def __init__(self, compiled: _Compiled) -> None:
        self.compiled = compiled


def propose(*, cases: list[RouteCase] | None, default: RouteDefault | None,
            path: str = "route.") -> Proposal | None:
    """A proposed route to preview alerts against; None when it gives neither cases nor a
    default (the integration's current route is meant)."""
    if not cases and default is None:
        return None
    cases = cases or []
    if len(cases) > MAX_CASES:
        raise errors.invalid(f"{path}cases", f"at most {MAX_CASES} cases")
    for i, case in enumerate(cases):
        _check_case(case, f"{path}cases[{i}]")
    return Proposal(_compile(_Config(cases=cases, default=default or RouteDefault()), path))


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def routing_sync(conn: Connection, actor: Actor, *, integration_id: int,
                 subject: dict[str, Any], proposal: Proposal | None) -> Routing:
    """Where an alert of the account's integration (what filters read of it: `subject`)
    goes under `proposal`, or under the integration's current route when None."""
    compiled: _Compiled | None
    if proposal is not None:
        compiled = proposal.compiled
    else:
        row = repo.get_sync(conn, actor.account_id, integration_id)
        compiled = None if row is None else _load(conn, integration_id, row.version)
    if compiled is not None:
        positions, matched = _walk(conn, compiled, actor.account_id, subject)
        labels = [str(p) for p in positions]
        if live := _enabled(conn, actor, matched):
            return Routing(matched_cases=labels, channel_ids=live)
        if live := _enabled(conn, actor, compiled.default):
            return Routing(matched_cases=[*labels, DEFAULT_CASE], channel_ids=live)
    else:
        labels = []
    own = repo.own_channel_sync(conn, actor.account_id, integration_id)
    return Routing(matched_cases=labels, channel_ids=[own] if own else [])


def _enabled(conn: Connection, actor: Actor, channel_ids: tuple[int, ...]) -> list[int]:
    if not channel_ids:
        return []
    found = channels.channel_names_sync(conn, actor, list(channel_ids))
    return [c for c in channel_ids if c in found and found[c][1] == "enabled"]
