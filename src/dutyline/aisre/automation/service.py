"""Rules of automation rules: scope, who may manage them, cron, the three triggers, and the
schedule kept in step with the rule in the same transaction.

Access: a personal rule (team 0) is managed by its creator only; a team rule by owners,
admins and the team's members (aisre/scope.py, the rule MCP servers and A2A agents share).
Seeing follows the contract's listing rule: owners/admins all, others their own rules and their
teams'. A rule the caller cannot see is not found; one they see but cannot manage is 403.
The contract gives automation no permission: each write is audited (`@writes` with none) and
admits any member, the rule's scope deciding the rest."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.aisre.automation import repository as repo
from dutyline.aisre.automation import tokens
from dutyline.aisre.automation.schemas import AutomationRuleItem, RuleListResponse
from dutyline.aisre.runner import service as runner_service
from dutyline.aisre.scope import (
    in_team_scope,
    in_team_scope_sync,
    preload_teams,
    require_environment_use,
)
from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.channel import service as channel_service
from dutyline.kit.cron import CronInvalid, check_timezone, normalize_fixed_minute
from dutyline.kit.ids import prefixed_id
from dutyline.platform.team import service as team_service
from dutyline.work import scheduler

SCHEDULE_KIND = "automation.rule"
SCHEDULE = "schedule"
HTTP_POST = "http_post"
ONCALL = "oncall_incident"
NAME_MAX = 255
PROMPT_MAX = 20_000


@dataclass(frozen=True)
class RuleChanges:
    """What an update (or a create) asks for; None: leave unchanged (update) / default."""

    name: str | None = None
    team_id: int | None = None
    enabled: bool | None = None
    cron_expr: str | None = None
    timezone: str | None = None
    schedule_trigger_enabled: bool | None = None
    prompt: str | None = None
    environment_kind: str | None = None
    environment_id: str | None = None
    http_post_trigger_enabled: bool | None = None
    rotate_http_post_trigger_token: bool | None = None
    oncall_incident_trigger_enabled: bool | None = None
    oncall_incident_channel_ids: list[int] | None = None
    oncall_incident_severities: list[str] | None = None

    @classmethod
    def of(cls, request: Any) -> RuleChanges:
        """From a request struct carrying fields of the same names."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{n: getattr(request, n) for n in names if hasattr(request, n)})


# --- access ---------------------------------------------------------------------------------


async def can_manage(actor: Actor, row: Any) -> bool:
    if row.team_id == 0:
        return bool(row.owner_id == actor.person_id)
    return await in_team_scope(actor, row.team_id)


def can_see_sync(conn: Connection, actor: Actor, row: Any) -> bool:
    """Whether the actor sees the rule (its creator, an admin, or a member of its team),
    inside a sync read service."""
    if actor.is_admin or row.owner_id == actor.person_id:
        return True
    return row.team_id != 0 and row.team_id in actor.team_ids_sync(conn)


def can_manage_sync(conn: Connection, actor: Actor, row: Any) -> bool:
    """`can_manage` inside a sync read service."""
    if row.team_id == 0:
        return bool(row.owner_id == actor.person_id)
    return in_team_scope_sync(conn, actor, row.team_id)


def visible_rule_sync(conn: Connection, actor: Actor, rule_id: str) -> Row[Any]:
    row = repo.get_rule_sync(conn, actor.account_id, rule_id)
    if row is None or not can_see_sync(conn, actor, row):
        raise errors.not_found("automation rule", rule_id)
    return row


async def visible_rule(conn: AsyncConnection, actor: Actor, rule_id: str) -> Row[Any]:
    await preload_teams(actor)
    return await conn.run_sync(visible_rule_sync, actor, rule_id)


async def managed_rule(conn: AsyncConnection, actor: Actor, rule_id: str) -> Row[Any]:
    row = await visible_rule(conn, actor, rule_id)
    if not await can_manage(actor, row):
        raise errors.AccessDenied()
    return row


