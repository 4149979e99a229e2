"""Creating, editing and deleting a schedule in the console: its rotations in words
(schedule_words.py), decoded into the schedule service's own record (`ScheduleSpec`'s fields)
and saved by the service the API's /schedule/create and /schedule/update call.

Layers and people are added and removed by the form's own submit buttons (`action`), each
answer the form again, so it works without JavaScript; "Preview" shows the turns the form
would give, from the service /schedule/preview calls, without saving."""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import SCHEDULE_MANAGE
from dutyline.platform.calendar import service as calendars
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.schedule import service as schedules
from dutyline.web import forms, times
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import MAX_GATHERED_PAGES, SERVICE_PAGE, path_id
from dutyline.web.page import Pages
from dutyline.web.pages import schedules_view
from dutyline.web.pages.schedule_words import (
    UNITS,
    WEEKDAYS,
    LayerWords,
    ScheduleWords,
    form_field,
    layer_in,
    stored_as_input,
    words_of,
)
from dutyline.web.pages.schedules import account_people

pages = Pages()

SCHEDULES = "/console/schedules"
ZONES = tuple(sorted(zoneinfo.available_timezones()))
_ZONE_SET = frozenset(ZONES)
PREVIEW_S = 14 * 86_400
MAX_LAYERS = 20
MAX_PEOPLE = 100


@dataclass
class FormPage:
    """What the form shows besides the words: the pickers and, after "Preview", the turns."""

    schedule: schedules.ScheduleItem | None
    words: ScheduleWords
    people: list[tuple[int, str]]
    team_choices: list[tuple[int, str]]
    calendar_choices: list[tuple[str, str]]
    kept: dict[int, str] = field(default_factory=dict)  # stored position -> its name
    preview: list[schedules_view.Shift] | None = None
    preview_layers: list[schedules_view.LayerRow] = field(default_factory=list)


def _require_manager(ctx: ConsoleContext) -> None:
    if not ctx.actor.has(SCHEDULE_MANAGE):
        raise errors.AccessDenied()


def _choices(conn: Connection, actor: Actor) -> tuple[list[tuple[int, str]],
                                                      list[tuple[int, str]],
                                                      list[tuple[str, str]]]:
    people = account_people(conn, actor)
    found: list[tuple[int, str]] = []
    for page in range(MAX_GATHERED_PAGES):
        total, team_items = teams.list_teams_sync(conn, actor, orderby="team_name", asc=True,
                                                  offset=page * SERVICE_PAGE,
                                                  limit=SERVICE_PAGE)
        found += [(t.team_id, t.team_name) for t in team_items]
        if len(found) >= total or not team_items:
            break
    cals = [(c.cal_id, c.cal_name) for c in calendars.list_calendars_sync(conn, actor)]
    return people, found, cals


def _new_words(conn: Connection, actor: Actor) -> ScheduleWords:
    me = members.member_info_sync(conn, actor)
    zone_name, tz = times.reader_zone(me.time_zone, me.account_time_zone)
    today = schedules.local_datetime(tz, actor.now_s).date()
    return ScheduleWords(time_zone=zone_name, layers=[
        LayerWords(layer_name="Primary", start=today.isoformat())])


def _stored_words(item: schedules.ScheduleItem, now_s: int) -> ScheduleWords:
    tz = schedules.zone(item.time_zone)
    layers = []
    for i, layer in enumerate(item.layers):
        words = words_of(layer, tz, now_s)
        layers.append(words if words is not None else LayerWords(layer_name=layer.layer_name,
                                                                  kept=i))
    return ScheduleWords(schedule_name=item.schedule_name or "",
                         description=item.description or "", team_id=item.team_id or 0,
                         time_zone=item.time_zone, layers=layers)


def _form_page(conn: Connection, actor: Actor, schedule: schedules.ScheduleItem | None,
               words: ScheduleWords) -> FormPage:
    people, team_choices, cals = _choices(conn, actor)
    kept = {i: layer.layer_name for i, layer in enumerate(schedule.layers)} if schedule else {}
    return FormPage(schedule, words, people, team_choices, cals, kept)


