"""A channel's escalation rules: the list in the order they are tried, a rule's page with
whom each layer would page now, and, for those who manage channels, the form that writes
one (layers, time windows, filters) without JSON, enabling, disabling and deleting.

Everything goes through the dispatch service the API's /channel/escalate/rule/* operations
call: a form is decoded into its `RuleSpec` (web/pages/escalation_form.py names the fields
after it), its refusals shown at their field; "who would be paged now" is the service's
`paged_now`, which resolves targets with the code the engine pages with."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_MANAGE
from dutyline.channel import service as channels
from dutyline.dispatch import service as rules
from dutyline.notify.template import service as templates
from dutyline.platform.calendar import service as calendars
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.schedule import service as schedules
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import MAX_GATHERED_PAGES, SERVICE_PAGE, all_members, path_id
from dutyline.web.page import Pages
from dutyline.web.pages import escalation_form as rule_form

pages = Pages()

RULES = "/console/channels/{channel_id}/escalation-rules"
_HEX = re.compile(r"^[0-9a-fA-F]{24}$")
FORM = "escalation/form.html"
# How the service words a layer naming nobody, as a person reads it.
_NOBODY = "choose at least one person, team, schedule, e-mail address or webhook"
_WORDS = {"names no person, team, schedule, email or webhook": _NOBODY}


def rules_path(channel_id: int) -> str:
    return RULES.format(channel_id=channel_id)


def _channel_id(ctx: ConsoleContext) -> int:
    return path_id(ctx, "channel_id", "channel")


def _rule_id(ctx: ConsoleContext) -> str:
    raw = str(ctx.path_params["rule_id"])
    if not _HEX.match(raw):
        raise errors.not_found("rule", raw)
    return raw.lower()


def _require_manage(ctx: ConsoleContext) -> None:
    """The forms of changes only channel managers may make (the service refuses the change
    itself whoever sends it)."""
    if not ctx.actor.has(CHANNEL_MANAGE):
        raise errors.AccessDenied()


# --- the list and a rule's page ---------------------------------------------------------------


@pages.get(RULES)
async def rule_list(ctx: ConsoleContext) -> Response:
    channel_id, actor = _channel_id(ctx), ctx.actor

    def read(conn: Connection) -> tuple[Any, list[Any]]:
        channel = channels.channel_info_sync(conn, actor, channel_id=channel_id)
        return channel, rules.list_rules_sync(conn, actor, channel_id=channel_id)

    channel, items = await ctx.runtime.db.run_sync(read, write=False)
    return ctx.render("escalation/list.html", channel=channel, rules=items,
                      base=rules_path(channel_id), can_manage=actor.has(CHANNEL_MANAGE))


@dataclass(frozen=True)
class LayerView:
    number: int
    layer: dict[str, Any]
    reach: rules.LayerReach
    webhooks: list[str]


async def rule_page(ctx: ConsoleContext) -> Response:
    channel_id, rule_id, actor = _channel_id(ctx), _rule_id(ctx), ctx.actor
    async with ctx.read() as conn:
        rule = await conn.run_sync(lambda sync: rules.rule_info_sync(
            sync, actor, channel_id=channel_id, rule_id=rule_id))
        reach = await rules.paged_now(conn, actor, channel_id=channel_id, rule_id=rule_id)
        names = await conn.run_sync(lambda sync: _names(sync, actor, rule.layers, reach))
    layers = [LayerView(i + 1, layer, reach[i],
                        [str(h.get("type", "")) for h in layer["target"].get("webhooks") or ()])
              for i, layer in enumerate(rule.layers)]
    return ctx.render("escalation/rule.html", rule=rule, layers=layers, names=names,
                      weekdays=rule_form.WEEKDAYS,
                      base=rules_path(channel_id), can_manage=actor.has(CHANNEL_MANAGE))


@dataclass(frozen=True)
class Names:
    persons: Mapping[int, str]
    teams: Mapping[int, str]
    schedules: Mapping[int, str]
    me: int

    def person(self, person_id: int) -> str:
        return self.persons.get(person_id, f"#{person_id}")

    def people(self, person_ids: list[int]) -> str:
        return ", ".join(self.person(p) for p in person_ids)

    def team(self, team_id: Any) -> str:
        return self.teams.get(int(team_id), f"#{team_id}")

    def schedule(self, schedule_id: Any) -> str:
        return self.schedules.get(int(schedule_id), f"#{schedule_id}")


def _names(conn: Connection, actor: Actor, layers: list[dict[str, Any]],
           reach: list[rules.LayerReach]) -> Names:
    person_ids: set[int] = set()
    team_ids: set[int] = set()
    schedule_ids: set[int] = set()
    for layer, found in zip(layers, reach, strict=True):
        target = layer.get("target") or {}
        person_ids.update(int(p) for p in target.get("person_ids") or ())
        person_ids.update(found.person_ids)
        team_ids.update(int(t) for t in target.get("team_ids") or ())
        schedule_ids.update(int(s) for s in target.get("schedule_to_role_ids") or {})
    ids = sorted(person_ids)
    people: dict[int, str] = {}
    for start in range(0, len(ids), SERVICE_PAGE):
        people.update((p.person_id, p.person_name) for p in members.person_infos_sync(
            conn, actor, person_ids=ids[start:start + SERVICE_PAGE]))
    named_teams = {t.team_id: t.team_name
                   for t in teams.team_infos_sync(conn, actor, team_ids=sorted(team_ids))}
    named = {schedule_id: name for schedule_id, name, _ in _all_schedules(conn, actor)
             if schedule_id in schedule_ids}
    return Names(people, named_teams, named, actor.person_id)


def _all_schedules(conn: Connection, actor: Actor) -> list[tuple[int, str, tuple[int, ...]]]:
    """(id, name, role ids) of the account's schedules, without their timelines."""
    out: list[tuple[int, str, tuple[int, ...]]] = []
    for p in range(1, MAX_GATHERED_PAGES + 1):
        total, items = schedules.list_schedule_choices_sync(conn, actor, p=p,
                                                            limit=SERVICE_PAGE)
        out += items
        if not items or len(out) >= total:
            break
    return out


