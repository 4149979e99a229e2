"""Routes (reference RouteItem, UpsertRouteRequest): a shared integration's ordered cases, each
an AND list of conditions (`if`, the filter forms of kit/filters) and target `channel_ids`,
with a `default`. At ingest, after the pipeline and enrichment, the first case that matches
and names a live, enabled channel decides where the alert goes (its first such channel);
otherwise `default`'s first live channel; otherwise the integration's own channel.

Limits of this version, refused with a 400 naming the field rather than half-served:
`routing_mode: name_mapping`, and an alert delivered to several channels at once (a case with
`fallthrough: true` goes on to the next case only when its own channels are all gone, which
is the single-channel reading of the reference). Writes honour `version` (optimistic
concurrency: a stale one is a 400)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.channel import service as channels
from dutyline.enrichment.route import repository as repo
from dutyline.enrichment.stamps import saved_values
from dutyline.kit.filters import Filter, FilterError, compile_filters

MAX_CASES = 100
_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(dict[str, Any])


class RouteCondition(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    key: str
    oper: str
    vals: list[str]


class RouteCase(msgspec.Struct, kw_only=True):
    if_: list[Any] = msgspec.field(name="if", default_factory=list)
    channel_ids: list[int] = msgspec.field(default_factory=list)
    fallthrough: bool = False
    routing_mode: str = ""
    name_mapping_label: str = ""


class RouteSection(msgspec.Struct, kw_only=True):
    name: str
    position: int


class RouteDefault(msgspec.Struct, kw_only=True):
    channel_ids: list[int] = msgspec.field(default_factory=list)


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


async def upsert(conn: AsyncConnection, actor: Actor, *, integration_id: int,
                 cases: list[RouteCase] | None, sections: list[RouteSection] | None,
                 default: RouteDefault | None, version: int | None) -> None:
    """Check and store an integration's route (the caller checked the integration)."""
    if cases is None and default is None:
        raise errors.invalid("cases", "give cases or default (or both)")
    cases, sections = cases or [], sections or []
    default = default or RouteDefault()
    if len(cases) > MAX_CASES:
        raise errors.invalid("cases", f"at most {MAX_CASES} cases")
    wanted: set[int] = set(default.channel_ids)
    for i, case in enumerate(cases):
        path = f"cases[{i}]"
        if case.routing_mode not in ("", "standard"):
            raise errors.invalid(f"{path}.routing_mode",
                                 "only standard routing is supported (name_mapping: not yet)")
        case.routing_mode = "standard"  # the reference's default, spelled out in records
        if not case.channel_ids:
            raise errors.invalid(f"{path}.channel_ids", "is required")
        _filter(case.if_, f"{path}.if")
        wanted.update(case.channel_ids)
    names = [s.name for s in sections]
    if len(set(names)) != len(names):
        raise errors.invalid("sections", "section names must be unique")
    for i, section in enumerate(sections):
        if not 0 <= section.position <= len(cases):
            raise errors.invalid(f"sections[{i}].position",
                                 f"must be between 0 and {len(cases)}")
    found = await channels.channel_names(conn, actor.account_id, sorted(wanted))
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


async def info(conn: AsyncConnection, actor: Actor, *, integration_id: int) -> RouteItem | None:
    row = await repo.get(conn, actor.account_id, integration_id)
    return None if row is None else _item(row)


async def list_routes(conn: AsyncConnection, actor: Actor, *,
                      integration_ids: list[int]) -> list[RouteItem]:
    if not integration_ids:
        return []
    return [_item(r) for r in await repo.list_for(conn, actor.account_id, integration_ids)]


# -- ingest (sync, on the push's connection) ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Compiled:
    cases: tuple[tuple[Filter, tuple[int, ...]], ...]
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
    config = msgspec.json.decode(row.config, type=_Config)
    compiled: _Compiled | None
    try:
        compiled = _Compiled(
            cases=tuple((_filter(c.if_, f"cases[{i}].if"), tuple(c.channel_ids))
                        for i, c in enumerate(config.cases)),
            default=tuple(config.default.channel_ids))
    except errors.ApiError:
        compiled = None
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[integration_id] = (row.version, compiled)
    return compiled


def candidates_sync(conn: Connection, integration_id: int, *, version: int | None,
                    subject: dict[str, Any]) -> list[int] | None:
    """The channels an alert may go to, best first (matched cases in order, then the
    default); None when the integration has no route. The caller takes the first live one."""
    compiled = _load(conn, integration_id, version)
    if compiled is None:
        return None
    out: list[int] = []
    for when, channel_ids in compiled.cases:
        if when.matches(subject):
            out.extend(channel_ids)
    out.extend(compiled.default)
    return list(dict.fromkeys(out))
