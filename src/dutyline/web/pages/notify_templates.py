"""The Templates pages: the account's notification templates (what /template/list and
/template/info show to those who may view templates) and the editor of one, a body per
channel kind, through the template service the API calls (/template/create, /update,
/delete, /preview).

The editor lists beside the bodies what a body may use: the variables are those of the data
a template is rendered with (what notify/template/data.py builds from an incident, walked), the
functions the engine's own (Go's built-ins and the notification functions), and each kind's
size limit the service's. A "Preview" button renders one kind against a recent incident of
the account (or the sample incident when there is none) and shows it beside its body: chat
and SMS as text, the e-mail in a sandboxed frame whose document comes from `FRAME`, a console
route with a strict policy of its own (no script, no form, nothing loaded from elsewhere),
whose address is signed for the session that asked. A body that does not parse or render
shows why next to it, with its line when the engine names one."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi
from sqlalchemy import Connection
from starlette.responses import HTMLResponse, Response

from dutyline.api import errors
from dutyline.api.permissions import TEMPLATE_MANAGE, TEMPLATE_VIEW
from dutyline.incident.service import AlertInfo, IncidentInfo
from dutyline.incident.service import query as incidents
from dutyline.kit.gotemplate.builtins import BUILTINS
from dutyline.kit.gotemplate.funcs import notification_funcs
from dutyline.kit.page_policy import CONTENT_SECURITY_POLICY
from dutyline.notify.template import service as templates
from dutyline.notify.template.service import (
    CHANNELS,
    DEFAULT_BODIES,
    HTML_CHANNELS,
    SIZE_LIMITS,
    TemplateBodies,
    TemplateCreateRequest,
    TemplateItem,
    TemplateListRequest,
    TemplateUpdateRequest,
    incident_data,
)
from dutyline.platform.team import service as teams
from dutyline.web import forms
from dutyline.web.context import ConsoleContext
from dutyline.web.listing import PAGE_SIZE, Paging, page_number, search_text
from dutyline.web.page import Pages
from dutyline.web.pages.me_view import channel_label

pages = Pages()
S = TypeVar("S", bound=msgspec.Struct)

TEMPLATES = "/console/templates"
FRAME = TEMPLATES + "/preview/email"
PREVIEW = TEMPLATES + "/preview"
# Incidents offered to preview against: the newest of the last 31 days (the most the
# incident list reads at once).
RECENT = 20
RECENT_WINDOW_S = 31 * 86_400
TEAM_OPTIONS = 200
# An e-mail body whose frame address would be longer than this is shown as its HTML text
# (proxies refuse long addresses: nginx's default is 8 KiB for the whole request line).
MAX_FRAME_PARAM = 6_000

# The editor's page may frame the e-mail preview of this site; nothing else changes.
EDITOR_POLICY = CONTENT_SECURITY_POLICY + "; frame-src 'self'"
# The e-mail preview's document: its own inline styles and data: images, nothing else, in a
# sandbox (no script, no form, an origin of its own) even when opened by itself.
FRAME_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                "frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox")


# --- what the editor shows beside the bodies ----------------------------------------------


def _body_max() -> int:
    """The most characters a body holds, from the service's own record."""
    info = mi.type_info(TemplateBodies)
    assert isinstance(info, mi.StructType)
    kind = info.fields[0].type
    assert isinstance(kind, mi.StrType)
    assert kind.max_length is not None
    return kind.max_length


BODY_MAX = _body_max()


@dataclass(frozen=True)
class Kind:
    """One channel kind's body: its name (the form field and the service's), how it is
    called, whether it is HTML, the bytes its platform takes in one message."""

    name: str
    label: str
    html: bool
    limit: int | None


def _label(name: str) -> str:
    return "Microsoft Teams (app)" if name == "teams_app" else channel_label(name)


KINDS: tuple[Kind, ...] = tuple(
    Kind(c, _label(c), c in HTML_CHANNELS, SIZE_LIMITS.get(c)) for c in CHANNELS)


@dataclass(frozen=True)
class Variable:
    path: str
    kind: str  # text, number, yes or no, map, list, record
    fields: tuple[Variable, ...] = ()  # a record's, or each item's of a list


def _is_record(value: dict[str, Any]) -> bool:
    """A record of the data (`.AssignedTo`), not a map of free keys (`.Labels`)."""
    return bool(value) and all(k[:1].isupper() and k.isidentifier() for k in value)


