"""The "On call" page: who holds each schedule now and next, whom each layer of each
escalation rule pages now, the signed-in person's shifts for the coming four weeks, and their
calendar link.

Everything comes from the services behind the API's /schedule/* and
/channel/escalate/rule/* operations, with their permission checks: a part the person may not
read through the API is left out with a word why, never an error page. Without
schedule_view the person's own shifts come from the schedule list's timelines, which the API
gives to any member."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import SCHEDULE_VIEW
from dutyline.channel import service as channels
from dutyline.dispatch import service as rules
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.schedule import service as schedules
from dutyline.web import times
from dutyline.web.context import ConsoleContext
from dutyline.web.page import Pages
from dutyline.web.pages import oncall_view as view

pages = Pages()

PATH = "/console/on-call"
MY_SHIFTS_S = 28 * 86_400
_PAGE = 100


@dataclass(frozen=True)
class OnCall:
    zone_name: str
    zone_abbreviation: str  # now: CET in winter, CEST in summer
    schedules: list[view.ScheduleRow]
    rules: list[view.RuleRow] | None  # None: the person may not read escalation rules
    days: list[view.Day]
    feed_since: view.Moment | None


@pages.get(PATH)
async def on_call(ctx: ConsoleContext) -> Response:
    actor = ctx.actor
    # As the /schedule/* reads do: one unit on the database (api/operation.py).
    page = await ctx.runtime.db.run_sync(lambda sync: gather(sync, actor, _rules(sync, actor)),
                                         write=False)
    return ctx.render("oncall/oncall.html", title="On call", page=page,
                      can_open_schedules=actor.has(SCHEDULE_VIEW))


@pages.get("/console/oncall")
async def on_call_elsewhere(ctx: ConsoleContext) -> Response:
    return ctx.redirect(PATH)


@pages.post(PATH + "/calendar")
async def create_calendar_link(ctx: ConsoleContext) -> Response:
    """A new link (the previous one, if any, stops working)."""
    async with ctx.write() as conn:
        url, _ = await schedules.create_feed(conn, ctx.actor, deps=ctx.runtime.deps)
    # The URL is the credential and is shown once: in this answer, not through a redirect
    # that would carry it in a cookie.
    return ctx.render("oncall/calendar.html", title="Your calendar link", feed_url=url)


@pages.post(PATH + "/calendar/revoke")
async def revoke_calendar_link(ctx: ConsoleContext) -> Response:
    async with ctx.write() as conn:
        await schedules.revoke_feed(conn, ctx.actor)
    ctx.flash("Your calendar link is revoked: calendars that use it stop updating.")
    return ctx.redirect(PATH)


# --- reading -------------------------------------------------------------------------------


def gather(conn: Connection, actor: Actor,
           found_rules: list[tuple[str, Any]] | None) -> OnCall:
    """The page from the services' sync forms; `found_rules`: what `_rules` found."""
    me = members.member_info_sync(conn, actor)
    zone_name, tz = times.reader_zone(me.time_zone, me.account_time_zone)
    now = actor.now_s
    horizon = now + MY_SHIFTS_S
    try:
        mine: list[schedules.ScheduleItem] | None = schedules.my_schedules_sync(
            conn, actor, start=now, end=horizon)
    except errors.AccessDenied:
        mine = None
    # Without the person's own view, the list's timelines of the same four weeks hold them.
    listed = _all_schedules(conn, actor, window=(now, horizon) if mine is None else (0, 0))
    per_rule = [view.layer_targets(r.layers) for _, r in found_rules or []]
    targets = [target for layers in per_rule for target in layers]
    team_ids = sorted({int(t) for target in targets for t in target.get("team_ids") or ()})
    named_teams = teams.team_infos_sync(conn, actor, team_ids=team_ids)
    team_names = {t.team_id: t.team_name for t in named_teams}
    team_members = {t.team_id: t.person_ids for t in named_teams}
    on_call = _on_call(conn, actor, targets, now)
    wanted = view.person_ids_of_turns(listed) | {
        int(p) for target in targets for p in target.get("person_ids") or ()}
    wanted |= {p for persons in [*team_members.values(), *on_call.values()] for p in persons}
    infos = members.person_infos_sync(conn, actor, person_ids=sorted(wanted))
    # Who is on call (schedules, and the teams and schedules rules name) is the services'
    # answer, removed members already left out as the engine leaves them out.
    names = view.Names({i.person_id: i.person_name for i in infos}, actor.person_id)
    resolved = view.Resolved(
        names=names, team_names=team_names, team_members=team_members,
        schedule_names={s.schedule_id: s.schedule_name or "" for s in listed},
        on_call=on_call,
        removed=frozenset(i.person_id for i in infos if i.status == "deleted"))
    rule_rows = None if found_rules is None else [
        view.RuleRow(rule.rule_name, channel_name, rule.status == "enabled",
                     [view.targets(target, resolved) for target in layers],
                     f"/console/channels/{rule.channel_id}/escalation-rules/{rule.rule_id}")
        for (channel_name, rule), layers in zip(found_rules, per_rule, strict=True)]
    since = schedules.feed_created_at_sync(conn, actor)
    return OnCall(
        zone_name=zone_name,
        zone_abbreviation=times.abbreviation(times.local(now, tz)),
        schedules=view.schedule_rows(listed, names, tz, now),
        rules=rule_rows,
        days=view.my_days(listed if mine is None else mine, actor.person_id, tz,
                          now_s=now, end_s=horizon),
        feed_since=None if since is None else view.moment(since, tz))


