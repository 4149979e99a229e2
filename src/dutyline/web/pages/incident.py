"""The incident page, `/console/incidents/<incident_id>`, and its actions.

Each action is a form POST to `/console/incidents/<id>/<action>` that calls the same
lifecycle service as the API's operation, so the feed entry, the event, the permission
check and the audit entry (credential "session") are the service's, not the page's. A
member without incident_manage sees no action, and a forged POST is refused by the service
(403). With htmx the answer is the incident's region, swapped in place; without JavaScript
the browser is sent back to the page (303) with a notice. A refused action (the service
raises) shows its localized message next to the form, keeping what was typed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.access import require
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INCIDENT_MANAGE
from dutyline.incident.service import AssignedTo, editing, lifecycle, responders
from dutyline.web import forms, incident_view
from dutyline.web.context import ConsoleContext
from dutyline.web.page import Pages

pages = Pages()

PAGE = "/console/incidents/{incident_id}"


@dataclass
class Failure:
    """A refused action, shown by its form."""

    action: str
    message: str
    field_errors: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] = field(default_factory=dict)


def _is_htmx(ctx: ConsoleContext) -> bool:
    return ctx.request.headers.get("hx-request") == "true"


async def _view(ctx: ConsoleContext, incident_id: str) -> incident_view.IncidentView:
    # The API's reads of an incident need one of these (incident/query/endpoints.py).
    require(ctx.actor, CHANNEL_VIEW, INCIDENT_MANAGE)
    actor, deps, tz = ctx.actor, ctx.runtime.deps, ctx.zone[1]
    # The page's reads, as one unit on the database (api/operation.py).
    return await ctx.runtime.db.run_sync(lambda conn: incident_view.load_sync(
        conn, actor, incident_id=incident_id, deps=deps, tz=tz), write=False)


def _not_found(ctx: ConsoleContext) -> Response:
    return ctx.render("layout/error.html", status=404, title="Incident not found",
                      message="There is no incident at this address, or you may not see it.")


async def _show(ctx: ConsoleContext, incident_id: str, *, status: int = 200,
                failure: Failure | None = None, notice: str = "",
                fragment: bool = False) -> Response:
    try:
        view = await _view(ctx, incident_id)
    except errors.ResourceNotFound:
        return _not_found(ctx)
    return ctx.render("incidents/_region.html" if fragment else "incidents/incident.html",
                      status=status, view=view, failure=failure, notice=notice,
                      title=view.info.title)


@pages.get(PAGE)
async def incident_page(ctx: ConsoleContext) -> Response:
    return await _show(ctx, ctx.path_params["incident_id"])


# --- the actions ----------------------------------------------------------------------------

Form = dict[str, list[str]]
Action = Callable[[AsyncConnection, Actor, str, Form], Awaitable[str]]
ACTIONS: dict[str, Action] = {}


def action(name: str) -> Callable[[Action], Action]:
    def register(func: Action) -> Action:
        ACTIONS[name] = func
        return func

    return register


def _one(form: Form, name: str) -> str:
    values = form.get(name) or [""]
    return values[0]


def _ids(incident_id: str) -> dict[str, list[str]]:
    return {"incident_ids": [incident_id]}


@action("ack")
async def _ack(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    await lifecycle.ack(conn, actor, incident_ids=[incident_id])
    return "Incident acknowledged."


@action("unack")
async def _unack(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    await lifecycle.unack(conn, actor, incident_ids=[incident_id])
    return "Acknowledgement taken back."


@action("resolve")
async def _resolve(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    await lifecycle.resolve(conn, actor, incident_ids=[incident_id])
    return "Incident resolved."


@action("reopen")
async def _reopen(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    asked = forms.decode(form, lifecycle.ReopenInput, given=_ids(incident_id))
    if not asked.reason.strip():  # the page asks why (the API leaves it to the caller)
        raise errors.invalid("reason", "is required")
    await lifecycle.reopen(conn, actor, incident_ids=asked.incident_ids,
                           reason=asked.reason.strip())
    return "Incident reopened."


@action("comment")
async def _comment(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    asked = forms.decode(form, lifecycle.CommentInput, given=_ids(incident_id))
    await lifecycle.comment(conn, actor, incident_ids=asked.incident_ids,
                            comment=asked.comment)
    return "Comment added."


@action("snooze")
async def _snooze(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    asked = forms.decode(form, lifecycle.SnoozeInput, given=_ids(incident_id))
    await lifecycle.snooze(conn, actor, incident_ids=asked.incident_ids,
                           minutes=asked.minutes)
    return f"Snoozed for {asked.minutes} minutes."


@action("wake")
async def _wake(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    await lifecycle.wake(conn, actor, incident_ids=[incident_id])
    return "Snooze ended."


@action("assign")
async def _assign(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    assigned_to = forms.decode(form, AssignedTo, shown=("person_ids",))
    await editing.assign(conn, actor, incident_ids=[incident_id], assigned_to=assigned_to)
    return "Incident assigned."


@action("responders")
async def _responders(conn: AsyncConnection, actor: Actor, incident_id: str,
                      form: Form) -> str:
    asked = forms.decode(form, responders.RespondersInput, shown=("person_ids",),
                         names={"person_ids": "responder_ids"},
                         given={"incident_id": incident_id})
    added = await responders.add_responders(conn, actor, incident_id=asked.incident_id,
                                            person_ids=asked.person_ids)
    return "Responders added." if added else "They are responding already."


@action("merge")
async def _merge(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    asked = forms.decode(form, editing.MergeInput, names={"comment": "merge_comment"},
                         given={"source_incident_ids": [incident_id]})
    await editing.merge(conn, actor, source_incident_ids=asked.source_incident_ids,
                        target_incident_id=asked.target_incident_id.lower(),
                        comment=asked.comment.strip())
    return "Incident merged."


@action("severity")
async def _severity(conn: AsyncConnection, actor: Actor, incident_id: str,
                    form: Form) -> str:
    asked = forms.decode(form, editing.ResetInput, given={"incident_id": incident_id})
    if asked.incident_severity is None:
        raise errors.invalid("incident_severity", "is required")
    await editing.reset(conn, actor, incident_id=incident_id,
                        incident_severity=asked.incident_severity)
    return "Severity changed."


@action("edit")
async def _edit(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    asked = forms.decode(form, editing.ResetInput, given={"incident_id": incident_id})
    # An empty description is left as it is: the API cannot clear one either.
    await editing.reset(conn, actor, incident_id=incident_id, title=asked.title,
                        description=asked.description or None)
    return "Incident saved."


@action("field")
async def _field(conn: AsyncConnection, actor: Actor, incident_id: str, form: Form) -> str:
    """One custom field: its value as the field's kind of input sends it (the service
    normalizes it to the field's type, as it does the API's strings)."""
    name = _one(form, "field_name")
    kind = _one(form, "field_kind")
    value: Any
    if kind == "checkbox":
        value = "true" if "field_value" in form else "false"
    elif kind == "multi_select":
        chosen = [v for v in form.get("field_value") or [] if v]
        value = msgspec.json.encode(chosen).decode() if chosen else None
    else:
        value = _one(form, "field_value").strip() or None
    await editing.reset_field(conn, actor, incident_id=incident_id, field_name=name,
                              field_value=value)
    return "Field saved."


@pages.post(PAGE + "/{action}")
async def incident_action(ctx: ConsoleContext) -> Response:
    incident_id, name = ctx.path_params["incident_id"], ctx.path_params["action"]
    run = ACTIONS.get(name)
    if run is None:
        return ctx.render("layout/error.html", status=404, title="Page not found",
                          message="There is no page at this address.")
    form = await ctx.form_lists()
    try:
        async with ctx.write() as conn:
            notice = await run(conn, ctx.actor, incident_id.lower(), form)
    except errors.AccessDenied:
        raise  # the page layer answers 403; the page offers this member no action anyway
    except errors.ApiError as exc:
        return await _show(ctx, incident_id, **_refused(ctx, name, exc, form))
    if _is_htmx(ctx):
        return await _show(ctx, incident_id, notice=notice, fragment=True)
    ctx.flash(notice)
    return ctx.redirect(PAGE.format(incident_id=incident_id.lower()))


def _refused(ctx: ConsoleContext, name: str, exc: errors.ApiError,
             form: Form) -> dict[str, Any]:
    """How a refused action is shown: the page again with the message by its form. htmx
    swaps only successful answers, so its fragment is a 200 whose content says no."""
    field_errors: dict[str, str] = {}
    field_name = exc.fields.get("field") if isinstance(exc, errors.InvalidParameter) else None
    reason = exc.fields.get("reason")
    if isinstance(field_name, str) and field_name and isinstance(reason, str):
        field_errors[field_name] = ctx.runtime.translator.render(ctx.locale, reason, {})
    typed = {k: v[0] for k, v in form.items() if v and k != "csrf_token"}
    failure = Failure(name, ctx.message(exc), field_errors, typed)
    if _is_htmx(ctx):
        return {"failure": failure, "fragment": True}
    return {"failure": failure, "status": exc.status}
