"""Escalation rules: create, update, delete, enable, disable, read (docs/paging.md).

Reads need channel_view, writes channel_manage (each service checks it). A rule belongs to a
live channel of the caller's account that the caller may see (a private channel's rules are
not found outside its teams, as the channel is); every person, team and schedule a layer
names must be the account's (others: not found). Webhook URLs pass the outbound guard's
static check when saved. Webhook secrets are sealed with the server key at rest, never read
back, and dropped when the webhook's URL moves to another origin (api/outbound_secrets.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors, outbound_urls
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import secret_to_store, url_to_store
from dutyline.api.permissions import CHANNEL_MANAGE, CHANNEL_VIEW
from dutyline.api.types import SaveWarning, SaveWarnings
from dutyline.channel import service as channels
from dutyline.config import Settings
from dutyline.dispatch import links as links  # the signed links, for the pages they land on
from dutyline.dispatch import notify, peers
from dutyline.dispatch import repository as repo
from dutyline.dispatch.schemas import (
    SECRET_SETTINGS,
    EscalateLayer,
    EscalateRuleItem,
    EscalateTarget,
    RuleCreateResponse,
    rule_item,
)
from dutyline.dispatch.schemas import RuleSpec as RuleSpec  # the record its writes take
from dutyline.dispatch.schemas import WebhookTarget as WebhookTarget
from dutyline.kit.channels import APP_TYPES, group_refusal, personal_refusal
from dutyline.kit.ids import hex_id
from dutyline.kit.origin import same_origin
from dutyline.kit.secretbox import SecretBox
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.notify.delivery import service as delivery
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams

MAX_LAYERS = 10
MAX_TARGETS = 100
MAX_CHAT_IDS = 20
_json = msgspec.json.Decoder()


def _check_chat_ids(path: str, settings: dict[str, Any]) -> None:
    """An app target names its group chats in `chat_ids` (the reference; or one `chat_id`)."""
    ids = settings.get("chat_ids")
    if ids is None and settings.get("chat_id") is not None:
        ids = [settings["chat_id"]]
    if not isinstance(ids, list) or not ids:
        raise errors.invalid(f"{path}.chat_ids", "names no group chat")
    if len(ids) > MAX_CHAT_IDS:
        raise errors.invalid(f"{path}.chat_ids", f"at most {MAX_CHAT_IDS} chats")
    for k, chat_id in enumerate(ids):
        if not isinstance(chat_id, str) or not chat_id.strip() or len(chat_id) > 128:
            raise errors.invalid(f"{path}.chat_ids[{k}]", "must be a chat id (1-128 chars)")


def _dump(value: Any) -> str:
    return msgspec.json.encode(value).decode()


async def _require_channel(conn: Any, actor: Actor, channel_id: int) -> None:
    # The channel domain's rule, as for the channel itself: a private channel the actor may
    # not see is not found, and so are its rules, whatever the actor may otherwise do.
    await channels.require_visible(conn, actor, channel_id)


def _require_rule_sync(conn: Connection, actor: Actor, channel_id: int, rule_id: str) -> Any:
    channels.require_visible_sync(conn, actor, channel_id)
    row = repo.get_rule_sync(conn, actor.account_id, channel_id, rule_id.lower())
    if row is None:
        raise errors.not_found("rule", rule_id)
    return row


async def _require_rule(conn: Any, actor: Actor, channel_id: int, rule_id: str) -> Any:
    return await conn.run_sync(_require_rule_sync, actor, channel_id, rule_id)


async def _checked_layers(conn: Any, actor: Actor, layers: list[EscalateLayer],
                          deps: Deps) -> None:
    if not layers:
        raise errors.invalid("layers", "at least one layer is required")
    if len(layers) > MAX_LAYERS:
        raise errors.invalid("layers", f"at most {MAX_LAYERS} layers")
    await check_targets(conn, actor, targets=[(f"layers[{i}].target", layer.target)
                                              for i, layer in enumerate(layers)], deps=deps)


async def check_targets(conn: Any, actor: Actor, *, targets: list[tuple[str, EscalateTarget]],
                        deps: Deps) -> None:
    """Refuse targets (each with the field path it came in) that name nobody, name a way
    of sending that does not exist, or a person, team or schedule not of the account (not
    found). Escalation layers and channel notification rules share these rules."""
    person_ids: set[int] = set()
    team_ids: set[int] = set()
    schedule_ids: set[int] = set()
    for path, t in targets:
        recipients = [*t.person_ids, *t.team_ids, *t.schedule_to_role_ids, *t.emails]
        if not recipients and not t.webhooks:
            raise errors.invalid(path, "names no person, team, schedule, email or webhook")
        if recipients and t.by is None and not t.webhooks:
            raise errors.invalid(f"{path}.by", "is required unless webhooks are given")
        if len(recipients) + len(t.webhooks or []) > MAX_TARGETS:
            raise errors.invalid(path, f"at most {MAX_TARGETS} targets")
        for j, email in enumerate(t.emails):
            if "@" not in email or len(email) > 254 or any(c.isspace() for c in email):
                raise errors.invalid(f"{path}.emails[{j}]", "is not an e-mail address")
        if t.by is not None:
            for sev in SEVERITY_KEYS:
                for k, name in enumerate(getattr(t.by, sev)):
                    if refused := personal_refusal(name):
                        raise errors.invalid(f"{path}.by.{sev}[{k}]", refused)
        for j, hook in enumerate(t.webhooks or []):
            if refused := group_refusal(hook.type):
                raise errors.invalid(f"{path}.webhooks[{j}].type", refused)
            if hook.type in APP_TYPES:
                _check_chat_ids(f"{path}.webhooks[{j}].settings", hook.settings)
                continue
            url = hook.settings.get("url")
            if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") \
                    or not urlsplit(url).hostname:
                raise errors.invalid(f"{path}.webhooks[{j}].settings.url",
                                     "must be an http(s) URL")
            outbound_urls.check_static(url, deps.policy,
                                       field=f"{path}.webhooks[{j}].settings.url")
            chat_id = hook.settings.get("chat_id")
            if hook.type == "telegram" and not (
                    isinstance(chat_id, int) or (isinstance(chat_id, str) and chat_id.strip())):
                raise errors.invalid(f"{path}.webhooks[{j}].settings.chat_id",
                                     "is required for telegram (the group's chat id)")
        # Its keys and roles are ids bounded at decode (api/types.py).
        schedule_ids.update(t.schedule_to_role_ids)
        person_ids.update(t.person_ids)
        team_ids.update(t.team_ids)
    missing = person_ids - await members.existing_member_ids(conn, actor,
                                                             sorted(person_ids))
    if missing:
        raise errors.not_found("person", min(missing))
    missing = team_ids - await teams.existing_team_ids(conn, actor, sorted(team_ids))
    if missing:
        raise errors.not_found("team", min(missing))
    missing = schedule_ids - await peers.schedules_exist(conn, actor, sorted(schedule_ids))
    if missing:
        raise errors.not_found("schedule", min(missing))


def delivery_warnings(settings: Settings, layers: list[EscalateLayer]) -> list[SaveWarning]:
    """What the layers ask for that these settings cannot send (the rule is saved anyway):
    see target_warnings."""
    out: list[SaveWarning] = []
    for i, layer in enumerate(layers):
        out += target_warnings(settings, layer.target, f"layers[{i}].target")
    return out


def target_warnings(settings: Settings, t: EscalateTarget, path: str) -> list[SaveWarning]:
    """What a target asks for that these settings cannot send: a channel in `by` without
    its means (e-mail without SMTP, SMS without Twilio...), e-mail addresses without SMTP,
    an app's group chat without the app (a webhook URL the outbound guard refuses is
    refused when saved, not warned about). Channels a `follow_preference` target takes from
    the members' own preferences are warned about when the member saves them."""
    out: list[SaveWarning] = []
    people = t.person_ids or t.team_ids or t.schedule_to_role_ids
    if people and t.by is not None and not t.by.follow_preference:
        for sev in SEVERITY_KEYS:
            for channel in getattr(t.by, sev) or ["email"]:
                reason = delivery.personal_gap(settings, channel)
                if reason:
                    out.append(SaveWarning(field=f"{path}.by.{sev}",
                                           message=f"{channel}: {reason}"))
    if t.emails and (reason := delivery.group_gap(settings, "email")):
        out.append(SaveWarning(field=f"{path}.emails", message=reason))
    for j, hook in enumerate(t.webhooks or []):
        where = f"{path}.webhooks[{j}]"
        if hook.type in APP_TYPES:
            reason = delivery.group_gap(settings, hook.type)
            if reason:
                out.append(SaveWarning(field=f"{where}.type", message=reason))
    return out


