"""What a console page handler gets: `ConsoleContext`, the page's view of one request.

    @pages.get("/console/teams")
    async def teams(ctx: ConsoleContext) -> Response:
        total, items = await ctx.runtime.db.run_sync(
            lambda conn: team_service.list_teams_sync(conn, ctx.actor, ...), write=False)
        return ctx.render("teams/list.html", teams=items)

- `ctx.zone`: (name, zone) of the reader's time zone, which every time shown is in.
- `ctx.actor`: the signed-in person as services see them (credential "session"), with the
  roles and permissions an app key of theirs would have.
- `ctx.read()` / `ctx.write()`: one unit of work (api/unit.py), the door the API's calls go
  through too: it flushes the audit entries the services noted before it commits, records a
  refused or failed write with its outcome and the form, and counts the request's first
  write against the account's rate limit. Services never commit.
- `await ctx.form()`: the submitted form (the CSRF token was checked before the handler ran).
- `ctx.render(template, **context)`: the template inside the layout, with the security
  headers; `ctx.redirect(url)`; `ctx.flash(message)` shows a message on the next page.
- A service's ApiError raised by a handler whose page names a `template` re-renders it with
  the localized message next to the field the error names and what was typed kept, with the
  status the API would answer (page.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.i18n import negotiate
from dutyline.api.unit import Call, caller_actor, unit
from dutyline.kit.ids import request_id as new_request_id
from dutyline.kit.url_secrets import mask_url
from dutyline.web import devices, security, times
from dutyline.web import service as signin
from dutyline.web.service import Session
from dutyline.web.session_cache import SessionCache

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

MAX_FORM_BYTES = 64 * 1024


class Console(Protocol):
    """What a page's context uses of the console (web/page.py builds it)."""

    runtime: Runtime
    keys: security.ConsoleKeys
    sessions: SessionCache

    def render(self, template: str, **context: Any) -> str: ...

# Typed values never sent back into a page, even when the form is shown again with an error,
# nor kept in the audit log's copy of a form.
_NEVER_KEPT = ("password", "code", security.CSRF_FIELD)
MAX_AUDIT_BODY_CHARS = 10 * 1024


def _secret_field(name: str) -> bool:
    return any(secret in name for secret in _NEVER_KEPT)