# --- the form -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    value: str
    label: str
    roles: tuple[int, ...] = ()


def _choices(conn: Connection, actor: Actor) -> dict[str, list[Choice]]:
    """What the form offers: teams, schedules with their roles, templates and calendars
    (those the person may not read are left out: the preset stays)."""
    found_teams: list[Any] = []
    for page in range(MAX_GATHERED_PAGES):
        total, items = teams.list_teams_sync(conn, actor, orderby="team_name", asc=True,
                                             offset=page * SERVICE_PAGE, limit=SERVICE_PAGE)
        found_teams += items
        if not items or len(found_teams) >= total:
            break
    found_schedules = [Choice(str(schedule_id), name or f"#{schedule_id}", roles)
                       for schedule_id, name, roles in _all_schedules(conn, actor)]
    try:
        listed = templates.list_templates_sync(
            conn, actor, p=1, limit=100, orderby="template_name", asc=True, is_my_team=False,
            team_ids=None, creator_id=None, query="").items
    except errors.AccessDenied:
        listed = []
    try:
        cals = calendars.list_calendars_sync(conn, actor)
    except errors.AccessDenied:
        cals = []
    return {
        "teams": [Choice(str(t.team_id), t.team_name) for t in found_teams],
        "schedules": sorted(found_schedules, key=lambda c: c.label.casefold()),
        "templates": [Choice(t.template_id, t.template_name) for t in listed
                      if t.template_id != templates.default_template_id(actor)],
        "calendars": [Choice(c.cal_id, c.cal_name) for c in cals],
    }