# --- operations -----------------------------------------------------------------------------


@writes("/safari/automation/rule/create", targets=lambda item: [item.rule_id])
async def create_rule(
    conn: AsyncConnection, actor: Actor, *, name: str, prompt: str, cron_expr: str,
    changes: RuleChanges,
) -> AutomationRuleItem:
    values: dict[str, Any] = {
        "name": _name(name),
        "prompt": _prompt(prompt),
        "cron_expr": _cron(cron_expr),
        "timezone": _timezone(changes.timezone or "UTC"),
    }
    team_id = changes.team_id or 0
    if team_id and not await team_service.existing_team_ids(conn, actor, [team_id]):
        raise errors.invalid("team_id", "no such team")
    kind = changes.environment_kind or ""
    environment_id = (changes.environment_id or "").strip()
    await _check_environment(conn, actor, kind, environment_id)
    now = actor.now_ms
    rule_id = prefixed_id("arule")
    await repo.insert_rule(conn, {
        **values, "rule_id": rule_id, "account_id": actor.account_id, "team_id": team_id,
        "owner_id": actor.person_id, "enabled": bool(changes.enabled),
        "environment_kind": kind, "environment_id": environment_id,
        "created_at": now, "updated_at": now,
    })
    await _add_trigger(conn, actor, rule_id, SCHEDULE, enabled=(
        True if changes.schedule_trigger_enabled is None else changes.schedule_trigger_enabled))
    token = None
    if changes.http_post_trigger_enabled:
        token = tokens.new_token()
        await _add_trigger(conn, actor, rule_id, HTTP_POST,
                           values={"token_hash": tokens.token_hash(token)})
    if changes.oncall_incident_trigger_enabled:
        await _add_trigger(conn, actor, rule_id, ONCALL,
                           values=await _incident_filter(conn, actor, changes, None))
    elif changes.oncall_incident_channel_ids or changes.oncall_incident_severities:
        raise errors.invalid("oncall_incident_trigger_enabled", "must be true to set its filters")
    row = await repo.get_rule(conn, actor.account_id, rule_id)
    return await _synced_record(conn, actor, row, token=token)


@writes("/safari/automation/rule/update", targets=lambda item: [item.rule_id])
async def update_rule(
    conn: AsyncConnection, actor: Actor, *, rule_id: str, changes: RuleChanges
) -> AutomationRuleItem:
    row = await managed_rule(conn, actor, rule_id)
    values: dict[str, Any] = {}
    c = changes
    if c.team_id is not None and c.team_id != row.team_id:
        raise errors.invalid("team_id", "the scope of a rule cannot change after creation")
    if c.name is not None:
        values["name"] = _name(c.name)
    if c.prompt is not None:
        values["prompt"] = _prompt(c.prompt)
    if c.cron_expr is not None:
        values["cron_expr"] = _cron(c.cron_expr)
    if c.timezone is not None:
        values["timezone"] = _timezone(c.timezone)
    if c.enabled is not None:
        values["enabled"] = c.enabled
    kind = row.environment_kind if c.environment_kind is None else c.environment_kind
    environment_id = row.environment_id if c.environment_id is None else c.environment_id.strip()
    if kind == "byoc" and c != RuleChanges(enabled=False):
        # Any change to a rule that runs on a worknode (its prompt says what the runner
        # executes) needs the right to use worknodes; turning it off does not.
        require_environment_use(actor)
    if c.environment_kind is not None or c.environment_id is not None:
        # Only when the update sets the environment: a worknode deleted since must not block
        # unrelated changes (disabling the rule); its runs fail clearly instead.
        await _check_environment(conn, actor, kind, environment_id,
                                 named_id=c.environment_id is not None)
    values.update(environment_kind=kind, environment_id=environment_id)
    triggers = (await repo.triggers_of(conn, [row.rule_id]))[row.rule_id]
    now = actor.now_ms
    if c.schedule_trigger_enabled is not None:
        await _set_enabled(conn, actor, row.rule_id, triggers, SCHEDULE,
                           c.schedule_trigger_enabled)
    token = await _update_http_trigger(conn, actor, row.rule_id, triggers, c)
    await _update_incident_trigger(conn, actor, row.rule_id, triggers, c)
    values["updated_at"] = now
    await repo.update_rule(conn, actor.account_id, row.rule_id, values)
    fresh = await repo.get_rule(conn, actor.account_id, row.rule_id)
    return await _synced_record(conn, actor, fresh, token=token)