def _sealed_layers(layers: list[EscalateLayer], box: SecretBox,
                   previous: list[dict[str, Any]],
                   continues: list[int | None] | None = None) -> list[dict[str, Any]]:
    """Layers as stored: see sealed_target. Layer i's secrets are kept from the stored
    layer `continues[i]` (None: a new layer), by default from the one at its own place."""
    out: list[dict[str, Any]] = msgspec.to_builtins(layers)
    for i, layer in enumerate(out):
        was = continues[i] if continues is not None and i < len(continues) else i
        before = ((previous[was].get("target") or {})
                  if was is not None and 0 <= was < len(previous) else {})
        seal_target(layer["target"], before, box, f"layers[{i}].target")
    return out


def seal_target(target: dict[str, Any], previous: dict[str, Any], box: SecretBox,
                path: str) -> dict[str, Any]:
    """A target (as builtins) as stored, changed in place: secrets given are sealed; a
    secret left out or sent back masked keeps the stored one of the webhook in the same
    place of `previous` (the stored target), unless that webhook changed type or its URL
    moved to another origin. So do the credentials masked in a URL read back."""
    hooks = target.get("webhooks") or []
    old_hooks: list[dict[str, Any]] = previous.get("webhooks") or []
    for j, hook in enumerate(hooks):
        settings = hook["settings"]
        before = old_hooks[j] if j < len(old_hooks) else {}
        old = before.get("settings") or {}
        same_hook = before.get("type") == hook["type"]
        keep = same_hook and same_origin(str(old.get("url", "")), str(settings.get("url", "")))
        if isinstance(settings.get("url"), str):
            settings["url"] = url_to_store(settings["url"], str(old.get("url") or ""),
                                           keep=same_hook,
                                           field=f"{path}.webhooks[{j}].settings.url")
        for key in SECRET_SETTINGS:
            given = settings.get(key)
            if given is not None and not isinstance(given, str):
                raise errors.invalid(f"{path}.webhooks[{j}].settings.{key}", "must be a string")
            value = secret_to_store(
                given, str(old.get(key) or ""), keep=keep, seal=box.seal, blank_keeps=True,
                field=f"{path}.webhooks[{j}].settings.{key}")
            if value:
                settings[key] = value
            else:
                settings.pop(key, None)
    return target


