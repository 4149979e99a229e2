"""Rules of inhibit, silence and drop rules: checked and compiled when written (a bad filter
is a 400 naming its path, and nothing is written), kept per channel, read back as the
reference's records; every write bumps the channel's `noise_version` so ingestion in every
process recompiles, and an inhibit rule's source index is rebuilt in the same transaction.

Also the hot helpers ingestion calls (`rules_for_sync`, `count_drop_sync`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW
from dutyline.channel import service as channel_service
from dutyline.channel.noise import repository as repo
from dutyline.channel.noise.compiled import (
    CACHE,
    EMPTY,
    SOURCE_FRESH_S,
    ChannelRules,
    InhibitRule,
    SilenceRule,
    compile_rows,
    equals_reader,
)
from dutyline.channel.noise.schemas import (
    InhibitRuleItem,
    OnceWindow,
    QuickSilenceRequest,
    RuleCreateResponse,
    RuleItem,
    SilenceRuleItem,
    UnsubscribeRuleItem,
)
from dutyline.channel.noise.schemas import RuleFields as RuleFields  # what the writes take
from dutyline.kit.filters import (
    MAX_CONDITIONS,
    Filter,
    FilterError,
    compile_filters,
    filters_to_builtins,
    validate_key,
)
from dutyline.kit.ids import hex_id
from dutyline.kit.timefilters import LocalDays, compile_time_filters
from dutyline.platform.calendar import service as calendars

__all__ = ["SOURCE_FRESH_S", "ChannelRules", "InhibitRule", "LocalDays", "QuickSilenceRequest",
           "RuleCreateResponse", "SilenceRule", "count_drop_sync", "local_days_sync",
           "rules_for_sync"]

INHIBIT, SILENCE, DROP = "inhibit", "silence", "drop"
# The reference's "made from no incident" (its records show 24 zeros).
NO_INCIDENT = "0" * 24
# The span a recurring silence's record shows when it has none of its own: 2100-01-01.
RECURRING_UNTIL = 4_102_444_800
_KIND_NAMES = {INHIBIT: "inhibit rule", SILENCE: "silence rule", DROP: "drop rule"}
_encode = msgspec.json.encode
_decode_config = msgspec.json.Decoder(dict[str, Any])


def _checked_filters(value: Any, path: str, *, required: bool) -> list[list[dict[str, Any]]]:
    try:
        compiled = compile_filters(value, path=path)
    except FilterError as exc:
        raise errors.invalid(exc.path, exc.message) from None
    if required and compiled.matches_everything:
        raise errors.invalid(path, "must have at least one condition")
    return filters_to_builtins(value)


def _compiled(value: Any) -> Filter:
    return compile_filters(value)


def _channel_sync(conn: Connection, actor: Actor, channel_id: int) -> Any:
    """A live channel the actor sees, else not found (other accounts' ids too)."""
    return channel_service.require_visible_sync(conn, actor, channel_id)


async def _channel(conn: AsyncConnection, actor: Actor, channel_id: int) -> Any:
    return await conn.run_sync(_channel_sync, actor, channel_id)


def _rule_sync(conn: Connection, actor: Actor, kind: str, channel_id: int,
               rule_id: str) -> Any:
    _channel_sync(conn, actor, channel_id)
    row = repo.get_sync(conn, actor.account_id, channel_id, kind, rule_id)
    if row is None:
        raise errors.not_found(_KIND_NAMES[kind], rule_id)
    return row


async def _rule(conn: AsyncConnection, actor: Actor, kind: str, channel_id: int,
                rule_id: str) -> Any:
    return await conn.run_sync(_rule_sync, actor, kind, channel_id, rule_id)


# -- records --------------------------------------------------------------------------------


def record(row: Any, now_s: int, local_days: LocalDays | None = None) -> RuleItem:
    """The reference's record of a rule; a silence rule's `is_effective` reads its recurring
    windows through `local_days` (the account's time zone and calendars)."""
    config = _decode_config.decode(row.config)
    common: dict[str, Any] = {
        "account_id": row.account_id, "channel_id": row.channel_id, "priority": row.priority,
        "rule_name": row.rule_name, "description": row.description, "status": row.status,
        "rule_id": row.rule_id, "updated_by": row.updated_by, "created_at": row.created_at,
        "updated_at": row.updated_at, "dropped_cnt": row.dropped_cnt,
    }
    if row.kind == INHIBIT:
        return InhibitRuleItem(
            **common, source_filters=config.get("source_filters") or [],
            target_filters=config.get("target_filters") or [],
            equals=config.get("equals") or [],
            is_directly_discard=bool(config.get("is_directly_discard")),
        )
    if row.kind == SILENCE:
        once = config.get("time_filter")
        compiled = compile_rows(0, [row]).silence.get(row.rule_id)
        return SilenceRuleItem(
            **common, time_filters=config.get("time_filters") or [],
            time_filter=OnceWindow(**once) if once else OnceWindow(
                start_time=max(1, row.created_at), end_time=RECURRING_UNTIL),
            filters=config.get("filters") or [],
            is_directly_discard=bool(config.get("is_directly_discard")),
            is_effective=row.status == "enabled" and compiled is not None
            and compiled.effective(now_s, local_days),
            from_incident_id=config.get("from_incident_id") or NO_INCIDENT,
        )
    return UnsubscribeRuleItem(**common, filters=config.get("filters") or [])


@reads_sync(CHANNEL_VIEW)
def list_rules_sync(conn: Connection, actor: Actor, *, kind: str,
                    channel_id: int) -> list[RuleItem]:
    _channel_sync(conn, actor, channel_id)
    rows = repo.list_rules_sync(conn, actor.account_id, channel_id, kind)
    local_days = _local_days_sync(conn, actor, rows)
    return [record(r, actor.now_s, local_days) for r in rows]


@reads_sync(CHANNEL_VIEW)
def rule_info_sync(conn: Connection, actor: Actor, *, kind: str, channel_id: int,
                   rule_id: str) -> RuleItem:
    row = _rule_sync(conn, actor, kind, channel_id, rule_id)
    return record(row, actor.now_s, _local_days_sync(conn, actor, [row]))


def _calendar_ids(config: dict[str, Any]) -> set[str]:
    return {w["cal_id"] for w in config.get("time_filters") or () if w.get("cal_id")}


def _local_days_sync(conn: Connection, actor: Actor, rows: Sequence[Any]) -> LocalDays | None:
    """What silence rules' recurring windows are read with now, when any rule has some: the
    account's time zone and calendars, read when a window first asks."""
    if not any(_decode_config.decode(r.config).get("time_filters")
               for r in rows if r.kind == SILENCE):
        return None
    return calendars.local_days_sync(conn, actor.account_id)


# -- writes ---------------------------------------------------------------------------------


def inhibit_config(*, equals: Sequence[str], source_filters: Any, target_filters: Any,
                   is_directly_discard: bool) -> dict[str, Any]:
    for index, path in enumerate(equals):
        try:
            validate_key(path, f"equals[{index}]")
        except FilterError as exc:
            raise errors.invalid(exc.path, exc.message) from None
    return {
        "source_filters": _checked_filters(source_filters, "source_filters", required=True),
        "target_filters": _checked_filters(target_filters, "target_filters", required=True),
        "equals": list(equals), "is_directly_discard": is_directly_discard,
    }


def silence_config(*, time_filters: Any, time_filter: OnceWindow | None, filters: Any,
                   is_directly_discard: bool, from_incident_id: str) -> dict[str, Any]:
    """One-off window (`time_filter`) or recurring windows (`time_filters`). Both together:
    the recurring windows apply within the one-off span (how records show a recurring rule's
    span, so a record sent back as it was read means the same rule)."""
    if time_filter is None and not time_filters:
        raise errors.invalid("time_filter", "give time_filter or time_filters")
    config: dict[str, Any] = {
        "filters": _checked_filters(filters, "filters", required=True),
        "is_directly_discard": is_directly_discard, "time_filters": [],
    }
    if time_filter is not None:
        if time_filter.start_time >= time_filter.end_time:
            raise errors.invalid("time_filter.end_time", "must be after start_time")
        config["time_filter"] = msgspec.to_builtins(time_filter)
    if time_filters:
        try:
            compile_time_filters(time_filters, calendars=True)
        except FilterError as exc:
            raise errors.invalid(exc.path, exc.message) from None
        config["time_filters"] = [_window(w) for w in time_filters]
    if from_incident_id and from_incident_id != NO_INCIDENT:
        if len(from_incident_id) != 24 or any(c not in "0123456789abcdefABCDEF"
                                              for c in from_incident_id):
            raise errors.invalid("from_incident_id", "must be an incident id")
        config["from_incident_id"] = from_incident_id.lower()
    return config


def _window(w: dict[str, Any]) -> dict[str, Any]:
    """A recurring window as stored and read back: the calendar keys only when it names one
    (a rule sent back as it was read means the same rule)."""
    window = {"start": w["start"], "end": w["end"], "repeat": list(w.get("repeat") or [])}
    if w.get("cal_id"):
        window.update(cal_id=w["cal_id"], is_off=bool(w.get("is_off")))
    return window


def drop_config(*, filters: Any) -> dict[str, Any]:
    return {"filters": _checked_filters(filters, "filters", required=True)}


async def _create_rule(conn: AsyncConnection, actor: Actor, *, kind: str, channel_id: int,
                      rule_name: str, description: str, priority: int,
                      config: dict[str, Any]) -> tuple[str, str]:
    """A new enabled rule; returns (rule_id, rule_name)."""
    await _channel(conn, actor, channel_id)
    await calendars.check_calendars(conn, actor, cal_ids=_calendar_ids(config))
    if await repo.count_rules(conn, actor.account_id, channel_id, kind) >= \
            repo.MAX_RULES_PER_KIND:
        raise errors.invalid("channel_id",
                             f"at most {repo.MAX_RULES_PER_KIND} {_KIND_NAMES[kind]}s a channel")
    name = _name(rule_name)
    rule_id = hex_id()
    now = actor.now_s
    await repo.insert_rule(conn, {
        "rule_id": rule_id, "account_id": actor.account_id, "channel_id": channel_id,
        "kind": kind, "priority": priority, "rule_name": name, "description": description,
        "status": "enabled", "config": _encode(config).decode(), "dropped_cnt": 0,
        "updated_by": actor.person_id, "created_at": now, "updated_at": now,
    })
    await _changed(conn, actor, channel_id, kind, rule_id, config if kind == INHIBIT else None)
    return rule_id, name


async def _update_rule(conn: AsyncConnection, actor: Actor, *, kind: str, channel_id: int,
                      rule_id: str, rule_name: str, description: str | msgspec.UnsetType,
                      priority: int | msgspec.UnsetType,
                      config: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """A partial update: `description` and `priority` UNSET keep their stored values, and
    `config` makes the new settings from the stored ones (see the *_update helpers)."""
    row = await _rule(conn, actor, kind, channel_id, rule_id)
    new_config = config(_decode_config.decode(row.config))
    await calendars.check_calendars(conn, actor, cal_ids=_calendar_ids(new_config))
    await repo.update_rule(conn, actor.account_id, channel_id, kind, row.rule_id, {
        "rule_name": _name(rule_name),
        "description": row.description if description is msgspec.UNSET else description,
        "priority": row.priority if priority is msgspec.UNSET else priority,
        "config": _encode(new_config).decode(), "updated_by": actor.person_id,
        "updated_at": actor.now_s,
    })
    live = kind == INHIBIT and row.status == "enabled"
    await _changed(conn, actor, channel_id, kind, row.rule_id, new_config if live else None)


def _given(value: Any, stored: Any) -> Any:
    return stored if value is msgspec.UNSET else value


def inhibit_update(*, equals: Sequence[str], source_filters: Any, target_filters: Any,
                   is_directly_discard: bool | msgspec.UnsetType
                   ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The new settings of an inhibit rule: what is UNSET keeps its stored value; an explicit
    null or empty filter is refused, as on create."""
    def make(stored: dict[str, Any]) -> dict[str, Any]:
        return inhibit_config(
            equals=equals,
            source_filters=_given(source_filters, stored.get("source_filters")),
            target_filters=_given(target_filters, stored.get("target_filters")),
            is_directly_discard=bool(_given(is_directly_discard,
                                            stored.get("is_directly_discard"))))
    return make


def silence_update(*, time_filters: Any, time_filter: OnceWindow | msgspec.UnsetType | None,
                   filters: Any, is_directly_discard: bool | msgspec.UnsetType
                   ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The new settings of a silence rule. The window (`time_filter` with `time_filters`) is
    one setting: either given replaces it, neither keeps the stored one."""
    def make(stored: dict[str, Any]) -> dict[str, Any]:
        once, recurring = time_filter, time_filters
        if once is msgspec.UNSET and recurring is msgspec.UNSET:
            stored_once = stored.get("time_filter")
            once = OnceWindow(**stored_once) if stored_once else None
            recurring = stored.get("time_filters") or None
        return silence_config(
            time_filters=None if recurring is msgspec.UNSET else recurring,
            time_filter=None if once is msgspec.UNSET else once,
            filters=_given(filters, stored.get("filters")),
            is_directly_discard=bool(_given(is_directly_discard,
                                            stored.get("is_directly_discard"))),
            from_incident_id=stored.get("from_incident_id") or "")
    return make


def drop_update(*, filters: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def make(stored: dict[str, Any]) -> dict[str, Any]:
        return drop_config(filters=_given(filters, stored.get("filters")))
    return make


async def _delete_rule(conn: AsyncConnection, actor: Actor, *, kind: str, channel_id: int,
                      rule_id: str) -> None:
    row = await _rule(conn, actor, kind, channel_id, rule_id)
    await repo.delete_rule(conn, actor.account_id, channel_id, kind, row.rule_id)
    await _changed(conn, actor, channel_id, kind, row.rule_id, None)


async def _set_status(conn: AsyncConnection, actor: Actor, *, kind: str, channel_id: int,
                     rule_id: str, status: str) -> None:
    """Enable or disable; idempotent (a rule already so is left as it is)."""
    row = await _rule(conn, actor, kind, channel_id, rule_id)
    if row.status == status:
        return
    await repo.update_rule(conn, actor.account_id, channel_id, kind, row.rule_id, {
        "status": status, "updated_by": actor.person_id, "updated_at": actor.now_s,
    })
    config = _decode_config.decode(row.config) if status == "enabled" else None
    await _changed(conn, actor, channel_id, kind, row.rule_id,
                   config if kind == INHIBIT else None)


def _name(rule_name: str) -> str:
    name = rule_name.strip()
    if not name:
        raise errors.invalid("rule_name", "must not be blank")
    return name


# What else an inhibit rule write rebuilds, in the writer's transaction: ingestion's index of
# the rule's sources (incident/ingest/noise.py's, wired by domains.py when a process starts).
# The channel domain knows no subscriber by name.
InhibitIndexer = Callable[[Connection, int, str, InhibitRule | None, int], None]
_inhibit_indexers: list[InhibitIndexer] = []


def on_inhibit_rule_written(fn: InhibitIndexer) -> InhibitIndexer:
    """Register `fn(conn, channel_id, rule_id, rule or None, now_s)`, run (sync) after every
    inhibit rule write; `rule` is None when the rule is gone or disabled."""
    if fn not in _inhibit_indexers:
        _inhibit_indexers.append(fn)
    return fn


# How a silence rule's `from_incident_id` is resolved within the caller's account: the
# incident domain's check (incident/quick_silence.py, wired by domains.py); with none
# registered, no incident id is taken.
IncidentCheck = Callable[[AsyncConnection, Actor, str], Awaitable[None]]
_incident_checks: list[IncidentCheck] = []


def on_source_incident_check(fn: IncidentCheck) -> IncidentCheck:
    """Register `await fn(conn, actor, incident_id)`, which raises when the caller cannot
    see that incident."""
    if fn not in _incident_checks:
        _incident_checks.append(fn)
    return fn


async def check_source_incident(conn: AsyncConnection, actor: Actor, incident_id: str) -> None:
    if not _incident_checks:
        raise errors.not_found("incident", incident_id)
    for check in _incident_checks:
        await check(conn, actor, incident_id)


async def _changed(conn: AsyncConnection, actor: Actor, channel_id: int, kind: str,
                   rule_id: str, inhibit_config: dict[str, Any] | None) -> None:
    """After a write: every process recompiles; an inhibit rule's source index is rebuilt
    (emptied when the rule is gone or disabled), in this same transaction."""
    await repo.bump_version(conn, actor.account_id, channel_id, actor.now_s)
    if kind != INHIBIT:
        return
    if not _inhibit_indexers:  # an inhibit rule with a stale source index would misjudge
        raise RuntimeError("no inhibit source index is registered (domains.load_tasks)")
    rule = None
    if inhibit_config is not None:
        rule = InhibitRule(
            rule_id, _compiled(inhibit_config["source_filters"]),
            _compiled(inhibit_config["target_filters"]),
            tuple(equals_reader(p) for p in inhibit_config["equals"]),
            bool(inhibit_config["is_directly_discard"]),
        )
    for indexer in _inhibit_indexers:
        await conn.run_sync(indexer, channel_id, rule_id, rule, actor.now_s)


@writes("/incident/silence/quick", CHANNEL_MANAGE, targets=lambda created: [created[0]])
async def quick_silence(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                        incident_id: str, title: str, labels: dict[str, Any], minutes: int,
                        rule_name: str) -> tuple[str, str]:
    """A one-off silence of alerts like an incident's (its labels, else its title) from now
    for `minutes`, remembered as made from that incident."""
    conditions = [{"key": f"labels.{k}", "oper": "IN", "vals": [str(v)]}
                  for k, v in sorted(labels.items()) if isinstance(v, str | int | float)]
    if not conditions:
        conditions = [{"key": "title", "oper": "IN", "vals": [title[:1024]]}]
    config = silence_config(
        time_filters=None,
        time_filter=OnceWindow(start_time=actor.now_s, end_time=actor.now_s + minutes * 60),
        filters=[conditions[:MAX_CONDITIONS]], is_directly_discard=False,
        from_incident_id=incident_id,
    )
    name = rule_name.strip() or f"Quick silence {incident_id[-6:]}"
    return await _create_rule(conn, actor, kind=SILENCE, channel_id=channel_id,
                             rule_name=name[:39], description=f"{minutes} min from incident "
                             f"{incident_id}", priority=0, config=config)


# -- the guarded writes of each kind -----------------------------------------------------------
# The kinds share the rules above, but each write is an operation of its own for the
# permission check and the audit log (/channel/silence/rule/delete is not an inhibit rule's).


class CreateRule(Protocol):
    def __call__(self, conn: AsyncConnection, actor: Actor, *, channel_id: int,
                 rule_name: str, description: str, priority: int,
                 config: dict[str, Any]) -> Awaitable[tuple[str, str]]: ...


class UpdateRule(Protocol):
    def __call__(self, conn: AsyncConnection, actor: Actor, *, channel_id: int, rule_id: str,
                 rule_name: str, description: str | msgspec.UnsetType,
                 priority: int | msgspec.UnsetType,
                 config: Callable[[dict[str, Any]], dict[str, Any]]) -> Awaitable[None]: ...


class RuleAction(Protocol):
    def __call__(self, conn: AsyncConnection, actor: Actor, *, channel_id: int,
                 rule_id: str) -> Awaitable[None]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class KindWrites:
    """One kind's writes, each requiring channel management and audited with the rule's id
    under its own operation (`<prefix>/create`, ...)."""

    create: CreateRule
    update: UpdateRule
    delete: RuleAction
    enable: RuleAction
    disable: RuleAction


def _kind_writes(kind: str, prefix: str) -> KindWrites:
    @writes(f"{prefix}/create", CHANNEL_MANAGE, inputs=RuleFields,
            targets=lambda created: [created[0]])
    async def create(conn: AsyncConnection, actor: Actor, *, channel_id: int, rule_name: str,
                     description: str, priority: int,
                     config: dict[str, Any]) -> tuple[str, str]:
        if kind == SILENCE and config.get("from_incident_id"):
            # The incident it was made from is one the caller sees (another account's: not
            # found).
            await check_source_incident(conn, actor, config["from_incident_id"])
        return await _create_rule(conn, actor, kind=kind, channel_id=channel_id,
                                 rule_name=rule_name, description=description,
                                 priority=priority, config=config)

    @writes(f"{prefix}/update", CHANNEL_MANAGE, inputs=RuleFields)
    async def update(conn: AsyncConnection, actor: Actor, *, channel_id: int, rule_id: str,
                     rule_name: str, description: str | msgspec.UnsetType,
                     priority: int | msgspec.UnsetType,
                     config: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        actor.note_audit_targets(rule_id)
        await _update_rule(conn, actor, kind=kind, channel_id=channel_id, rule_id=rule_id,
                          rule_name=rule_name, description=description, priority=priority,
                          config=config)

    @writes(f"{prefix}/delete", CHANNEL_MANAGE)
    async def delete(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                     rule_id: str) -> None:
        actor.note_audit_targets(rule_id)
        await _delete_rule(conn, actor, kind=kind, channel_id=channel_id, rule_id=rule_id)

    def status_change(verb: str, status: str) -> RuleAction:
        @writes(f"{prefix}/{verb}", CHANNEL_MANAGE)
        async def change(conn: AsyncConnection, actor: Actor, *, channel_id: int,
                         rule_id: str) -> None:
            actor.note_audit_targets(rule_id)
            await _set_status(conn, actor, kind=kind, channel_id=channel_id, rule_id=rule_id,
                             status=status)
        return change

    return KindWrites(create, update, delete, status_change("enable", "enabled"),
                      status_change("disable", "disabled"))


INHIBIT_RULES = _kind_writes(INHIBIT, "/channel/inhibit/rule")
SILENCE_RULES = _kind_writes(SILENCE, "/channel/silence/rule")
DROP_RULES = _kind_writes(DROP, "/channel/unsubscribe/rule")
WRITES = {INHIBIT: INHIBIT_RULES, SILENCE: SILENCE_RULES, DROP: DROP_RULES}


async def silence_rules_using_calendar(conn: AsyncConnection, account_id: int,
                                       cal_id: str) -> list[str]:
    """Silence rules whose windows name the calendar (its delete is refused while any do)."""
    return [f"silence rule {r.rule_name} ({r.rule_id})"
            for r in await repo.rules_naming(conn, account_id, SILENCE, f'"cal_id":"{cal_id}"')]


# -- hot path (ingestion, sync) ---------------------------------------------------------------


def rules_for_sync(conn: Connection, channel_id: int, version: int) -> ChannelRules:
    """The channel's enabled rules compiled, from the process cache when `version` (the
    channel's noise_version, read with its settings) is the cached one."""
    found = CACHE.get(channel_id, version)
    if found is not None:
        return found
    rows = repo.enabled_rules_sync(conn, channel_id)
    rules = compile_rows(version, rows) if rows else dataclasses.replace(EMPTY, version=version)
    CACHE.put(channel_id, rules)
    return rules


def local_days_sync(conn: Connection, account_id: int) -> LocalDays:
    """What ingestion reads silence windows with: the account's time zone and calendars,
    read only when a window is first evaluated."""
    return calendars.local_days_sync(conn, account_id)


def count_drop_sync(conn: Connection, rule_id: str) -> None:
    """One more alert dropped by the rule (not stored)."""
    repo.count_drop_sync(conn, rule_id)