async def _show_form(ctx: ConsoleContext, channel_id: int, rule: Any,
                     form: Mapping[str, list[str]], *, status: int = 200,
                     error: errors.ApiError | None = None) -> Response:
    actor = ctx.actor
    async with ctx.read() as conn:
        channel = await conn.run_sync(lambda sync: channels.channel_info_sync(
            sync, actor, channel_id=channel_id))
        people = await all_members(conn, ctx)
        choices = await conn.run_sync(lambda sync: _choices(sync, actor))
    context: dict[str, Any] = {
        "channel": channel, "rule": rule, "values": form, "people": people, **choices,
        "f": rule_form, "base": rules_path(channel_id)}
    if error is not None:
        return ctx.form_failed(FORM, error, **context)
    return ctx.render(FORM, status=status, **context)


def _worded(exc: errors.ApiError, typed_at: Mapping[str, str],
            form: Mapping[str, list[str]]) -> errors.ApiError:
    """A refusal at the form's field, a layer's named by its number ("Layer 2: ...")."""
    if not isinstance(exc, errors.InvalidParameter):
        return exc
    field = str(exc.fields.get("field", ""))
    reason = str(exc.fields.get("reason", "is invalid"))
    field = rule_form.typed_field(field, typed_at)
    if re.fullmatch(r"layers\[\d+\]\.target(\.by)?", field):
        field = re.sub(r"\.by$", "", field)
        reason = _WORDS.get(reason, reason)
        if "is required unless webhooks" in reason:
            reason = "choose how people are paged, or add a webhook"
    if field == "layers":
        return errors.invalid("layers", forms.plain(reason))
    mapped = forms.on_form(errors.invalid(field, reason), form=form)
    number = rule_form.layer_of(str(mapped.fields.get("field", "")))
    if number is not None:
        words = str(mapped.fields.get("reason", reason))
        return errors.invalid(str(mapped.fields["field"]), f"Layer {number + 1}: {words}")
    return mapped


async def _save(ctx: ConsoleContext, channel_id: int, rule: Any) -> Response:
    """The form's rule, created (`rule` None) or updated; the form again, with one more
    layer or one less when asked, or with the refusal at its field."""
    form = await ctx.form_lists()
    typed = {k: v for k, v in form.items() if k != "csrf_token"}
    if "add_layer" in typed:
        typed.pop("add_layer")
        return await _show_form(ctx, channel_id, rule, rule_form.with_layer(typed))
    if "remove_layer" in typed:
        which = typed.pop("remove_layer")[-1]
        index = int(which) if which.isdigit() else -1
        return await _show_form(ctx, channel_id, rule, rule_form.without_layer(typed, index))
    record_form, given, typed_at = rule_form.to_record(typed)
    try:
        try:
            spec = forms.decode(record_form, rules.RuleSpec,
                                given={"channel_id": channel_id, **given})
        except errors.InvalidParameter as exc:
            # forms.decode names the record's path; ours carry the typed rows' numbers.
            raise _worded(exc, typed_at, typed) from None
        # The apps' group chats of each layer, which the form does not edit, stay with it.
        kept = rule_form.app_webhooks(rule) if rule is not None else []
        was = rule_form.continues(typed)
        layers = [_with_apps(layer, kept[w] if w is not None and w < len(kept) else [])
                  for layer, w in zip(spec.layers, [*was, *[None] * len(spec.layers)],
                                      strict=False)]
        async with ctx.write() as conn:
            arguments: dict[str, Any] = {
                "deps": ctx.runtime.deps, "channel_id": channel_id,
                "template_id": spec.template_id, "rule_name": spec.rule_name,
                "description": spec.description, "priority": spec.priority,
                "aggr_window": spec.aggr_window, "layers": layers,
                "time_filters": spec.time_filters, "filters": spec.filters}
            try:
                if rule is None:
                    created = await rules.create_rule(conn, ctx.actor, **arguments)
                    rule_id, warnings = created.rule_id, created.warnings
                else:
                    saved = await rules.update_rule(
                        conn, ctx.actor, rule_id=rule.rule_id,
                        continues=rule_form.continues(typed), **arguments)
                    rule_id, warnings = rule.rule_id, saved.warnings
            except errors.InvalidParameter as exc:
                raise _worded(exc, typed_at, typed) from None
    except errors.ApiError as exc:
        return await _show_form(ctx, channel_id, rule, typed, error=exc)
    ctx.flash(f"The escalation rule {spec.rule_name.strip()} is saved.")
    for warning in warnings:
        ctx.flash(f"{warning.message}", kind="warning")
    return ctx.redirect(f"{rules_path(channel_id)}/{rule_id}")