class ConsoleContext:
    def __init__(self, request: Request, console: Console) -> None:
        self.request = request
        self.console = console
        self.runtime: Runtime = console.runtime
        self.request_id = new_request_id()
        self.locale = negotiate(request.headers.get("accept-language"))
        self.client_ip = request.client.host if request.client else ""
        self.is_secure = security.secure(request, self.runtime.settings)
        self.session: Session | None = None
        self._session_token = ""
        self._actor: Actor | None = None
        # The reader's own time zone and their account's ("" unset): see `zone`.
        self.time_zones: tuple[str, str] = ("", "")
        self._conn: AsyncConnection | None = None
        self._limited = False  # the request's rate limit counted (its first write)
        self._visitor = self._cookie(security.VISITOR_COOKIE)
        self._new_visitor = False
        self._device = devices.read(console.keys.device, self._cookie(devices.COOKIE))
        self._device_cookie = ""
        self._form: dict[str, str] | None = None
        # The body can be read once: `form` and `form_lists` share what it held.
        self._form_pairs: list[tuple[str, str]] | None = None
        # Before the flashes are read: reading them clears their cookie.
        self._cookie_changes: list[tuple[str, str | None]] = []
        self._flashes_in = self._read_flashes()
        self._flashes_out: list[dict[str, str]] = []
        # Values a handler keeps for its page being shown again after an error.
        self.kept: dict[str, Any] = {}

    # --- who ----------------------------------------------------------------------------

    @property
    def path_params(self) -> dict[str, Any]:
        return dict(self.request.path_params)

    @property
    def signed_in(self) -> bool:
        return self._actor is not None

    @property
    def actor(self) -> Actor:
        if self._actor is None:
            raise errors.Unauthorized("Sign in to continue")
        return self._actor

    async def identify(self) -> None:
        """Find the session the cookie names and the person it is for (a removed member's
        session ends here), from this process's memory while nothing changed them."""
        token = self._cookie(security.SESSION_COOKIE)
        if not token:
            return
        clock = self.runtime.clock
        found = await self.console.sessions.resolve(self.runtime.db, token, int(clock.now()))
        if found is None:
            return
        self.session = found.session
        self._session_token = token
        self.time_zones = found.time_zones
        caller = found.caller
        authenticator = self.runtime.authenticator

        async def team_ids() -> frozenset[int]:
            return await authenticator.team_ids(self.conn, caller)

        def team_ids_sync(conn: Connection) -> frozenset[int]:
            return authenticator.team_ids_sync(conn, caller)

        self._actor = caller_actor(caller, clock, "session", team_ids=team_ids,
                                   team_ids_sync=team_ids_sync)

    @property
    def zone(self) -> tuple[str, tzinfo]:
        """(name, zone) of the reader's time zone: every time a page shows is in it (the
        `when` filter, web/times.py): their own, else their account's, else UTC."""
        return times.reader_zone(*self.time_zones)

    async def still_signed_in(self) -> bool:
        """Whether the session this request came with is still live and its person still a
        member: what a long-lived answer (the incident list's stream) asks as it goes."""
        if not self._session_token:
            return False
        found = await self.console.sessions.resolve(
            self.runtime.db, self._session_token, int(self.runtime.clock.now()), touch=False)
        return found is not None

    # --- transactions -------------------------------------------------------------------

    @property
    def conn(self) -> AsyncConnection:
        assert self._conn is not None, "inside `async with ctx.read()` or `ctx.write()` only"
        return self._conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self._transaction(write=False) as conn:
            yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        async with self._transaction(write=True) as conn:
            yield conn

    @asynccontextmanager
    async def _transaction(self, *, write: bool) -> AsyncIterator[AsyncConnection]:
        """One unit of work (api/unit.py) for the signed-in person: their writes are rate
        limited like their API calls (the account's limit, once a request), audited with the
        form as the body, and a refused or failed one is recorded with its outcome."""
        async with unit(self.runtime, self._actor, write=write, call=self.unit_call(write),
                        limit=self._limit_key(write)) as work:
            self._conn = work.conn
            try:
                yield work.conn
            finally:
                self._conn = None

    def unit_call(self, write: bool = True) -> Call:
        """What a unit of this request tells the audit log: the request, the address and,
        for a write, the form (its secrets masked, the CSRF token left out)."""
        return Call(self.request_id, self.client_ip, self._audit_body() if write else "")

    def _limit_key(self, write: bool) -> str | None:
        if not write or self._actor is None or self._limited:
            return None
        self._limited = True
        return f"a:{self._actor.account_id}"

    def _audit_body(self) -> str:
        pairs = [(k, v) for k, v in (self._form_pairs or ()) if k != security.CSRF_FIELD]
        if not pairs:
            return ""
        form: dict[str, str] = {}
        for key, value in pairs:
            # A web address typed (a webhook's) keeps its credentials out, as the API's
            # audited bodies do.
            kept = mask_url(value) if value.startswith(("http://", "https://")) else value
            form.setdefault(key, "***" if _secret_field(key) else kept)
        text = json.dumps(form, ensure_ascii=False, separators=(",", ":"))
        return text[:MAX_AUDIT_BODY_CHARS]

    # --- forms and CSRF -----------------------------------------------------------------

    async def form(self) -> dict[str, str]:
        """The submitted form (application/x-www-form-urlencoded, as forms and htmx send);
        a field given twice keeps its first value (`form_lists` for repeated fields)."""
        if self._form is None:
            pairs = await self._pairs()
            self._form = {}
            for key, value in pairs:
                self._form.setdefault(key, value)
        return self._form

    async def form_lists(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key, value in await self._pairs():
            out.setdefault(key, []).append(value)
        return out

    async def _pairs(self) -> list[tuple[str, str]]:
        if self._form_pairs is None:
            self._form_pairs = await self._read_pairs()
        return self._form_pairs

    async def _read_pairs(self) -> list[tuple[str, str]]:
        if self.request.method != "POST":
            return parse_qsl(self.request.url.query, keep_blank_values=True)
        kind = self.request.headers.get("content-type", "").split(";")[0].strip().lower()
        declared = self.request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
            raise errors.EntityTooLarge(limit=MAX_FORM_BYTES)
        body = b""
        async for chunk in self.request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise errors.EntityTooLarge(limit=MAX_FORM_BYTES)
        if not body:
            return []
        if kind != "application/x-www-form-urlencoded":
            raise errors.InvalidContentType("A form must be sent as "
                                            "application/x-www-form-urlencoded")
        try:
            return parse_qsl(body.decode("utf-8"), keep_blank_values=True,
                             max_num_fields=1000)
        except (UnicodeDecodeError, ValueError):
            raise errors.invalid("body", "is not a valid form") from None

    @property
    def csrf_token(self) -> str:
        """The token this visitor's forms carry (hidden field, or htmx's header)."""
        keys = self.console.keys
        if self._session_token:
            return security.csrf_token(keys, "session", self._session_token)
        if not self._visitor:
            self._visitor = security.new_visitor_secret()
            self._new_visitor = True
        return security.csrf_token(keys, "visitor", self._visitor)

    async def csrf_passed(self) -> bool:
        given = self.request.headers.get(security.CSRF_HEADER) or (
            (await self.form()).get(security.CSRF_FIELD, ""))
        if self._session_token:
            expected = security.csrf_token(self.console.keys, "session", self._session_token)
        elif self._visitor:
            expected = security.csrf_token(self.console.keys, "visitor", self._visitor)
        else:
            return False
        return security.csrf_ok(expected, given)

    # --- sessions -----------------------------------------------------------------------

    async def start_session(self, actor: Actor, *, second_factor_pending: bool = False,
                            conn: AsyncConnection | None = None) -> None:
        """Sign `actor`'s person in: a new session (a new token, whatever cookie came with
        the request, which ends the session it named) sent with this response. In `conn`'s
        transaction when given (and its unit of work flushes the audit entry), else in a
        unit of its own."""
        if conn is None:
            async with unit(self.runtime, actor, write=True, call=self.unit_call()) as work:
                await self.start_session(actor, second_factor_pending=second_factor_pending,
                                         conn=work.conn)
            return
        if self.session is not None:
            await signin.drop_session(conn, self.session)
        token = await signin.start_session(
            conn, actor, user_agent=self.request.headers.get("user-agent", ""),
            ip=self.client_ip, second_factor_pending=second_factor_pending)
        self._cookie_changes.append((security.SESSION_COOKIE, token))
        self._session_token = token

    def device_subject(self, subject: str) -> str | None:
        """The lock-out subject of this browser when `subject` (an e-mail address's, a
        person's) signed in here before (web/devices.py), else None."""
        return devices.lock_subject(self.console.keys.device, self._device, subject)

    def remember_device(self, *subjects: str) -> None:
        """This browser now knows these subjects: sent with this response."""
        self._device, self._device_cookie = devices.remember(
            self.console.keys.device, self._device, list(subjects))

    def end_session(self) -> None:
        self._cookie_changes.append((security.SESSION_COOKIE, None))
        self._session_token = ""
        self._actor = None
        self.session = None

    def _cookie(self, name: str) -> str:
        return self.request.cookies.get(security.cookie_name(name, self.is_secure), "")

    # --- answers ------------------------------------------------------------------------

    def message(self, exc: errors.ApiError) -> str:
        return self.runtime.translator.render(self.locale, exc.message, exc.fields)

    def flash(self, message: str, kind: str = "info") -> None:
        self._flashes_out.append({"kind": kind, "text": message})

    def _read_flashes(self) -> list[dict[str, str]]:
        raw = self._cookie(security.FLASH_COOKIE)
        if not raw:
            return []
        self._cookie_changes = [(security.FLASH_COOKIE, None)]
        value = security.unsign(self.console.keys.flash, raw)
        try:
            decoded = msgspec.json.decode(value.encode()) if value else []
        except msgspec.DecodeError:
            return []
        return [f for f in decoded if isinstance(f, dict)][:5]

    def render(self, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
        flashes, self._flashes_in = [*self._flashes_in, *self._flashes_out], []
        self._flashes_out = []
        body = self.console.render(template, ctx=self, flashes=flashes, **context)
        return HTMLResponse(body, status_code=status)

    def redirect(self, url: str, status: int = 303) -> Response:
        if not url.startswith("/") or url.startswith("//"):
            url = "/console/"  # only paths of this site: never an open redirect
        return RedirectResponse(url, status_code=status)

    def form_failed(self, template: str, exc: errors.ApiError, **context: Any) -> HTMLResponse:
        """`template` again with the error: next to its field when it names one, else at
        the top; the typed values kept (never a password or a code)."""
        field_errors: dict[str, str] = {}
        field = exc.fields.get("field") if isinstance(exc, errors.InvalidParameter) else None
        if isinstance(field, str) and field:
            reason = exc.fields.get("reason")
            field_errors[field] = (self.runtime.translator.render(self.locale, reason, {})
                                   if isinstance(reason, str) else self.message(exc))
        typed = {k: v for k, v in (self._form or {}).items() if not _secret_field(k)}
        return self.render(template, status=exc.status, error=self.message(exc),
                           field_errors=field_errors, form=typed, **{**self.kept, **context})

    def finish(self, response: Response) -> Response:
        """Cookies this request changed, and the security headers."""
        if self._flashes_out:
            # ASCII only (JSON escapes the rest): a header value is Latin-1, and a team's or
            # a translated message's text may be anything.
            value = json.dumps(self._flashes_out, ensure_ascii=True, separators=(",", ":"))
            self._cookie_changes.append(
                (security.FLASH_COOKIE, security.sign(self.console.keys.flash, value)))
        if self._new_visitor:
            self._cookie_changes.append((security.VISITOR_COOKIE, self._visitor))
        if self._device_cookie:
            security.set_cookie(response, devices.COOKIE, self._device_cookie,
                                is_secure=self.is_secure, max_age=devices.KEEP_S)
        for name, change in dict(self._cookie_changes).items():  # the last change wins
            if change is None:
                security.clear_cookie(response, name, is_secure=self.is_secure)
            else:
                security.set_cookie(response, name, change, is_secure=self.is_secure)
        response.headers["Service-Request-Id"] = self.request_id
        return security.protect(response)
