"""Rules of notification templates: names unique per account, bodies that compile,
team data-permission, the preset, preview, and rendering for delivery with fallback.
Writes need template management and note their audit entry (the template's id); reads need
template viewing (which management implies). Rendering for delivery checks nothing: it serves
the engine."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio.to_thread
import structlog
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import TEMPLATE_MANAGE, TEMPLATE_VIEW
from dutyline.kit.filters import FilterError, compile_regex
from dutyline.kit.gotemplate import TemplateError, TemplateLimitError
from dutyline.kit.ids import hex_id
from dutyline.notify.template import engine
from dutyline.notify.template import repository as repo
from dutyline.notify.template.data import incident_data, sample_data
from dutyline.notify.template.defaults import (
    CHANNELS,
    DEFAULT_BODIES,
    HTML_CHANNELS,
    PRESET_IDS,
    PRESET_NAME,
    PRESET_TEMPLATE_ID,
    SIZE_LIMITS,
)
from dutyline.notify.template.incident_source import incident_template_data
from dutyline.notify.template.schemas import (
    RenderedMessage,
    TemplateBodies,
    TemplateCreateRequest,
    TemplateCreateResponse,
    TemplateItem,
    TemplateListRequest,
    TemplateListResponse,
    TemplatePreviewResponse,
    TemplateUpdateRequest,
    item_from_row,
)
from dutyline.platform.team import service as teams

# What the console's template editor reads besides the operations (web/pages/
# notify_templates.py): the records its form decodes into, the channels with their defaults
# and size limits, and the data a body is rendered with.
__all__ = ["CHANNELS", "DEFAULT_BODIES", "HTML_CHANNELS", "SIZE_LIMITS", "TemplateBodies",
           "TemplateCreateRequest", "TemplateItem", "TemplateListRequest",
           "TemplateUpdateRequest", "incident_data"]

log = structlog.get_logger("dutyline.notify.template")

# Render failures that fell back to the default, by channel (also logged one line each).
RENDER_FAILURES: Counter[str] = Counter()


# -- validation ------------------------------------------------------------------------------

def validate_bodies(bodies: dict[str, str], now_s: int, base_url: str) -> None:
    """Each non-empty body must parse (unknown functions included) and render the sample
    incident within the sandbox bounds; else 400 naming the channel field."""
    sample = sample_data(now_s, base_url)
    for channel in CHANNELS:
        source = bodies.get(channel, "")
        if not source:
            continue
        try:
            tmpl = engine.compile_for(channel, source)
        except TemplateError as e:
            raise errors.invalid(channel, str(e)) from None
        try:
            engine.render(tmpl, sample, now=lambda: float(now_s))
        except TemplateLimitError as e:
            raise errors.invalid(channel, str(e)) from None
        except TemplateError:
            pass  # data-dependent: the sample incident is not every incident


async def _check_team(conn: AsyncConnection, actor: Actor, team_id: int) -> None:
    if not team_id:
        return
    if not await teams.existing_team_ids(conn, actor, [team_id]):
        raise errors.not_found("team", team_id)
    if not actor.is_admin and team_id not in await actor.team_ids():
        raise errors.AccessDenied()


def _name_key(name: str) -> str:
    return name.strip().lower()


# -- operations ------------------------------------------------------------------------------

@writes("/template/create", TEMPLATE_MANAGE,
        targets=lambda created: [created.template_id])
async def create_template(conn: AsyncConnection, actor: Actor, *, template_name: str,
                          team_id: int, description: str, bodies: dict[str, str],
                          deps: Deps) -> TemplateCreateResponse:
    name = template_name.strip()
    if not name:
        raise errors.invalid("template_name", "is required")
    await _check_team(conn, actor, team_id)
    await anyio.to_thread.run_sync(validate_bodies, bodies, actor.now_s, deps.base_url)
    if await repo.name_taken(conn, actor.account_id, _name_key(name)):
        raise errors.invalid("template_name", "already exists")
    template_id = hex_id()
    now = actor.now_s
    try:
        await repo.insert_template(conn, {
            "template_id": template_id, "account_id": actor.account_id, "team_id": team_id,
            "template_name": name, "name_key": _name_key(name), "description": description,
            "status": "enabled", "creator_id": actor.person_id, "updated_by": actor.person_id,
            "created_at": now, "updated_at": now, **bodies,
        })
    except IntegrityError:
        raise errors.invalid("template_name", "already exists") from None
    return TemplateCreateResponse(template_id=template_id, template_name=name)


def preset_item(account_id: int) -> TemplateItem:
    return TemplateItem(
        account_id=account_id, team_id=0, template_id=PRESET_TEMPLATE_ID,
        template_name=PRESET_NAME, description="Built-in default template",
        status="enabled", creator_id=0, updated_by=0, created_at=0, updated_at=0,
        preset=True, **DEFAULT_BODIES,
    )


@reads_sync(TEMPLATE_VIEW)
def template_info_sync(conn: Connection, actor: Actor, *, template_id: str) -> TemplateItem:
    template_id = template_id.lower()
    if template_id in PRESET_IDS:
        return preset_item(actor.account_id)
    row = repo.get_live_sync(conn, actor.account_id, template_id)
    if row is None:
        raise errors.not_found("template", template_id)
    return item_from_row(row)


def default_template_id(actor: Actor) -> str:
    """The template a record that names none uses: the account's default, which is the
    built-in preset (an account has no default of its own to choose)."""
    return PRESET_TEMPLATE_ID


async def template_exists(conn: AsyncConnection, actor: Actor, template_id: str) -> bool:
    """Whether another record may name this template: one of the account's live templates,
    or a built-in preset (every account's)."""
    template_id = template_id.lower()
    return (template_id in PRESET_IDS
            or await repo.get_live(conn, actor.account_id, template_id) is not None)



def _name_matcher(query: str) -> Any:
    """A list's `query` (the reference: "regex or substring match on template_name"): a
    case-insensitive substring of the name, or an RE2 expression found in it. RE2 runs in
    linear time, so no query can backtrack; one that is not valid RE2 is a substring only."""
    query = query.strip()
    if not query:
        return lambda _name: True
    low = query.lower()
    try:
        pattern = compile_regex("(?i)" + query, "query")
    except FilterError:
        return lambda name: low in name.lower()
    return lambda name: low in name.lower() or pattern.search(name) is not None


@reads_sync(TEMPLATE_VIEW)
def list_templates_sync(conn: Connection, actor: Actor, *, p: int, limit: int,
                        orderby: str, asc: bool, is_my_team: bool,
                        team_ids: list[int] | None, creator_id: int | None, query: str
                        ) -> TemplateListResponse:
    scope: list[int] | None
    if is_my_team:
        scope = sorted(actor.team_ids_sync(conn))
    else:
        scope = list(dict.fromkeys(team_ids)) if team_ids else None
    rows = repo.list_live_sync(conn, actor.account_id, team_ids=scope, creator_id=creator_id,
                               orderby=orderby, asc=asc)
    matches = _name_matcher(query)
    items = [item_from_row(r) for r in rows if matches(r.template_name)]
    # The preset heads the list (account-wide, made by nobody) whenever the filters take
    # it, so a rule can name it without its id being looked up elsewhere.
    if (scope is None or 0 in scope) and not creator_id and matches(PRESET_NAME):
        items.insert(0, preset_item(actor.account_id))
    start = (p - 1) * limit
    return TemplateListResponse(total=len(items), has_next_page=len(items) > start + limit,
                                items=items[start : start + limit])


async def _require_writable(conn: AsyncConnection, actor: Actor, template_id: str,
                            action: str) -> Any:
    template_id = template_id.lower()
    if template_id in PRESET_IDS:
        raise errors.invalid("template_id", f"is the built-in preset template, which cannot "
                                            f"be {action}: create a template of your own")
    row = await repo.get_live(conn, actor.account_id, template_id)
    if row is None:
        raise errors.not_found("template", template_id)
    if row.team_id and not actor.is_admin and row.team_id not in await actor.team_ids():
        raise errors.AccessDenied()
    return row


@writes("/template/update", TEMPLATE_MANAGE)
async def update_template(conn: AsyncConnection, actor: Actor, *, template_id: str,
                          template_name: str, team_id: int, description: str,
                          bodies: dict[str, str], deps: Deps) -> None:
    row = await _require_writable(conn, actor, template_id, "updated")
    name = template_name.strip()
    if not name:
        raise errors.invalid("template_name", "is required")
    if team_id != row.team_id:
        await _check_team(conn, actor, team_id)
    await anyio.to_thread.run_sync(validate_bodies, bodies, actor.now_s, deps.base_url)
    if await repo.name_taken(conn, actor.account_id, _name_key(name), row.template_id):
        raise errors.invalid("template_name", "already exists")
    try:
        await repo.update_template(conn, actor.account_id, row.template_id, {
            "template_name": name, "name_key": _name_key(name), "team_id": team_id,
            "description": description, "updated_by": actor.person_id,
            "updated_at": actor.now_s, **bodies,
        })
    except IntegrityError:
        raise errors.invalid("template_name", "already exists") from None
    actor.note_audit_targets(row.template_id)


@writes("/template/delete", TEMPLATE_MANAGE)
async def delete_template(conn: AsyncConnection, actor: Actor, *, template_id: str) -> None:
    row = await _require_writable(conn, actor, template_id, "deleted")
    await repo.update_template(conn, actor.account_id, row.template_id, {
        "deleted_at": actor.now_s, "status": "deleted", "updated_by": actor.person_id,
        "updated_at": actor.now_s, "name_key": f"~deleted~{row.template_id}",
    })
    actor.note_audit_targets(row.template_id)


# -- rendering -------------------------------------------------------------------------------

def truncate_bytes(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[:limit].decode(errors="ignore")


@reads(TEMPLATE_VIEW)
async def preview(conn: AsyncConnection, actor: Actor, *, channel: str, content: str,
                  incident_id: str | None, deps: Deps) -> TemplatePreviewResponse:
    if incident_id:
        data = await incident_template_data(conn, actor, incident_id=incident_id.lower(),
                                            deps=deps)
    else:
        data = sample_data(actor.now_s, deps.base_url)
    try:
        text = await engine.render_off_loop(channel, content, data,
                                            tz=str(data.get("AccountTimeZone") or ""),
                                            now=actor.clock.now)
    except TemplateLimitError as e:
        raise errors.invalid("content", str(e)) from None
    except TemplateError as e:
        return TemplatePreviewResponse(success=False, content="", message=str(e))
    limit = SIZE_LIMITS.get(channel)
    size = len(text.encode())
    if limit is not None and size > limit:
        return TemplatePreviewResponse(
            success=True, content=text,
            message=f"the rendered message is {size} bytes, over the {channel} limit of "
                    f"{limit} bytes: delivery truncates it")
    return TemplatePreviewResponse(success=True, content=text, message="")


def has_body_for(channel: str) -> bool:
    """Whether templates carry a body for this channel (email, sms, the chat platforms...)."""
    return channel in DEFAULT_BODIES


async def render_for_incident(conn: AsyncConnection, actor: Actor, *, template_id: str | None,
                              channel: str, incident_id: str, deps: Deps
                              ) -> RenderedMessage:
    """The message of `channel` for an incident with the chosen template (None or the
    preset: the built-in default); the server's base URL makes its links absolute. A
    template that fails to render, or is gone, falls back to the default; the failure is
    counted, logged and returned in `error`. The text is truncated to the channel's size
    limit."""
    if channel not in DEFAULT_BODIES:
        raise errors.invalid("channel", "is not a template channel")
    data = await incident_template_data(conn, actor, incident_id=incident_id.lower(),
                                        deps=deps)
    tz = str(data.get("AccountTimeZone") or "")
    source, error = "", ""
    if template_id and template_id.lower() not in PRESET_IDS:
        row = await repo.get_live(conn, actor.account_id, template_id.lower())
        if row is None:
            error = f"template {template_id} not found"
        else:
            source = getattr(row, channel)
    fell_back = bool(error)
    text = ""
    if source:
        try:
            text = await engine.render_off_loop(channel, source, data, tz=tz,
                                                now=actor.clock.now)
        except TemplateError as e:
            error, fell_back = str(e), True
    if error:
        RENDER_FAILURES[channel] += 1
        log.warning("template_render_failed", template_id=template_id, channel=channel,
                    incident_id=incident_id, error=error)
    if not source or fell_back:
        # the incident's own text (a long description) is input too: off the loop as well
        text = await engine.render_off_loop(channel, DEFAULT_BODIES[channel], data, tz=tz,
                                            now=actor.clock.now)
    limit = SIZE_LIMITS.get(channel)
    if limit is not None:
        text = truncate_bytes(text, limit)
    return RenderedMessage(text=text, fell_back=fell_back, error=error)