def _variable(path: str, value: Any) -> Variable:
    if isinstance(value, bool):
        return Variable(path, "yes or no")
    if isinstance(value, int | float):
        return Variable(path, "number")
    if isinstance(value, dict):
        if _is_record(value):
            return Variable(path, "record", tuple(_variable(f".{k}", v)
                                                  for k, v in value.items()))
        return Variable(path, "map")
    if isinstance(value, list):
        first = value[0] if value else None
        items = (tuple(_variable(f".{k}", v) for k, v in first.items())
                 if isinstance(first, dict) and _is_record(first) else ())
        return Variable(path, "list", items)
    return Variable(path, "text")


def _zero(kind: mi.Type) -> Any:
    """The zero value of a record's field, with one item in each list of records (so the
    data built from it shows what an item holds)."""
    if isinstance(kind, mi.UnionType):
        kind = next((k for k in kind.types if not isinstance(k, mi.NoneType)), kind.types[0])
    if isinstance(kind, mi.StructType):
        return {f.encode_name: _zero(f.type) for f in kind.fields}
    if isinstance(kind, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        return [_zero(kind.item_type)] if isinstance(kind.item_type, mi.StructType) else []
    if isinstance(kind, mi.LiteralType):
        return kind.values[0]
    zeros: tuple[tuple[type[mi.Type], Any], ...] = (
        (mi.DictType, {}), (mi.BoolType, False), (mi.IntType, 0), (mi.FloatType, 0.0),
        (mi.StrType, ""))
    return next((value for cls, value in zeros if isinstance(kind, cls)), None)


def _made(record: type[S]) -> S:
    return msgspec.convert(_zero(mi.type_info(record)), record)


# The data every body is rendered with, walked: what notify/template/data.py builds from an
# incident and its alerts (the incident domain's own records, each list holding one item).
VARIABLES: tuple[Variable, ...] = tuple(
    _variable(f".{k}", v)
    for k, v in incident_data(_made(IncidentInfo), [_made(AlertInfo)]).items())
GO_FUNCTIONS: tuple[str, ...] = tuple(sorted(BUILTINS))
NOTIFICATION_FUNCTIONS: tuple[str, ...] = tuple(sorted(notification_funcs()))


# --- errors in words ------------------------------------------------------------------------

_AT = re.compile(r"^template: [^:]*:(\d+)(?::(\d+))?: (.*)$", re.S)
_NO_LINE = re.compile(r"^template: [^:]*: (.*)$", re.S)


@dataclass(frozen=True)
class BodyError:
    """Why a body failed: its line and column when the engine names them."""

    reason: str
    line: int | None = None
    column: int | None = None


def body_error(message: str) -> BodyError:
    if m := _AT.match(message):
        return BodyError(m[3], int(m[1]), int(m[2]) if m[2] else None)
    if m := _NO_LINE.match(message):
        return BodyError(m[1])
    return BodyError(message)


# --- the list -------------------------------------------------------------------------------


@pages.get(TEMPLATES)
async def template_list(ctx: ConsoleContext) -> Response:
    query, number = search_text(ctx, TemplateListRequest), page_number(ctx)
    actor = ctx.actor
    # The read /template/list does, as one unit on the database (api/operation.py).
    found = await ctx.runtime.db.run_sync(lambda conn: templates.list_templates_sync(
        conn, actor, p=number, limit=PAGE_SIZE, orderby="created_at", asc=False,
        is_my_team=False, team_ids=None, creator_id=None, query=query), write=False)
    return ctx.render("notify_templates/list.html", templates=found.items, query=query,
                      paging=Paging(number, found.total, PAGE_SIZE),
                      can_manage=actor.has(TEMPLATE_MANAGE), written=written)


def written(template: TemplateItem) -> list[str]:
    """The kinds a template words itself (the others use the built-in default)."""
    return [k.label for k in KINDS if getattr(template, k.name).strip()]


# --- the editor -----------------------------------------------------------------------------


@dataclass
class Preview:
    """One kind's preview: the text, or the e-mail's frame (or its HTML as text when too
    long to frame), or why it failed; `warning`: over the platform's limit."""

    kind: Kind
    text: str = ""
    frame_url: str = ""
    error: BodyError | None = None
    warning: str = ""
    size: int = 0
    used_default: bool = False


@dataclass
class Editor:
    template: TemplateItem | None
    bodies: dict[str, str]
    name: str = ""
    description: str = ""
    team_id: int = 0
    incident_id: str = ""
    incidents: list[Any] = field(default_factory=list)
    team_options: list[Any] = field(default_factory=list)
    previews: dict[str, Preview] = field(default_factory=dict)
    field_errors: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    editable: bool = True

    @property
    def incident(self) -> Any:
        """The chosen incident among the recent ones (None: the sample, or an older one)."""
        return next((i for i in self.incidents if i.incident_id == self.incident_id), None)


def _read_options(conn: Connection, ctx: ConsoleContext, *, with_teams: bool = True,
                  ) -> tuple[list[Any], list[Any]]:
    """Recent incidents the person may see, and the account's teams (none of either when
    they may not read them, nor teams when not asked)."""
    now = ctx.actor.now_s
    recent: list[Any] = []
    with contextlib.suppress(errors.AccessDenied):
        recent = incidents.list_incidents_sync(
            conn, ctx.actor, start_time=now + 1 - RECENT_WINDOW_S, end_time=now + 1,
            limit=RECENT, deps=ctx.runtime.deps, count=False).items
    found: list[Any] = []
    with contextlib.suppress(errors.AccessDenied):
        if with_teams:
            _, found = teams.list_teams_sync(conn, ctx.actor, orderby="team_name",
                                             asc=True, offset=0, limit=TEAM_OPTIONS)
    return recent, found


async def _editor(ctx: ConsoleContext, template: TemplateItem | None,
                  form: dict[str, list[str]] | None = None, *, whole: bool = True) -> Editor:
    """The editor's state, from the template or the form posted; `whole`: for the whole
    page (else for one preview, which needs no team)."""
    recent, team_options = await ctx.runtime.db.run_sync(
        lambda conn: _read_options(conn, ctx, with_teams=whole), write=False)
    editable = ctx.actor.has(TEMPLATE_MANAGE) and not (template and template.preset)
    if form is None:
        bodies = {c: getattr(template, c) if template else "" for c in CHANNELS}
        asked = ctx.request.query_params.get("incident", "")
        known = {i.incident_id for i in recent}
        chosen = asked if asked in known else (recent[0].incident_id if recent else "")
        return Editor(template, bodies, name=template.template_name if template else "",
                      description=template.description if template else "",
                      team_id=template.team_id if template else 0, incident_id=chosen,
                      incidents=recent, team_options=team_options, editable=editable)

    def last(name: str) -> str:
        return (form.get(name) or [""])[-1].replace("\r\n", "\n")

    team = last("team_id").strip()
    incident = last("incident_id").strip().lower()
    return Editor(template, {c: last(c) for c in CHANNELS}, name=last("template_name"),
                  description=last("description"),
                  team_id=int(team) if team.isdigit() and len(team) < 19 else 0,
                  incident_id=incident if re.fullmatch(r"[0-9a-f]{24}", incident) else "",
                  incidents=recent, team_options=team_options, editable=editable)


def _sign(ctx: ConsoleContext, incident_id: str, packed: str) -> str:
    key = ctx.csrf_token.encode()
    return hmac.new(key, f"{incident_id}\n{packed}".encode(), hashlib.sha256).hexdigest()[:32]


def _pack(source: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(source.encode(), 9)).decode().rstrip("=")


def _unpack(packed: str) -> str | None:
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        inflater = zlib.decompressobj()
        text = inflater.decompress(raw, BODY_MAX * 4 + 1)
        if inflater.unconsumed_tail:
            return None
        return text.decode()
    except (ValueError, zlib.error, UnicodeDecodeError):
        return None


def _frame_url(ctx: ConsoleContext, incident_id: str, source: str) -> str:
    packed = _pack(source)
    if len(packed) > MAX_FRAME_PARAM:
        return ""
    return (f"{FRAME}?incident={incident_id}&body={packed}"
            f"&sig={_sign(ctx, incident_id, packed)}")


async def _preview(ctx: ConsoleContext, editor: Editor, kind: Kind) -> Preview:
    """`kind`'s body (the built-in default when empty) rendered by the service's preview
    against the editor's incident."""
    source = editor.bodies.get(kind.name, "")
    shown = Preview(kind, used_default=not source.strip())
    if shown.used_default:
        source = DEFAULT_BODIES[kind.name]
    try:
        async with ctx.read() as conn:
            answer = await templates.preview(conn, ctx.actor, channel=kind.name,
                                             content=source,
                                             incident_id=editor.incident_id or None,
                                             deps=ctx.runtime.deps)
    except errors.InvalidParameter as exc:  # past a sandbox bound
        shown.error = body_error(str(exc.fields.get("reason", "")))
        return shown
    except errors.ResourceNotFound:
        editor.field_errors["incident_id"] = "is not an incident you can see"
        return shown
    if not answer.success:
        shown.error = body_error(answer.message)
        return shown
    shown.size = len(answer.content.encode())
    if kind.limit is not None and shown.size > kind.limit:
        shown.warning = "over"
    if kind.html:
        shown.frame_url = _frame_url(ctx, editor.incident_id, source)
        shown.text = "" if shown.frame_url else answer.content
    else:
        shown.text = answer.content
    return shown


def _show(ctx: ConsoleContext, editor: Editor, *, status: int = 200) -> Response:
    response = ctx.render(
        "notify_templates/form.html", status=status, editor=editor, tmpl=editor.template,
        kinds=KINDS, variables=VARIABLES, go_functions=GO_FUNCTIONS,
        notification_functions=NOTIFICATION_FUNCTIONS, body_max=BODY_MAX,
        field_errors=editor.field_errors, error=editor.error)
    response.headers["Content-Security-Policy"] = EDITOR_POLICY
    return response


def _kind(name: str) -> Kind | None:
    return next((k for k in KINDS if k.name == name), None)


def _template_id(ctx: ConsoleContext) -> str:
    raw = str(ctx.path_params["template_id"]).lower()
    if not re.fullmatch(r"[0-9a-f]{24}", raw):
        raise errors.not_found("template", raw)
    return raw


async def _template(ctx: ConsoleContext) -> TemplateItem:
    template_id = _template_id(ctx)
    return await ctx.runtime.db.run_sync(
        lambda conn: templates.template_info_sync(conn, ctx.actor, template_id=template_id),
        write=False)


def _require(ctx: ConsoleContext, permission: str) -> None:
    if not ctx.actor.has(permission):
        raise errors.AccessDenied()


def _refused(ctx: ConsoleContext, editor: Editor, exc: errors.ApiError) -> Response:
    """The editor again with the service's refusal: a body's at its text area, in words and
    with its line; any other field's by it; the rest at the top."""
    exc = forms.on_form(exc)
    field_name = exc.fields.get("field") if isinstance(exc, errors.InvalidParameter) else None
    reason = str(exc.fields.get("reason", ""))
    if isinstance(field_name, str) and _kind(field_name):
        editor.field_errors[field_name] = body_error(reason)
        editor.error = "The template is not saved: a body has an error, shown by it."
    elif isinstance(field_name, str) and field_name:
        editor.field_errors[field_name] = ctx.runtime.translator.render(ctx.locale, reason, {})
        editor.error = ctx.message(exc)
    else:
        editor.error = ctx.message(exc)
    return _show(ctx, editor, status=exc.status)


async def _submit(ctx: ConsoleContext, template: TemplateItem | None) -> Response:
    """The editor's form: a preview of one kind (its button), or the template saved."""
    form = await ctx.form_lists()
    editor = await _editor(ctx, template, form)
    asked = (form.get("preview") or [""])[-1]
    if (kind := _kind(asked)) is not None:
        editor.previews[kind.name] = await _preview(ctx, editor, kind)
        return _show(ctx, editor)
    _require(ctx, TEMPLATE_MANAGE)
    try:
        if template is None:
            new = forms.decode(form, TemplateCreateRequest)
            async with ctx.write() as conn:
                created = await templates.create_template(
                    conn, ctx.actor, template_name=new.template_name, team_id=new.team_id,
                    description=new.description, bodies=new.bodies(),
                    deps=ctx.runtime.deps)
            template_id, name = created.template_id, created.template_name
        else:
            changed = forms.decode(form, TemplateUpdateRequest,
                                   given={"template_id": template.template_id})
            async with ctx.write() as conn:
                await templates.update_template(
                    conn, ctx.actor, template_id=changed.template_id,
                    template_name=changed.template_name, team_id=changed.team_id,
                    description=changed.description, bodies=changed.bodies(),
                    deps=ctx.runtime.deps)
            template_id, name = template.template_id, changed.template_name.strip()
    except errors.ApiError as exc:
        return _refused(ctx, editor, exc)
    ctx.flash(f"The template {name} is saved.")
    return ctx.redirect(f"{TEMPLATES}/{template_id}")


@pages.get(TEMPLATES + "/new")
async def new_form(ctx: ConsoleContext) -> Response:
    _require(ctx, TEMPLATE_MANAGE)
    return _show(ctx, await _editor(ctx, None))


@pages.post(TEMPLATES + "/new")
async def create(ctx: ConsoleContext) -> Response:
    _require(ctx, TEMPLATE_VIEW)
    return await _submit(ctx, None)


@pages.post(PREVIEW)
async def preview_fragment(ctx: ConsoleContext) -> Response:
    """One kind's preview for htmx (the form posted, the kind in `preview`), as the
    fragment the editor holds; without htmx the editor's own form previews."""
    _require(ctx, TEMPLATE_VIEW)
    form = await ctx.form_lists()
    kind = _kind((form.get("preview") or [""])[-1])
    if kind is None:
        raise errors.invalid("preview", "is not one of the choices")
    editor = await _editor(ctx, None, form, whole=False)
    shown = await _preview(ctx, editor, kind)
    response = ctx.render("notify_templates/_preview.html", kind=kind, preview=shown,
                          editor=editor)
    response.headers["Content-Security-Policy"] = EDITOR_POLICY
    return response


@pages.get(FRAME)
async def email_frame(ctx: ConsoleContext) -> Response:
    """The e-mail preview's document, for the editor's frame only (its address signed for
    this session), rendered again by the service with the strict policy of FRAME_POLICY."""
    params = ctx.request.query_params
    incident_id, packed = params.get("incident", ""), params.get("body", "")
    given = params.get("sig", "")
    source = _unpack(packed) if len(packed) <= MAX_FRAME_PARAM else None
    if (source is None or not hmac.compare_digest(given, _sign(ctx, incident_id, packed))
            or (incident_id and not re.fullmatch(r"[0-9a-f]{24}", incident_id))):
        raise errors.not_found("preview", "")
    async with ctx.read() as conn:
        answer = await templates.preview(conn, ctx.actor, channel="email", content=source,
                                         incident_id=incident_id or None,
                                         deps=ctx.runtime.deps)
    body = answer.content if answer.success else ""
    response = HTMLResponse(body)
    response.headers["Content-Security-Policy"] = FRAME_POLICY
    response.headers["X-Frame-Options"] = "SAMEORIGIN"
    return response


@pages.get(TEMPLATES + "/{template_id}")
async def template_page(ctx: ConsoleContext) -> Response:
    return _show(ctx, await _editor(ctx, await _template(ctx)))


@pages.post(TEMPLATES + "/{template_id}")
async def edit(ctx: ConsoleContext) -> Response:
    return await _submit(ctx, await _template(ctx))


# --- deleting -------------------------------------------------------------------------------


@pages.get(TEMPLATES + "/{template_id}/delete")
async def delete_form(ctx: ConsoleContext) -> Response:
    _require(ctx, TEMPLATE_MANAGE)
    return ctx.render("notify_templates/delete.html", tmpl=await _template(ctx))


@pages.post(TEMPLATES + "/{template_id}/delete")
async def delete(ctx: ConsoleContext) -> Response:
    template = await _template(ctx)
    try:
        async with ctx.write() as conn:
            await templates.delete_template(conn, ctx.actor, template_id=template.template_id)
    except errors.ApiError as exc:
        # The service's reason in words (the preset cannot be deleted), not "Invalid
        # parameter template_id".
        reason = exc.fields.get("reason") if isinstance(exc, errors.InvalidParameter) else None
        message = (ctx.runtime.translator.render(ctx.locale, reason, {})
                   if isinstance(reason, str) else ctx.message(exc))
        return ctx.render("notify_templates/delete.html", status=exc.status,
                          tmpl=template, error=message)
    ctx.flash(f"The template {template.template_name} is deleted.")
    return ctx.redirect(TEMPLATES)