def _all_schedules(conn: Connection, actor: Actor, *,
                   window: tuple[int, int]) -> list[schedules.ScheduleItem]:
    out: list[schedules.ScheduleItem] = []
    p = 1
    while True:
        total, items = schedules.list_schedules_sync(
            conn, actor, query="", p=p, limit=_PAGE, is_my_team=False, is_my_manage=False,
            team_ids=None, start=window[0], end=window[1])
        out += items
        if not items or len(out) >= total or p * _PAGE >= 10_000:
            return out
        p += 1


def _rules(conn: Connection, actor: Actor) -> list[tuple[str, Any]] | None:
    """(channel name, rule) of every channel the person sees, channels by name."""
    try:
        visible: list[Any] = []
        by_name = channels.ChannelQuery(orderby="channel_name", asc=True, is_brief=True)
        while True:
            total, page = channels.list_channels_sync(conn, actor, q=by_name,
                                                   offset=len(visible), limit=_PAGE)
            visible += page
            if not page or len(visible) >= total:
                break
        by_channel: dict[int, list[Any]] = {}
        ids = [c.channel_id for c in visible]
        for i in range(0, len(ids), _PAGE):
            for rule in rules.rules_of_channels_sync(conn, actor,
                                                    channel_ids=ids[i:i + _PAGE]):
                by_channel.setdefault(rule.channel_id, []).append(rule)
    except errors.AccessDenied:
        return None
    return [(c.channel_name, rule) for c in visible for rule in by_channel.get(c.channel_id, [])]


def _on_call(conn: Connection, actor: Actor, targets: list[dict[str, Any]],
             at_s: int) -> dict[tuple[int, tuple[int, ...]], list[int]]:
    """Who each (schedule, roles) the rules name has on call now, as the engine would page."""
    by_roles: dict[tuple[int, ...], set[int]] = {}
    for target in targets:
        for sid, roles in view.schedule_roles(target).items():
            by_roles.setdefault(roles, set()).add(sid)
    out: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for roles, sids in by_roles.items():
        found = schedules.oncall_for_schedules_sync(
            conn, actor, schedule_role_ids={sid: list(roles) for sid in sids}, at_s=at_s)
        out.update({(sid, roles): persons for sid, persons in found.items()})
    return out