def get_rule_sync(conn: Connection, actor: Actor, *, rule_id: str) -> AutomationRuleItem:
    row = visible_rule_sync(conn, actor, rule_id)
    return records_sync(conn, actor, [row])[0]


def list_rules_sync(
    conn: Connection, actor: Actor, *, team_ids: list[int] | None, query: str,
    offset: int, limit: int,
) -> RuleListResponse:
    teams = frozenset() if actor.is_admin else actor.team_ids_sync(conn)
    total, rows = repo.list_rules_sync(
        conn, actor.account_id, all_rules=actor.is_admin, person_id=actor.person_id,
        team_ids=teams, only_team_ids=team_ids, query=query.strip(), offset=offset, limit=limit,
    )
    return RuleListResponse(total=total, rules=records_sync(conn, actor, rows))


@writes("/safari/automation/rule/delete")
async def delete_rule(conn: AsyncConnection, actor: Actor, *, rule_id: str) -> str:
    row = await managed_rule(conn, actor, rule_id)
    await scheduler.remove_schedule(conn, kind=SCHEDULE_KIND, owner_id=row.rule_id)
    await repo.delete_rule(conn, actor.account_id, row.rule_id)
    return str(row.rule_id)


@writes("/safari/automation/rule/enable")
async def enable_rule(conn: AsyncConnection, actor: Actor, *, rule_id: str) -> str:
    """Enable a rule (its schedule resumes from now); returns its id."""
    item = await update_rule(conn, actor, rule_id=rule_id, changes=RuleChanges(enabled=True))
    return item.rule_id


@writes("/safari/automation/rule/disable")
async def disable_rule(conn: AsyncConnection, actor: Actor, *, rule_id: str) -> str:
    """Disable a rule: no trigger fires it until it is enabled again; returns its id."""
    item = await update_rule(conn, actor, rule_id=rule_id, changes=RuleChanges(enabled=False))
    return item.rule_id


# --- triggers -------------------------------------------------------------------------------


async def _add_trigger(
    conn: AsyncConnection, actor: Actor, rule_id: str, kind: str, *, enabled: bool = True,
    values: dict[str, Any] | None = None,
) -> None:
    now = actor.now_ms
    await repo.insert_trigger(conn, {
        "trigger_id": prefixed_id("atrig"), "rule_id": rule_id, "account_id": actor.account_id,
        "kind": kind, "enabled": enabled, "created_at": now, "updated_at": now, **(values or {}),
    })


async def _set_enabled(
    conn: AsyncConnection, actor: Actor, rule_id: str, triggers: dict[str, Row[Any]], kind: str,
    enabled: bool,
) -> None:
    found = triggers.get(kind)
    if found is None:
        if enabled:
            await _add_trigger(conn, actor, rule_id, kind)
        return
    await repo.update_trigger(conn, found.trigger_id,
                              {"enabled": enabled, "updated_at": actor.now_ms})