def _render(ctx: ConsoleContext, page: FormPage, *, status: int = 200, error: str = "",
            field_errors: dict[str, str] | None = None) -> Response:
    return ctx.render("schedules/form.html", status=status, page=page, words=page.words,
                      error=error, field_errors=field_errors or {}, units=UNITS,
                      weekdays=WEEKDAYS, zones=ZONES)


def _schedule(conn: Connection, actor: Actor, sid: int) -> schedules.ScheduleItem:
    return schedules.schedule_info_sync(conn, actor, schedule_id=sid, start=0, end=0)


@pages.get(SCHEDULES + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    _require_manager(ctx)
    actor = ctx.actor
    page = await ctx.runtime.db.run_sync(
        lambda conn: _form_page(conn, actor, None, _new_words(conn, actor)), write=False)
    return _render(ctx, page)


@pages.post(SCHEDULES + "/new")
async def create(ctx: ConsoleContext) -> Response:
    return await _posted(ctx, None)


@pages.get(SCHEDULES + "/{schedule_id}/edit")
async def edit_form(ctx: ConsoleContext) -> Response:
    _require_manager(ctx)
    sid, actor = path_id(ctx, "schedule_id", "schedule"), ctx.actor

    def read(conn: Connection) -> FormPage:
        item = _schedule(conn, actor, sid)
        return _form_page(conn, actor, item, _stored_words(item, actor.now_s))

    return _render(ctx, await ctx.runtime.db.run_sync(read, write=False))


@pages.post(SCHEDULES + "/{schedule_id}/edit")
async def edit(ctx: ConsoleContext) -> Response:
    sid, actor = path_id(ctx, "schedule_id", "schedule"), ctx.actor
    item = await ctx.runtime.db.run_sync(lambda conn: _schedule(conn, actor, sid),
                                         write=False)
    return await _posted(ctx, item)


# --- the posted form ----------------------------------------------------------------------


def apply_action(words: ScheduleWords, action: str, today: str) -> bool:
    """Change the form as a button asks ("add_layer", "remove_layer:1", "add_person:0",
    "remove_person:0:2"); False for any other action (save, preview)."""
    name, _, rest = action.partition(":")
    where = [int(x) for x in rest.split(":") if x.isdigit() and len(x) < 4]
    layers = words.layers
    if name == "add_layer" and len(layers) < MAX_LAYERS:
        layers.append(LayerWords(layer_name=f"Layer {len(layers) + 1}", start=today))
    elif name == "remove_layer" and len(where) == 1 and where[0] < len(layers):
        del layers[where[0]]
    elif name == "add_person" and len(where) == 1 and where[0] < len(layers):
        if len(layers[where[0]].people) < MAX_PEOPLE:
            layers[where[0]].people.append(0)
    elif name == "remove_person" and len(where) == 2 and where[0] < len(layers) \
            and where[1] < len(layers[where[0]].people):
        del layers[where[0]].people[where[1]]
    else:
        return name in ("add_layer", "remove_layer", "add_person", "remove_person")
    return True


def spec_of(words: ScheduleWords, stored: list[schedules.ScheduleLayer]
            ) -> schedules.ScheduleSpec:
    """The service's record of the form's words; `stored`: the schedule's layers, of which
    the form keeps those words cannot say (by position)."""
    if words.time_zone not in _ZONE_SET:
        raise errors.invalid("time_zone", "choose a time zone")
    tz = schedules.zone(words.time_zone)
    layers: list[schedules.LayerIn] = []
    for i, layer in enumerate(words.layers):
        if layer.kept is not None:
            if 0 <= layer.kept < len(stored):
                layers.append(stored_as_input(stored[layer.kept]))
            continue
        layers.append(layer_in(layer, tz, f"layers[{i}]."))
    return schedules.ScheduleSpec(
        schedule_name=words.schedule_name, description=words.description,
        team_id=words.team_id, time_zone=words.time_zone, layers=layers)


def _on_form(exc: errors.ApiError) -> errors.ApiError:
    if isinstance(exc, errors.InvalidParameter) and isinstance(exc.fields.get("field"), str):
        return errors.invalid(form_field(str(exc.fields["field"])),
                              forms.plain(str(exc.fields.get("reason", "is invalid"))))
    return exc


async def _posted(ctx: ConsoleContext, item: schedules.ScheduleItem | None) -> Response:
    _require_manager(ctx)
    actor = ctx.actor
    form = await ctx.form_lists()
    action = (form.get("action") or ["save"])[-1]
    try:
        words = forms.decode(form, ScheduleWords)
    except errors.ApiError as exc:
        words = ScheduleWords(time_zone=item.time_zone if item else "UTC")
        page = await ctx.runtime.db.run_sync(lambda c: _form_page(c, actor, item, words),
                                             write=False)
        return _failed(ctx, page, exc)
    page = await ctx.runtime.db.run_sync(lambda c: _form_page(c, actor, item, words),
                                         write=False)
    today = (schedules.local_datetime(schedules.zone(words.time_zone), actor.now_s).date()
             if words.time_zone in _ZONE_SET else None)
    if apply_action(words, action, today.isoformat() if today else ""):
        return _render(ctx, page)
    stored = item.layers if item else []
    try:
        spec = spec_of(words, stored)
        if action == "preview":
            return _render(ctx, await ctx.runtime.db.run_sync(
                lambda c: _previewed(c, actor, page, spec), write=False))
        async with ctx.write() as conn:
            if item is None:
                sid = await schedules.create_schedule(
                    conn, actor, **msgspec.structs.asdict(spec),
                    deps=ctx.runtime.deps)
            else:
                sid = item.schedule_id
                await schedules.update_schedule(
                    conn, actor, schedule_id=sid, **msgspec.structs.asdict(spec),
                    deps=ctx.runtime.deps)
    except errors.ApiError as exc:
        return _failed(ctx, page, exc)
    ctx.flash(f"The schedule {words.schedule_name.strip()} is saved.")
    return ctx.redirect(f"{SCHEDULES}/{sid}")


def _failed(ctx: ConsoleContext, page: FormPage, exc: errors.ApiError) -> Response:
    shown = _on_form(exc)
    field_errors: dict[str, str] = {}
    if isinstance(shown, errors.InvalidParameter):
        name = shown.fields.get("field")
        if isinstance(name, str):
            field_errors[name] = str(shown.fields.get("reason", ""))
    return _render(ctx, page, status=exc.status, error=ctx.message(shown),
                   field_errors=field_errors)


def _previewed(conn: Connection, actor: Actor, page: FormPage,
               spec: schedules.ScheduleSpec) -> FormPage:
    now = actor.now_s
    item = schedules.preview_sync(conn, actor, time_zone=spec.time_zone, layers=spec.layers,
                                  start=now, end=now + PREVIEW_S)
    ids = {p for layer in item.layers for g in layer.groups
           for p in schedules_view.person_ids(g)}
    names = {p: n for p, n in page.people if p in ids}
    page.preview = schedules_view.shifts(item.final_schedule.schedules, names,
                                         actor.person_id, start=item.start, end=item.end,
                                         now=now)
    page.preview_layers = schedules_view.layer_rows(
        item, names, actor.person_id, schedules.zone(item.time_zone),
        dict(page.calendar_choices), now=now)
    return page


# --- deleting -----------------------------------------------------------------------------


@pages.get(SCHEDULES + "/{schedule_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    _require_manager(ctx)
    sid, actor = path_id(ctx, "schedule_id", "schedule"), ctx.actor
    item = await ctx.runtime.db.run_sync(lambda conn: _schedule(conn, actor, sid),
                                         write=False)
    return ctx.render("schedules/delete.html", schedule=item, error="")


@pages.post(SCHEDULES + "/{schedule_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    sid, actor = path_id(ctx, "schedule_id", "schedule"), ctx.actor
    item: Any = await ctx.runtime.db.run_sync(lambda conn: _schedule(conn, actor, sid),
                                              write=False)
    try:
        async with ctx.write() as conn:
            await schedules.delete_schedules(conn, actor, schedule_ids=[sid])
    except errors.ApiError as exc:
        return ctx.form_failed("schedules/delete.html", exc, schedule=item)
    ctx.flash(f"The schedule {item.schedule_name} is deleted.")
    return ctx.redirect(SCHEDULES)