async def _checked_template(conn: Any, actor: Actor, template_id: str,
                            stored: str = "") -> str:
    """The rule's template: the account's own or a preset (others: not found); none given,
    the account's default. The id a rule already holds is kept even if that template was
    deleted since: a record sent back as it was read saves, and sends fall back to the
    default text."""
    template_id = template_id.lower() or peers.default_template_id(actor)
    if template_id != stored and not await peers.template_exists(conn, actor, template_id):
        raise errors.not_found("template", template_id)
    return template_id


@writes("/channel/escalate/rule/create", CHANNEL_MANAGE, inputs=RuleSpec,
        targets=lambda created: [created.rule_id])
async def create_rule(conn: Any, actor: Actor, *, deps: Deps, channel_id: int,
                      template_id: str = "", rule_name: str, description: str, priority: int,
                      aggr_window: int, layers: list[EscalateLayer],
                      time_filters: list[dict[str, Any]],
                      filters: list[list[dict[str, Any]]]) -> RuleCreateResponse:
    await _require_channel(conn, actor, channel_id)
    name = rule_name.strip()
    if not name:
        raise errors.invalid("rule_name", "is required")
    await peers.check_filters(conn, actor, filters, time_filters)
    template_id = await _checked_template(conn, actor, template_id)
    await _checked_layers(conn, actor, layers, deps)
    rule_id, now = hex_id(), actor.now_s
    await repo.insert_rule(conn, {
        "rule_id": rule_id, "account_id": actor.account_id, "channel_id": channel_id,
        "rule_name": name, "description": description, "priority": priority,
        "aggr_window": aggr_window, "template_id": template_id,
        "layers": _dump(_sealed_layers(layers, deps.box, [])),
        "time_filters": _dump(time_filters), "filters": _dump(filters), "status": "enabled",
        "updated_by": actor.person_id, "created_at": now, "updated_at": now,
    })
    return RuleCreateResponse(rule_id=rule_id, rule_name=name,
                              warnings=delivery_warnings(deps.settings, layers))