async def _update_http_trigger(
    conn: AsyncConnection, actor: Actor, rule_id: str, triggers: dict[str, Row[Any]],
    c: RuleChanges,
) -> str | None:
    """Create, enable, disable or rotate; returns a token when one was made here."""
    found = triggers.get(HTTP_POST)
    if found is None:
        if c.http_post_trigger_enabled:
            created = tokens.new_token()
            await _add_trigger(conn, actor, rule_id, HTTP_POST,
                               values={"token_hash": tokens.token_hash(created)})
            return created
        if c.rotate_http_post_trigger_token:
            raise errors.invalid("rotate_http_post_trigger_token",
                                 "the rule has no HTTP POST trigger")
        return None
    values: dict[str, Any] = {}
    token: str | None = None
    if c.http_post_trigger_enabled is not None:
        values["enabled"] = c.http_post_trigger_enabled
    if c.rotate_http_post_trigger_token:
        # The old hash is overwritten: the old token stops working when this commits.
        token = tokens.new_token()
        values["token_hash"] = tokens.token_hash(token)
    if values:
        values["updated_at"] = actor.now_ms
        await repo.update_trigger(conn, found.trigger_id, values)
    return token


async def _update_incident_trigger(
    conn: AsyncConnection, actor: Actor, rule_id: str, triggers: dict[str, Row[Any]],
    c: RuleChanges,
) -> None:
    found = triggers.get(ONCALL)
    touches_filter = (c.oncall_incident_channel_ids is not None
                      or c.oncall_incident_severities is not None)
    if found is None:
        if c.oncall_incident_trigger_enabled:
            await _add_trigger(conn, actor, rule_id, ONCALL,
                               values=await _incident_filter(conn, actor, c, None))
        elif touches_filter:
            raise errors.invalid("oncall_incident_trigger_enabled",
                                 "must be true to create the on-call incident trigger")
        return
    values: dict[str, Any] = {}
    if touches_filter:
        values.update(await _incident_filter(conn, actor, c, found))
    if c.oncall_incident_trigger_enabled is not None:
        values["enabled"] = c.oncall_incident_trigger_enabled
    if values:
        values["updated_at"] = actor.now_ms
        await repo.update_trigger(conn, found.trigger_id, values)


async def _incident_filter(
    conn: AsyncConnection, actor: Actor, c: RuleChanges, existing: Row[Any] | None
) -> dict[str, str]:
    """The channel ids and severities; creating the trigger needs both, non-empty."""
    channel_ids = c.oncall_incident_channel_ids
    severities = c.oncall_incident_severities
    if existing is None or channel_ids is not None:
        if not channel_ids:
            raise errors.invalid("oncall_incident_channel_ids", "is required")
        known = await channel_service.channel_names(conn, actor, channel_ids)
        missing = [i for i in channel_ids if i not in known]
        if missing:
            raise errors.invalid("oncall_incident_channel_ids", f"no such channel {missing[0]}")
    if (existing is None or severities is not None) and not severities:
        raise errors.invalid("oncall_incident_severities", "is required")
    values: dict[str, str] = {}
    if channel_ids is not None:
        values["channel_ids"] = msgspec.json.encode(sorted(set(channel_ids))).decode()
    if severities is not None:
        values["severities"] = msgspec.json.encode(sorted(set(severities))).decode()
    return values


# --- records --------------------------------------------------------------------------------


async def _synced_record(
    conn: AsyncConnection, actor: Actor, row: Any, *, token: str | None
) -> AutomationRuleItem:
    """Bring the rule's schedule in step with it (same transaction), then its record."""
    triggers = (await repo.triggers_of(conn, [row.rule_id]))[row.rule_id]
    schedule = triggers.get(SCHEDULE)
    await scheduler.set_schedule(
        conn, kind=SCHEDULE_KIND, owner_id=row.rule_id, now_ms=actor.now_ms,
        cron_expr=row.cron_expr, timezone=row.timezone,
        active=bool(row.enabled and schedule is not None and schedule.enabled),
    )
    return (await records(conn, actor, [row], token=token))[0]


def records_sync(
    conn: Connection, actor: Actor, rows: list[Any], *, token: str | None = None
) -> list[AutomationRuleItem]:
    ids = [r.rule_id for r in rows]
    triggers = repo.triggers_of_sync(conn, ids)
    next_fires = scheduler.next_fire_times_sync(conn, kind=SCHEDULE_KIND, owner_ids=ids)
    return [
        _record(r, triggers[r.rule_id], next_fires.get(r.rule_id, 0),
                can_edit=can_manage_sync(conn, actor, r), token=token)
        for r in rows
    ]


