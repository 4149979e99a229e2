"""The Schedules pages: the account's on-call schedules (what /schedule/list gives every
member), a schedule's page (its layers' turns and the final result over the coming weeks, as
/schedule/info computes them), overrides by form, "take this shift", and the calendar link.
Creating and editing, in words, is in schedules_form.py; all through the schedule service the
API calls, with its permission checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import SCHEDULE_MANAGE
from dutyline.platform.calendar import service as calendars
from dutyline.platform.member import service as members
from dutyline.schedule import service as schedules
from dutyline.schedule.service import (
    LayerIn,
    ScheduleGroup,
    ScheduleItem,
    ScheduleListRequest,
    ScheduleMember,
    zone,
)
from dutyline.web import times
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import (
    MAX_GATHERED_PAGES,
    PAGE_SIZE,
    SERVICE_PAGE,
    Paging,
    page_number,
    path_id,
    search_text,
)
from dutyline.web.page import Pages
from dutyline.web.pages import oncall_view, schedules_view
from dutyline.web.pages.schedule_words import local_instant, stored_as_input

pages = Pages()

SCHEDULES = "/console/schedules"
WEEK = 7 * 86_400
# /schedule/info computes at most 45 days: six weeks fit.
MAX_WEEKS = 6
DEFAULT_WEEKS = 2
_INFOS_BATCH = 100
GROUP_NAME_MAX = 40


@pages.get(SCHEDULES)
async def schedule_list(ctx: ConsoleContext) -> Response:
    query, number = search_text(ctx, ScheduleListRequest), page_number(ctx)
    actor = ctx.actor

    def read(conn: Connection) -> tuple[int, list[Any], dict[int, str]]:
        total, items = schedules.list_schedules_sync(
            conn, actor, query=query, p=number, limit=PAGE_SIZE, is_my_team=False,
            is_my_manage=False, team_ids=None, start=0, end=0)
        ids = {p for i in items for held in (i.cur_oncall, i.next_oncall) if held
               for p in schedules_view.person_ids(held.group)}
        return total, items, _names(conn, actor, ids)

    total, items, names = await ctx.runtime.db.run_sync(read, write=False)
    rows = [(i, schedules_view.names_of(schedules_view.person_ids(i.cur_oncall.group), names)
             if i.cur_oncall else []) for i in items]
    return ctx.render("schedules/list.html", rows=rows, query=query,
                      paging=Paging(number, total, PAGE_SIZE),
                      can_manage=actor.has(SCHEDULE_MANAGE))


def _names(conn: Connection, actor: Actor, ids: set[int]) -> dict[int, str]:
    ordered = sorted(ids)
    out: dict[int, str] = {}
    for start in range(0, len(ordered), _INFOS_BATCH):
        for p in members.person_infos_sync(conn, actor,
                                           person_ids=ordered[start:start + _INFOS_BATCH]):
            out[p.person_id] = p.person_name + (" (you)" if p.person_id == actor.person_id
                                                else "")
    return out


def account_people(conn: Connection, actor: Actor) -> list[tuple[int, str]]:
    """(person id, name) of the account's members by name, for pickers (bounded, as
    listing.all_members)."""
    people: list[tuple[int, str]] = []
    for page in range(MAX_GATHERED_PAGES):
        total, items = members.list_members_sync(
            conn, actor, orderby="created_at", asc=True, offset=page * SERVICE_PAGE,
            limit=SERVICE_PAGE)
        people += [(m.member_id, m.member_name) for m in items]
        if len(people) >= total or not items:
            break
    return sorted(people, key=lambda p: p[1].casefold())


# --- a schedule's page -------------------------------------------------------------------------


@dataclass(frozen=True)
class SchedulePage:
    item: ScheduleItem
    reader_zone: str
    layers: list[schedules_view.LayerRow]
    final: list[schedules_view.Shift]
    overrides: list[schedules_view.Override]
    now: oncall_view.Turn | None
    next: oncall_view.Turn | None
    now_open: bool  # the current turn does not end within what the service computes
    people: list[tuple[int, str]]  # the account's members, for the override form
    names: dict[int, str]  # everyone the page names, "(you)" marked
    override_from: str
    override_to: str
    weeks: int
    feed_since: int | None


def _weeks(ctx: ConsoleContext) -> int:
    raw = ctx.request.query_params.get("weeks", "")
    return min(max(int(raw), 1), MAX_WEEKS) if raw.isdigit() and len(raw) < 3 else DEFAULT_WEEKS


def gather(conn: Connection, actor: Actor, schedule_id: int, weeks: int) -> SchedulePage:
    now = actor.now_s
    window = min(weeks * WEEK, schedules.WINDOW_MAX_S)
    item = schedules.schedule_info_sync(conn, actor, schedule_id=schedule_id, start=now,
                                        end=now + window)
    me = members.member_info_sync(conn, actor)
    reader_zone, reader_tz = times.reader_zone(me.time_zone, me.account_time_zone)
    tz = zone(item.time_zone)
    named = {p for layer in item.layers for g in layer.groups
             for p in schedules_view.person_ids(g)}
    names = _names(conn, actor, named | {actor.person_id})
    cal_names = {c.cal_id: c.cal_name for c in calendars.list_calendars_sync(conn, actor)}
    on_names = oncall_view.Names({k: v.removesuffix(" (you)") for k, v in names.items()},
                                 actor.person_id)
    from_value, to_value = schedules_view.default_window(now, tz)
    held = item.cur_oncall
    return SchedulePage(
        item=item, reader_zone=reader_zone,
        layers=schedules_view.layer_rows(item, names, actor.person_id, tz, cal_names, now=now),
        final=schedules_view.shifts(item.final_schedule.schedules, names, actor.person_id,
                                    start=item.start, end=item.end, now=now),
        overrides=schedules_view.overrides(item, names, now=now),
        now=oncall_view.turn(held, on_names, reader_tz),
        next=oncall_view.turn(item.next_oncall, on_names, reader_tz),
        now_open=held is not None and oncall_view.open_ended(held, now),
        people=account_people(conn, actor) if actor.has(SCHEDULE_MANAGE) else [],
        names=names,
        override_from=from_value, override_to=to_value, weeks=weeks,
        feed_since=schedules.feed_created_at_sync(conn, actor))


async def _page(ctx: ConsoleContext, schedule_id: int, weeks: int) -> SchedulePage:
    actor = ctx.actor
    return await ctx.runtime.db.run_sync(lambda conn: gather(conn, actor, schedule_id, weeks),
                                         write=False)


def _render_page(ctx: ConsoleContext, page: SchedulePage, *, status: int = 200,
                 error: str = "", field_errors: dict[str, str] | None = None,
                 form: dict[str, str] | None = None) -> Response:
    return ctx.render("schedules/schedule.html", status=status, page=page, error=error,
                      field_errors=field_errors or {}, form=form or {},
                      can_manage=ctx.actor.has(SCHEDULE_MANAGE))


@pages.get(SCHEDULES + "/{schedule_id}")
async def schedule_page(ctx: ConsoleContext) -> Response:
    page = await _page(ctx, path_id(ctx, "schedule_id", "schedule"), _weeks(ctx))
    return _render_page(ctx, page)


# --- overrides and taking a shift ---------------------------------------------------------


def _with_override(item: ScheduleItem, group: ScheduleGroup) -> list[LayerIn]:
    """The schedule's layers, unchanged, with `group` added to its first override layer (a
    new one on top when it has none): a later window of the layer wins where they overlap."""
    layers = [stored_as_input(layer) for layer in item.layers]
    for layer in layers:
        if layer.mode == 1:
            layer.groups = [*(layer.groups or []), group]
            return layers
    return [*layers, LayerIn(layer_name="Overrides", mode=1, groups=[group])]


def _cover(person_id: int, names: dict[int, str], covered: int | None, start: int,
           end: int) -> ScheduleGroup:
    who = names.get(person_id, "")
    label = f"{who} covers {names[covered]}" if covered in names else f"{who} covers"
    return ScheduleGroup(group_name=label[:GROUP_NAME_MAX].strip(), members=[
        ScheduleMember(person_ids=[person_id])], start=start, end=end)


async def _save_layers(ctx: ConsoleContext, item: ScheduleItem, layers: list[LayerIn]) -> None:
    async with ctx.write() as conn:
        await schedules.update_schedule(
            conn, ctx.actor, schedule_id=item.schedule_id, schedule_name=None,
            description=None, team_id=None, time_zone=None, layers=layers, notify=None,
            deps=ctx.runtime.deps)


def _person(form: dict[str, str], name: str) -> int | None:
    raw = form.get(name, "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 19 else None


@pages.post(SCHEDULES + "/{schedule_id}/override")
async def add_override(ctx: ConsoleContext) -> Response:
    sid = path_id(ctx, "schedule_id", "schedule")
    if not ctx.actor.has(SCHEDULE_MANAGE):  # the form is offered to managers only
        raise errors.AccessDenied()
    page = await _page(ctx, sid, DEFAULT_WEEKS)
    form = await ctx.form()
    tz = zone(page.item.time_zone)
    names = dict(page.people)
    try:
        person = _person(form, "person_id")
        if person is None or person not in names:
            raise errors.invalid("person_id", "choose who covers")
        start = local_instant(form.get("start", ""), tz, "start")
        end = local_instant(form.get("end", ""), tz, "end")
        if end <= start:
            raise errors.invalid("end", "must be after the start")
        group = _cover(person, names, _person(form, "covered_id"), start, end)
        await _save_layers(ctx, page.item, _with_override(page.item, group))
    except errors.ApiError as exc:
        field_errors: dict[str, str] = {}
        field = exc.fields.get("field") if isinstance(exc, errors.InvalidParameter) else None
        if isinstance(field, str) and field in ("person_id", "start", "end"):
            field_errors[field] = str(exc.fields.get("reason", ""))
        return _render_page(ctx, page, status=exc.status, error=ctx.message(exc),
                            field_errors=field_errors, form=form)
    ctx.flash(f"{names[person]} covers from {form['start'].replace('T', ' ')} to "
              f"{form['end'].replace('T', ' ')} ({page.item.time_zone}).")
    return ctx.redirect(f"{SCHEDULES}/{sid}")


@pages.post(SCHEDULES + "/{schedule_id}/take")
async def take_shift(ctx: ConsoleContext) -> Response:
    """The reader covers a turn of the final result, from now (or its start) to its end."""
    sid = path_id(ctx, "schedule_id", "schedule")
    page = await _page(ctx, sid, MAX_WEEKS)
    form = await ctx.form()
    wanted = (form.get("start", ""), form.get("end", ""))
    shift = next((s for s in page.final if (str(s.start), str(s.end)) == wanted), None)
    if shift is None or shift.mine or shift.end <= ctx.actor.now_s:
        ctx.flash("That shift has changed since the page was shown: see the schedule as it "
                  "is now.", "error")
        return ctx.redirect(f"{SCHEDULES}/{sid}")
    me = ctx.actor.person_id
    names = {p: n.removesuffix(" (you)") for p, n in page.names.items()}
    start, end = shift.takes
    group = _cover(me, names, shift.person_ids[0] if shift.person_ids else None, start, end)
    try:
        await _save_layers(ctx, page.item, _with_override(page.item, group))
    except errors.ApiError as exc:
        return _render_page(ctx, page, status=exc.status, error=ctx.message(exc))
    ctx.flash("You have taken the shift.")
    return ctx.redirect(f"{SCHEDULES}/{sid}")


@pages.post(SCHEDULES + "/{schedule_id}/override/remove")
async def remove_override(ctx: ConsoleContext) -> Response:
    sid = path_id(ctx, "schedule_id", "schedule")
    page = await _page(ctx, sid, DEFAULT_WEEKS)
    form = await ctx.form()
    found = next((o for o in page.overrides
                  if (str(o.layer), str(o.group)) == (form.get("layer"), form.get("group"))),
                 None)
    if found is None:
        ctx.flash("That override has changed since the page was shown.", "error")
        return ctx.redirect(f"{SCHEDULES}/{sid}")
    layers = [stored_as_input(layer) for layer in page.item.layers]
    kept = [g for j, g in enumerate(layers[found.layer].groups or []) if j != found.group]
    if kept:
        layers[found.layer].groups = kept
    else:
        del layers[found.layer]
    try:
        await _save_layers(ctx, page.item, layers)
    except errors.ApiError as exc:
        return _render_page(ctx, page, status=exc.status, error=ctx.message(exc))
    ctx.flash("The override is removed.")
    return ctx.redirect(f"{SCHEDULES}/{sid}")


@pages.post(SCHEDULES + "/{schedule_id}/calendar")
async def calendar_link(ctx: ConsoleContext) -> Response:
    """The reader's calendar address (their shifts of every schedule), made anew: the
    previous one stops working. Shown once, in this answer."""
    sid = path_id(ctx, "schedule_id", "schedule")
    async with ctx.write() as conn:
        url, _ = await schedules.create_feed(conn, ctx.actor, deps=ctx.runtime.deps)
    return ctx.render("schedules/calendar.html", feed_url=url,
                      back=f"{SCHEDULES}/{sid}")