@writes("/channel/escalate/rule/update", CHANNEL_MANAGE, inputs=RuleSpec)
async def update_rule(conn: Any, actor: Actor, *, deps: Deps, channel_id: int, rule_id: str,
                      template_id: str = "", rule_name: str, description: str, priority: int,
                      aggr_window: int, layers: list[EscalateLayer],
                      time_filters: list[dict[str, Any]],
                      filters: list[list[dict[str, Any]]],
                      continues: list[int | None] | None = None) -> SaveWarnings:
    """`continues`: for each layer, the stored layer it is (its webhooks' secrets and
    masked URLs are kept from that one; None: a new layer); by default each layer is the
    stored one at its place (a form that removes or moves layers says so)."""
    row = await _require_rule(conn, actor, channel_id, rule_id)
    actor.note_audit_targets(row.rule_id)
    name = rule_name.strip()
    if not name:
        raise errors.invalid("rule_name", "is required")
    await peers.check_filters(conn, actor, filters, time_filters)
    template_id = await _checked_template(conn, actor, template_id, stored=row.template_id)
    await _checked_layers(conn, actor, layers, deps)
    await repo.update_rule(conn, actor.account_id, row.rule_id, {
        "rule_name": name, "description": description, "priority": priority,
        "aggr_window": aggr_window, "template_id": template_id,
        "layers": _dump(_sealed_layers(layers, deps.box, _json.decode(row.layers),
                                       continues)),
        "time_filters": _dump(time_filters), "filters": _dump(filters),
        "updated_by": actor.person_id, "updated_at": actor.now_s,
    })
    return SaveWarnings(warnings=delivery_warnings(deps.settings, layers))


async def escalation_rules_using_calendar(conn: Any, account_id: int,
                                          cal_id: str) -> list[str]:
    """Escalation rules whose time windows name the calendar (its delete is refused while
    any do)."""
    return [f"escalation rule {r.rule_name} ({r.rule_id})"
            for r in await repo.rules_naming(conn, account_id, f'"cal_id":"{cal_id}"')]


@writes("/channel/escalate/rule/delete", CHANNEL_MANAGE)
async def delete_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id."""
    row = await _require_rule(conn, actor, channel_id, rule_id)
    await repo.delete_rule(conn, actor.account_id, row.rule_id)
    return str(row.rule_id)


@writes("/channel/escalate/rule/enable", CHANNEL_MANAGE)
async def enable_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id."""
    return await _set_status(conn, actor, channel_id, rule_id, "enabled")


@writes("/channel/escalate/rule/disable", CHANNEL_MANAGE)
async def disable_rule(conn: Any, actor: Actor, *, channel_id: int, rule_id: str) -> str:
    """Returns the rule's id."""
    return await _set_status(conn, actor, channel_id, rule_id, "disabled")


