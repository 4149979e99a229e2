"""A channel's integrations: where its alerts come in. Adding one by alert source (the
standard API, Prometheus Alertmanager, Grafana, a generic JSON webhook) shows, once, its push
address with the key and a snippet for that source; a key can be rotated (the old one stops
working at once, the new one is shown once); an integration's page lists the last events it
received with what became of them, and sends a test alert through the same ingestion a real
push takes. The same services as /integration/* (and their permissions); no e-mail source,
since the server takes no alerts by e-mail."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from dutyline.api import errors
from dutyline.api.permissions import INTEGRATION_MANAGE
from dutyline.channel import service as channels
from dutyline.channel.integration import service as integrations
from dutyline.incident.service import ingest
from dutyline.kit.vocabulary import CRITICAL, INFO, WARNING
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.integration_snippets import SOURCES, Snippets, snippets
from dutyline.web.listing import path_id
from dutyline.web.page import Pages

pages = Pages()

BASE = "/console/channels/{channel_id}/integrations"
ONE = BASE + "/{integration_id}"
# One channel's integrations: a channel rarely has more than a handful.
MAX_LISTED = 100
TEST_STATUSES = (CRITICAL, WARNING, INFO)
# What became of an event (incident/ingest/outcomes.py), in words (catalog messages).
OUTCOMES = {
    "opened": "Opened an incident",
    "grouped": "Joined an open incident",
    "recovered": "Recovered its alert",
    "held": "Held back by a rule",
    "dropped": "Dropped by a rule",
    "ignored": "Ignored",
    "refused": "Refused",
}


def _base(channel_id: int) -> str:
    return f"/console/channels/{channel_id}/integrations"


def _require_manage(ctx: ConsoleContext) -> None:
    if not ctx.actor.has(INTEGRATION_MANAGE):
        raise errors.AccessDenied()


async def _channel(ctx: ConsoleContext) -> Any:
    channel_id = path_id(ctx, "channel_id", "channel")
    actor = ctx.actor
    return await ctx.runtime.db.run_sync(lambda conn: channels.channel_info_sync(
        conn, actor, channel_id=channel_id), write=False)


async def _integration(ctx: ConsoleContext, channel: Any) -> Any:
    """The integration of the path, not found unless it is a live one of this channel."""
    integration_id = path_id(ctx, "integration_id", "integration")
    actor = ctx.actor
    item = await ctx.runtime.db.run_sync(lambda conn: integrations.integration_info_sync(
        conn, actor, integration_id=integration_id), write=False)
    if item.channel_id != channel.channel_id:
        raise errors.not_found("integration", integration_id)
    return item


def _shown_once(ctx: ConsoleContext, channel: Any, integration_id: int, name: str,
                key: str, source: str, *, rotated: bool) -> Response:
    """The page that shows a key once: never cached, never sent again."""
    response = ctx.render(
        "integrations/key.html", channel=channel, integration_id=integration_id,
        integration_name=name, source=source, rotated=rotated,
        snippets=snippets(ctx.runtime.settings.base_url, key, name), sources=SOURCES)
    response.headers["Cache-Control"] = "no-store"
    return response


# --- the list ---------------------------------------------------------------------------


@pages.get(BASE)
async def integration_list(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    actor = ctx.actor
    total, items = await ctx.runtime.db.run_sync(lambda conn: integrations.list_integrations_sync(
        conn, actor, channel_id=channel.channel_id, offset=0, limit=MAX_LISTED), write=False)
    return ctx.render("integrations/list.html", channel=channel, integrations=items,
                      total=total, can_manage=actor.has(INTEGRATION_MANAGE))


# --- adding one -------------------------------------------------------------------------


@pages.get(BASE + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    channel = await _channel(ctx)
    source = ctx.request.query_params.get("source", "")
    return ctx.render("integrations/new.html", channel=channel, sources=SOURCES,
                      form={"source": source if source in SOURCES else "prometheus"})


@pages.post(BASE + "/new")
async def create(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    form = await ctx.form_lists()
    source = (form.get("source") or [""])[-1]
    context = {"channel": channel, "sources": SOURCES}
    try:
        if source not in SOURCES:
            raise errors.invalid("source", "choose where the alerts come from")
        request = forms.decode(form, integrations.IntegrationInput, given={
            "channel_id": channel.channel_id, "integration_type": integrations.STANDARD})
        async with ctx.write() as conn:
            created = await integrations.create_integration(
                conn, ctx.actor, channel_id=request.channel_id,
                integration_name=request.integration_name,
                integration_type=request.integration_type)
    except errors.ApiError as exc:
        if isinstance(exc, errors.AccessDenied):
            raise
        await ctx.form()  # what was typed, shown again
        return ctx.form_failed("integrations/new.html", forms.on_form(exc, form=form),
                               **context)
    return _shown_once(ctx, channel, created.integration_id, created.integration_name,
                       created.integration_key, source, rotated=False)


# --- one integration --------------------------------------------------------------------


@pages.get(ONE)
async def integration_page(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    actor = ctx.actor
    events = await ctx.runtime.db.run_sync(lambda conn: ingest.recent_outcomes_sync(
        conn, actor, integration_id=item.integration_id), write=False)
    return ctx.render(
        "integrations/integration.html", channel=channel, integration=item, events=events,
        can_manage=actor.has(INTEGRATION_MANAGE), statuses=TEST_STATUSES, sources=SOURCES,
        outcomes=OUTCOMES,
        snippets=snippets(ctx.runtime.settings.base_url, "", item.integration_name,
                          masked_suffix=item.key_suffix))


@pages.post(ONE + "/test-alert")
async def test_alert(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    status = (await ctx.form()).get("event_status", CRITICAL)
    page = f"{_base(channel.channel_id)}/{item.integration_id}"
    try:
        async with ctx.write() as conn:
            sent = await ingest.send_test_alert(
                conn, ctx.actor, integration_id=item.integration_id,
                event_status=status if status in TEST_STATUSES else CRITICAL)
    except errors.ApiError as exc:
        if isinstance(exc, errors.AccessDenied | errors.ResourceNotFound):
            raise
        ctx.flash(f"The test alert was refused: {ctx.message(exc)}", "error")
        return ctx.redirect(page + "#events")
    ctx.flash(_said(sent))
    return ctx.redirect(page + "#events")


def _said(sent: Any) -> str:
    incident = f" {sent.incident_id}" if sent.incident_id else ""
    return {
        "opened": f"The test alert opened the incident{incident}.",
        "grouped": f"The test alert joined the open incident{incident}.",
        "held": "The test alert is held back by a silence or an inhibit rule.",
        "dropped": f"The test alert was dropped: {sent.reason}.",
    }.get(sent.outcome, f"The test alert was received: {sent.outcome}.")


# --- rotating the key -------------------------------------------------------------------


@pages.get(ONE + "/rotate")
async def rotate_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    return ctx.render("integrations/rotate.html", channel=channel, integration=item,
                      sources=SOURCES, form={"source": "standard"})


@pages.post(ONE + "/rotate")
async def rotate(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    source = (await ctx.form()).get("source", "standard")
    try:
        async with ctx.write() as conn:
            rotated = await integrations.rotate_key(conn, ctx.actor,
                                                    integration_id=item.integration_id)
    except errors.ApiError as exc:
        if isinstance(exc, errors.AccessDenied | errors.ResourceNotFound):
            raise
        return ctx.form_failed("integrations/rotate.html", exc, channel=channel,
                               integration=item, sources=SOURCES)
    return _shown_once(ctx, channel, item.integration_id, item.integration_name,
                       rotated.integration_key, source if source in SOURCES else "standard",
                       rotated=True)


# --- deleting ---------------------------------------------------------------------------


@pages.get(ONE + "/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    _require_manage(ctx)
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    return ctx.render("integrations/delete.html", channel=channel, integration=item,
                      error="")


@pages.post(ONE + "/delete")
async def delete(ctx: ConsoleContext) -> Response:
    channel = await _channel(ctx)
    item = await _integration(ctx, channel)
    try:
        async with ctx.write() as conn:
            await integrations.delete_integration(conn, ctx.actor,
                                                  integration_id=item.integration_id)
    except errors.ApiError as exc:
        if isinstance(exc, errors.AccessDenied | errors.ResourceNotFound):
            raise
        return ctx.form_failed("integrations/delete.html", exc, channel=channel,
                               integration=item)
    ctx.flash(f"The integration {item.integration_name} is deleted; its key no longer works.")
    return ctx.redirect(_base(channel.channel_id))


__all__ = ["Snippets", "pages"]