def _with_apps(layer: Any, apps: list[dict[str, Any]]) -> Any:
    if not apps:
        return layer
    hooks = [*(layer.target.webhooks or []),
             *(rules.WebhookTarget(type=h["type"], settings=dict(h["settings"])) for h in apps)]
    return msgspec.structs.replace(
        layer, target=msgspec.structs.replace(layer.target, webhooks=hooks))


@pages.get(RULES + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    return await _show_form(ctx, _channel_id(ctx), None, rule_form.new_rule())


@pages.post(RULES + "/new")
async def create(ctx: ConsoleContext) -> Response:
    return await _save(ctx, _channel_id(ctx), None)


async def _rule(ctx: ConsoleContext) -> Any:
    channel_id, rule_id, actor = _channel_id(ctx), _rule_id(ctx), ctx.actor
    return await ctx.runtime.db.run_sync(lambda sync: rules.rule_info_sync(
        sync, actor, channel_id=channel_id, rule_id=rule_id), write=False)


@pages.get(RULES + "/{rule_id}/edit")
async def edit_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    rule = await _rule(ctx)
    form = rule_form.from_rule(rule)
    if rule.template_id == templates.default_template_id(ctx.actor):
        form["template_id"] = [""]  # the default, chosen as such
    return await _show_form(ctx, rule.channel_id, rule, form)


@pages.post(RULES + "/{rule_id}/edit")
async def edit(ctx: ConsoleContext) -> Response:
    rule = await _rule(ctx)
    return await _save(ctx, rule.channel_id, rule)


# --- enabling, disabling, deleting ------------------------------------------------------------


async def _toggle(ctx: ConsoleContext, enable: bool) -> Response:
    rule = await _rule(ctx)
    async with ctx.write() as conn:
        change = rules.enable_rule if enable else rules.disable_rule
        await change(conn, ctx.actor, channel_id=rule.channel_id, rule_id=rule.rule_id)
    ctx.flash(f"The escalation rule {rule.rule_name} is "
              f"{'enabled' if enable else 'disabled: incidents skip it'}.")
    back = (await ctx.form()).get("back", "")
    path = rules_path(rule.channel_id)
    return ctx.redirect(path if back == "list" else f"{path}/{rule.rule_id}")


@pages.post(RULES + "/{rule_id}/enable")
async def enable(ctx: ConsoleContext) -> Response:
    return await _toggle(ctx, True)


@pages.post(RULES + "/{rule_id}/disable")
async def disable(ctx: ConsoleContext) -> Response:
    return await _toggle(ctx, False)


@pages.get(RULES + "/{rule_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    rule = await _rule(ctx)
    return ctx.render("escalation/delete.html", rule=rule, base=rules_path(rule.channel_id))


@pages.post(RULES + "/{rule_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    rule = await _rule(ctx)
    try:
        async with ctx.write() as conn:
            await rules.delete_rule(conn, ctx.actor, channel_id=rule.channel_id,
                                    rule_id=rule.rule_id)
    except errors.ApiError as exc:
        return ctx.form_failed("escalation/delete.html", exc, rule=rule,
                               base=rules_path(rule.channel_id))
    ctx.flash(f"The escalation rule {rule.rule_name} is deleted.")
    return ctx.redirect(rules_path(rule.channel_id))


# Last: `/{rule_id}` would otherwise answer `/new` (routes match in the order they are added).
pages.get(RULES + "/{rule_id}")(rule_page)