async def _set_status(conn: Any, actor: Actor, channel_id: int, rule_id: str,
                      status: str) -> str:
    row = await _require_rule(conn, actor, channel_id, rule_id)
    await repo.update_rule(conn, actor.account_id, row.rule_id, {
        "status": status, "updated_by": actor.person_id, "updated_at": actor.now_s})
    return str(row.rule_id)


@reads_sync(CHANNEL_VIEW)
def rule_info_sync(conn: Connection, actor: Actor, *, channel_id: int,
                   rule_id: str) -> EscalateRuleItem:
    channel = channels.require_visible_sync(conn, actor, channel_id)
    return rule_item(_require_rule_sync(conn, actor, channel_id, rule_id), channel.channel_name)


@reads_sync(CHANNEL_VIEW)
def list_rules_sync(conn: Connection, actor: Actor, *,
                    channel_id: int) -> list[EscalateRuleItem]:
    name = channels.require_visible_sync(conn, actor, channel_id).channel_name
    return [rule_item(r, name)
            for r in repo.list_rules_sync(conn, actor.account_id, channel_id)]


@reads_sync(CHANNEL_VIEW)
def rules_of_channels_sync(conn: Connection, actor: Actor, *,
                           channel_ids: list[int]) -> list[EscalateRuleItem]:
    """The rules of several channels at once (a page showing many channels), by channel then
    in the order they are tried. Unlike one channel's list, which answers not found, channels
    deleted, of another account or private to teams the actor is not in are left out."""
    ids = list(dict.fromkeys(channel_ids))
    if len(ids) > 100:
        raise errors.invalid("channel_ids", "has more than 100 ids")
    seen = channels.channel_infos_sync(conn, actor, channel_ids=ids)
    names = {c.channel_id: c.channel_name for c in seen}
    rows = repo.rules_of_channels_sync(conn, actor.account_id, list(names))
    return [rule_item(r, names[r.channel_id]) for r in rows]


@dataclass(frozen=True)
class LayerReach:
    """Whom a rule's layer would page now, as the engine pages it (dispatch/notify.py):
    `person_ids` are the live members it reaches, each once; `by_team` and `by_schedule`
    the members of each team and who each schedule has on call for its roles (a schedule
    that no longer exists is absent), removed members left out."""

    person_ids: list[int]
    by_team: dict[int, list[int]]
    by_schedule: dict[int, list[int]]


@reads(CHANNEL_VIEW)
async def paged_now(conn: Any, actor: Actor, *, channel_id: int,
                    rule_id: str) -> list[LayerReach]:
    """Each layer of the rule resolved now (who would be paged if it began now)."""
    row = await _require_rule(conn, actor, channel_id, rule_id)
    out: list[LayerReach] = []
    for layer in _json.decode(row.layers):
        reach = await notify.target_reach(conn, actor, layer.get("target") or {}, actor.now_s)
        live = await members.contacts(conn, actor, reach.everyone)
        out.append(LayerReach(
            [p for p in reach.everyone if p in live],
            {t: [p for p in ids if p in live] for t, ids in reach.by_team.items()},
            {s: [p for p in ids if p in live] for s, ids in reach.by_schedule.items()}))
    return out


async def enabled_rules(conn: Any, actor: Actor, *, channel_id: int) -> list[Any]:
    """The channel's enabled rules in the order they are tried (the engine's read)."""
    return await repo.list_rules(conn, actor.account_id, channel_id, enabled_only=True)


async def escalate_rule_name(conn: Any, actor: Actor, rule_id: str) -> str | None:
    """The name of the account's escalation rule `rule_id`, None without one: an incident's
    assignment may name one of our rules (incident.references asks, wired by domains.py)."""
    row = await repo.get_rule_by_id(conn, actor.account_id, rule_id)
    return None if row is None else str(row.rule_name)