async def records(
    conn: AsyncConnection, actor: Actor, rows: list[Any], *, token: str | None = None
) -> list[AutomationRuleItem]:
    await preload_teams(actor)
    return await conn.run_sync(lambda sync: records_sync(sync, actor, rows, token=token))


def _record(
    row: Any, triggers: dict[str, Row[Any]], next_fire: int, *, can_edit: bool,
    token: str | None,
) -> AutomationRuleItem:
    schedule, http, oncall = triggers.get(SCHEDULE), triggers.get(HTTP_POST), triggers.get(ONCALL)
    schedule_on = bool(schedule is not None and schedule.enabled)
    return AutomationRuleItem(
        rule_id=row.rule_id,
        account_id=row.account_id,
        team_id=row.team_id,
        owner_id=row.owner_id,
        name=row.name,
        enabled=bool(row.enabled),
        run_scope="team" if row.team_id else "person",
        cron_expr=row.cron_expr,
        timezone=row.timezone,
        prompt=row.prompt,
        environment_kind=row.environment_kind,
        environment_id=row.environment_id,
        schedule_trigger_id=None if schedule is None else schedule.trigger_id,
        schedule_trigger_enabled=schedule_on,
        http_post_trigger_id=None if http is None else http.trigger_id,
        http_post_trigger_url=None if http is None else tokens.fire_path(http.trigger_id),
        http_post_trigger_enabled=bool(http is not None and http.enabled),
        http_post_token=token,
        can_edit=can_edit,
        created_at=row.created_at,
        updated_at=row.updated_at,
        schedule_next_fire_at_ms=next_fire if row.enabled and schedule_on else 0,
        oncall_incident_trigger_id=None if oncall is None else oncall.trigger_id,
        oncall_incident_trigger_enabled=bool(oncall is not None and oncall.enabled),
        oncall_incident_channel_ids=(
            None if oncall is None else msgspec.json.decode(oncall.channel_ids, type=list[int])),
        oncall_incident_severities=(
            None if oncall is None else msgspec.json.decode(oncall.severities, type=list[str])),
    )


# --- field rules ----------------------------------------------------------------------------


def _name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise errors.invalid("name", "is required")
    if len(name) > NAME_MAX:
        raise errors.invalid("name", "must be at most 255 characters")
    return name


def _prompt(raw: str) -> str:
    prompt = raw.strip()
    if not prompt:
        raise errors.invalid("prompt", "is required")
    if len(prompt) > PROMPT_MAX:
        raise errors.invalid("prompt", "is too long")
    return prompt


def _cron(raw: str) -> str:
    try:
        return normalize_fixed_minute(raw)
    except CronInvalid as exc:
        raise errors.invalid("cron_expr", str(exc)) from None


def _timezone(raw: str) -> str:
    try:
        return check_timezone(raw)
    except CronInvalid as exc:
        raise errors.invalid("timezone", str(exc)) from None


async def _check_environment(
    conn: AsyncConnection, actor: Actor, kind: str, environment_id: str, *, named_id: bool = True
) -> None:
    """A byoc rule names a worknode of the caller's account (another account's is as
    unknown as one that never existed), and its author may use worknodes."""
    if kind != "byoc":
        # Unused by other kinds, but never an id of another account's worknode either.
        if environment_id and named_id and await runner_service.worknode_for_run(
                conn, actor, worknode_id=environment_id) is None:
            raise errors.invalid(
                "environment_id", "names no worknode of this account (see /safari/worknode/list)")
        return
    require_environment_use(actor)
    if not environment_id:
        raise errors.invalid("environment_id", "is required with environment_kind byoc")
    if await runner_service.worknode_for_run(
            conn, actor, worknode_id=environment_id) is None:
        raise errors.invalid(
            "environment_id", "names no worknode of this account (see /safari/worknode/list)")
