"""The public web side of status pages: the page, its feeds, and the subscription steps.

    GET  /status/{url_name}                      the page (HTML, no JavaScript)
    GET  /status/{url_name}/history.rss|.atom    the history feeds
    POST /status/{url_name}/subscribe            form: email -> confirmation mail
    GET|POST /status/{url_name}/confirm?token=   button page | confirm
    GET|POST /status/{url_name}/unsubscribe?token=  button page | unsubscribe (RFC 8058 too)

No app_key here. Internal pages take their login token once (`?token=`), which becomes an
HttpOnly, SameSite=Lax cookie scoped to the page's path; the address is then cleaned by a
redirect, so the token stays out of history and Referer headers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import parse_qs, urlsplit

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Scope, Send

from dutyline.api.envelope import (
    REFERENCE_REQUEST_ID_HEADER,
    REQUEST_ID_HEADER,
    request_id_headers,
)
from dutyline.api.priority import Priority
from dutyline.db.signals import Version, page_signal
from dutyline.kit.ids import request_id as new_request_id
from dutyline.status_page import tokens
from dutyline.status_page.public import render, snapshot, subscribe
from dutyline.status_page.public.rendercache import (
    HeadCache,
    RenderCache,
    Rendered,
    SingleFlight,
)
from dutyline.status_page.public.snapshot import PageHead
from dutyline.status_page.subscriber.address import normalize_email

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

log = structlog.get_logger("dutyline.status_page.public")

COOKIE = "dutyline_status_token"
# How long a shared cache in front may keep a public page or feed: short, so a change shows
# there within seconds too.
PUBLIC_MAX_AGE_S = 5
COOKIE_MAX_AGE_S = 30 * 86_400
MAX_FORM_BYTES = 4096
_HTML = "text/html; charset=utf-8"
_FEED_TYPES = {"rss": "application/rss+xml; charset=utf-8",
               "atom": "application/atom+xml; charset=utf-8"}
# Nothing on these pages loads from elsewhere or runs script; forms post only to this server.
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # Confirm and unsubscribe links carry tokens: never leak them to another site.
    "Referrer-Policy": "no-referrer",
}


class Reject(Exception):
    """Answer with a message page instead of the normal response."""

    def __init__(
        self, status: int, title: str, message: str, *, login: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(title)
        self.status = status
        self.title = title
        self.message = message
        self.login = login
        self.headers = headers or {}


def _headers(rid: str, **more: str) -> dict[str, str]:
    return {**request_id_headers(rid), **_SECURITY_HEADERS, **more}


def _page_path(url_name: str) -> str:
    return f"/status/{url_name}"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _message(
    rid: str, status: int, title: str, text: str, *, head: PageHead | None = None,
    form: dict[str, str] | None = None, login: str = "", headers: dict[str, str] | None = None,
) -> Response:
    body = render.render_message(
        title=title, message=text, status_name="",
        page_url=_page_path(head.url_name) if head else "", form=form, login=login,
    )
    more = {"Cache-Control": "no-store", **(headers or {})}
    return Response(body, status, _headers(rid, **more), media_type=_HTML)


def _authorized(request: Request, head: PageHead) -> bool:
    if head.page_type != "internal":
        return True
    token = request.cookies.get(COOKIE, "")
    return bool(token) and tokens.tokens_match(token, head.access_token_hash)


def _require_access(request: Request, head: PageHead) -> None:
    if not _authorized(request, head):
        raise Reject(401, "Sign in to see this page",
                     "This status page is internal. Open it with the link or access token "
                     "your team shared.", login=_page_path(head.url_name))


def _cache_headers(head: PageHead, entry: Rendered) -> dict[str, str]:
    more = {"ETag": entry.etag, "Last-Modified": entry.last_modified_http}
    if head.page_type == "internal":
        # Only its token holders may see it: no shared cache keeps it, and browsers ask again
        # on every view (a revoked token or a change shows at once).
        more.update({"Cache-Control": "private, no-cache", "Vary": "Cookie",
                     "X-Robots-Tag": "noindex"})
    else:
        # A CDN or proxy in front may answer a flood for a few seconds on its own.
        more["Cache-Control"] = f"public, max-age={PUBLIC_MAX_AGE_S}"
    return more


def _not_modified(request: Request, entry: Rendered) -> bool:
    """RFC 9110 §13.1: If-None-Match when sent (If-Modified-Since is then ignored)."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return "*" in tags or entry.etag in tags
    since = request.headers.get("if-modified-since")
    if since:
        try:
            moment = parsedate_to_datetime(since)
        except (TypeError, ValueError, IndexError):
            return False
        return moment.tzinfo is not None and entry.last_modified <= moment.timestamp()
    return False


async def _form_fields(request: Request) -> dict[str, str]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise Reject(400, "Request refused", "Send the form from the page.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise Reject(413, "Request refused", "The form is too large.")
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[-1] for k, v in parsed.items()}


async def _token_of(request: Request) -> str:
    if request.method == "POST":
        token = (await _form_fields(request)).get("token") if request.headers.get(
            "content-type", "").startswith("application/x-www-form-urlencoded") else None
        return token or request.query_params.get("token", "")
    return request.query_params.get("token", "")


def _guarded(
    fn: Callable[[Request, str], Awaitable[Response]], priority: Priority,
) -> Callable[[Request], Awaitable[Response]]:
    """Every public endpoint: after the API's and the console's requests in flight when the
    process is saturated (api/priority.py), a request id, a Reject as its message page,
    anything else as a logged 500 page."""
    async def endpoint(request: Request) -> Response:
        if priority.busy:
            await priority.after_urgent()
        rid = new_request_id()
        try:
            return await fn(request, rid)
        except Reject as exc:
            return _message(rid, exc.status, exc.title, exc.message, login=exc.login,
                            headers=exc.headers)
        except Exception:
            log.exception("public status page failed", request_id=rid, path=request.url.path)
            return _message(rid, 500, "Something went wrong",
                            "This page could not be shown. Please try again shortly.")
    return endpoint


_RID_NAMES = (REQUEST_ID_HEADER.lower().encode(), REFERENCE_REQUEST_ID_HEADER.lower().encode())
_VIEWS = {"": "html", "/history.rss": "rss", "/history.atom": "atom"}


class KeptViews:
    """Public page and feed views answered from memory, before routing and the middleware
    stack (registered in `Runtime.front_answers`): a public page's rendering kept in memory,
    what a flood of views asks for, is sent with its headers encoded once per rendering,
    without Starlette's Request and Response. Anything else (an internal or unknown page, a
    query string, HEAD, If-Modified-Since, a rendering not kept, urgent requests in flight)
    is left to the ordinary view, which answers it; both answer a kept view alike (a test
    compares their headers)."""

    def __init__(self, site: PublicSite) -> None:
        self.site = site
        self.served = 0  # views answered here (for tests and diagnostics)
        # (page_id, what) -> (the rendering, its ETag, its headers for a 200, for a 304)
        self._encoded: dict[tuple[int, str], tuple[
            Rendered, bytes, list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]] = {}

    async def answer(self, scope: Scope, send: Send) -> bool:
        path: str = scope["path"]
        if (not path.startswith("/status/") or scope["method"] != "GET"
                or scope.get("query_string") or scope.get("root_path")):
            return False
        url_name, slash, rest = path[8:].partition("/")
        what = _VIEWS.get(slash + rest)
        site = self.site
        if what is None or not url_name or site.runtime.priority.busy:
            return False
        known = site.heads.get(url_name)
        if known is None:
            return False
        version, head = known
        if (version is None or head.page_type == "internal" or head.status != "enabled"
                or version != site.version(head.page_id)):
            return False
        entry = site.cache.peek(head.page_id, what, version=version, now_s=site.now_s())
        if entry is None:
            return False
        etag, ok, unchanged = self._headers(head, what, entry)
        not_modified = False
        for name, value in scope["headers"]:
            if name == b"if-none-match":
                tags = {t.strip().removeprefix(b"W/") for t in value.split(b",")}
                not_modified = b"*" in tags or etag in tags
                break
            if name == b"if-modified-since":
                return False  # dates are parsed by the ordinary view
        site.cache.hits += 1
        self.served += 1
        rid = new_request_id().encode()
        await send({"type": "http.response.start", "status": 304 if not_modified else 200,
                    "headers": [(_RID_NAMES[0], rid), (_RID_NAMES[1], rid),
                                *(unchanged if not_modified else ok)]})
        await send({"type": "http.response.body", "body": b"" if not_modified else entry.body})
        return True

    def _headers(self, head: PageHead, what: str, entry: Rendered,
                 ) -> tuple[bytes, list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
        known = self._encoded.get((head.page_id, what))
        if known is not None and known[0] is entry:
            return known[1], known[2], known[3]
        # In the order Starlette's Response writes them: the view's, then length and type.
        fixed = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in
                 {**_SECURITY_HEADERS, **_cache_headers(head, entry)}.items()]
        media = _HTML if what == "html" else _FEED_TYPES[what]
        ok = [*fixed, (b"content-length", str(len(entry.body)).encode()),
              (b"content-type", media.encode())]
        if len(self._encoded) >= 4096:
            self._encoded.clear()
        self._encoded[(head.page_id, what)] = (entry, entry.etag.encode(), ok, fixed)
        return entry.etag.encode(), ok, fixed


class PublicSite:
    """The public pages of one app: its render cache, settings and database."""

    BASE: ClassVar[str] = "/status/{url_name}"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.cache = RenderCache()
        self.heads: HeadCache[PageHead] = HeadCache()
        # Views that miss together share one read (a change under a flood of views).
        self.renders: SingleFlight[Rendered] = SingleFlight()
        self.head_reads: SingleFlight[PageHead | None] = SingleFlight()
        self.allowed_origins = {_origin(self.settings.base_url)}

    def routes(self) -> list[Route]:
        base, priority = self.BASE, self.runtime.priority
        return [
            Route(base, _guarded(self.page, priority), methods=["GET"]),
            Route(base + "/history.rss", _guarded(self.rss, priority), methods=["GET"]),
            Route(base + "/history.atom", _guarded(self.atom, priority), methods=["GET"]),
            Route(base + "/subscribe", _guarded(self.subscribe_post, priority),
                  methods=["POST"]),
            Route(base + "/confirm", _guarded(self.confirm, priority),
                  methods=["GET", "POST"]),
            Route(base + "/unsubscribe", _guarded(self.unsubscribe, priority),
                  methods=["GET", "POST"]),
        ]

    def now_s(self) -> int:
        return int(self.runtime.clock.now())


    def version(self, page_id: int) -> Version | None:
        return self.runtime.signals.version(page_signal(page_id))

    async def load_head(self, url_name: str) -> PageHead:
        head = await self._head(url_name)
        if head is None or head.status != "enabled":
            raise Reject(404, "Page not found", "There is no status page at this address.")
        return head

    async def _head(self, url_name: str) -> PageHead | None:
        """The page at this address: from memory while its signal has not moved. An address
        seen for the first time is read twice before it is kept (the second time with the
        page's version read first), so no write can slip between the read and the version.
        Addresses with no page are not kept: a page created there shows at once."""
        known = self.heads.get(url_name)
        before: Version | None = None
        if known is not None:
            version, cached = known
            before = self.version(cached.page_id)
            if version is not None and version == before:
                return cached
        head = await self.head_reads.run((url_name, before), lambda: self._read_head(url_name))
        if head is not None:
            same_page = known is not None and known[1].page_id == head.page_id
            self.heads.put(url_name, before if same_page else None, head)
        return head

    async def _read_head(self, url_name: str) -> PageHead | None:
        async with self.runtime.db.connect() as conn:
            return await snapshot.page_head(conn, url_name)

    def login_redirect(self, request: Request, head: PageHead, token: str) -> Response | None:
        """`?token=` on an internal page: a good token becomes the cookie, a bad one a 401."""
        if head.page_type != "internal":
            return None
        if not tokens.tokens_match(token, head.access_token_hash):
            raise Reject(401, "Sign in to see this page",
                         "That access token is not valid for this page.",
                         login=_page_path(head.url_name))
        response = RedirectResponse(request.url.path, status_code=303,
                                    headers={"Cache-Control": "no-store", **_SECURITY_HEADERS})
        secure = request.url.scheme == "https" or self.settings.base_url.startswith("https:")
        response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE_S,
                            path=_page_path(head.url_name), httponly=True, samesite="lax",
                            secure=secure)
        return response

    async def rendered(self, head: PageHead, what: str) -> Rendered:
        now = self.now_s()
        # Read the version before the data: a write landing in between makes this entry stale
        # at once instead of hiding behind a version it does not show.
        version = self.version(head.page_id)
        entry = self.cache.get(head.page_id, what, version=version, now_s=now)
        if entry is not None:
            return entry
        # Shared with the views missing with it; with no version to go by (the signals not
        # followed), a view may get a rendering begun at most one rendering earlier.
        return await self.renders.run((head.page_id, what, version),
                                      lambda: self._render(head, what, version, now))

    async def _render(self, head: PageHead, what: str, version: Version | None,
                      now: int) -> Rendered:
        settings = self.settings
        async with self.runtime.db.transaction(write=False) as conn:
            if what == "html":
                snap = await snapshot.snapshot(conn, head.page_id, now_s=now, page=head.row)
                body = render.render_page(snap, now_s=now,
                                          subscribe_enabled=bool(settings.smtp_url))
            else:
                page, changes, updates = await snapshot.feed_items(conn, head.page_id)
                body = render.render_feed(what, page, changes, updates,
                                          base_url=settings.base_url)
        if self.version(head.page_id) != version:
            version = None  # changed while rendering (the head may predate it): not kept
        return self.cache.put(head.page_id, what, body.encode(), version=version, now_s=now)

    async def view(self, request: Request, rid: str, what: str) -> Response:
        head = await self.load_head(request.path_params["url_name"])
        token = request.query_params.get("token")
        if token is not None and what == "html":
            redirect = self.login_redirect(request, head, token)
            if redirect is not None:
                redirect.headers.update(request_id_headers(rid))
                return redirect
        elif token is not None and head.page_type == "internal":
            # Feed readers cannot keep cookies: the token in the feed address is accepted.
            if not tokens.tokens_match(token, head.access_token_hash):
                raise Reject(401, "Sign in to see this page", "That access token is not valid.")
        else:
            _require_access(request, head)
        entry = await self.rendered(head, what)
        headers = _headers(rid, **_cache_headers(head, entry))
        media = _HTML if what == "html" else _FEED_TYPES[what]
        if _not_modified(request, entry):
            return Response(b"", 304, headers)
        return Response(entry.body, 200, headers, media_type=media)

    async def page(self, request: Request, rid: str) -> Response:
        return await self.view(request, rid, "html")

    async def rss(self, request: Request, rid: str) -> Response:
        return await self.view(request, rid, "rss")

    async def atom(self, request: Request, rid: str) -> Response:
        return await self.view(request, rid, "atom")

    def same_origin(self, request: Request) -> None:
        """Refuse form posts from other sites (the cookie is SameSite=Lax too)."""
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise Reject(403, "Request refused", "This form must be sent from its own page.")
        origin = request.headers.get("origin")
        if origin and origin != "null":
            own = _origin(str(request.base_url))
            if origin.lower() not in {own, *self.allowed_origins}:
                raise Reject(403, "Request refused", "This form must be sent from its own page.")

    async def subscribe_post(self, request: Request, rid: str) -> Response:
        head = await self.load_head(request.path_params["url_name"])
        _require_access(request, head)
        self.same_origin(request)
        ip = request.client.host if request.client else ""
        decision = await self.runtime.limiter.hit(f"sub:{head.page_id}:{ip}")
        if not decision.allowed:
            raise Reject(429, "Too many requests", "Please wait a moment and try again.",
                         headers=decision.headers())
        if not self.settings.smtp_url:
            raise Reject(503, "Email updates unavailable",
                         "This server does not send email, so it cannot take subscriptions.")
        fields = await _form_fields(request)
        email = normalize_email(fields.get("email", ""))
        if email is None:
            raise Reject(400, "Check the address", "Enter a valid email address.")
        async with self.runtime.db.transaction() as conn:
            await subscribe.subscribe(conn, self.settings, head, email, now_s=self.now_s())
        return _message(rid, 200, "Check your inbox",
                        f"If {email} can receive mail, a message with a confirmation link is "
                        "on its way. Open it to start getting updates.", head=head)

    async def confirm(self, request: Request, rid: str) -> Response:
        head = await self.load_head(request.path_params["url_name"])
        if request.method == "POST":
            self.same_origin(request)
        token = await _token_of(request)
        gone = Reject(404, "Link not valid",
                      "This confirmation link is not valid any more. It may have been used "
                      "already; subscribe again from the status page if you need to.")
        if request.method == "GET":
            async with self.runtime.db.connect() as conn:
                found = await subscribe.find_by_confirm_token(conn, head, token)
            if found is None or found.status != "pending":
                raise gone
            return _message(rid, 200, "Confirm your subscription",
                            f"Press the button to get email updates about this page at "
                            f"{found.email}.", head=head,
                            form={"action": f"{_page_path(head.url_name)}/confirm",
                                  "token": token, "button": "Confirm subscription"})
        async with self.runtime.db.transaction() as conn:
            found = await subscribe.find_by_confirm_token(conn, head, token)
            if found is None or found.status != "pending":
                raise gone
            await subscribe.confirm(conn, found, now_s=self.now_s())
        return _message(rid, 200, "You are subscribed",
                        f"{found.email} will get email about incidents and maintenance. Every "
                        "email has a link to unsubscribe.", head=head)

    async def unsubscribe(self, request: Request, rid: str) -> Response:
        head = await self.load_head(request.path_params["url_name"])
        token = await _token_of(request)
        gone = Reject(404, "Link not valid", "This unsubscribe link is not valid.")
        if request.method == "GET":
            async with self.runtime.db.connect() as conn:
                found = await subscribe.find_by_unsubscribe_token(conn, head, token)
            if found is None:
                raise gone
            if found.status == "unsubscribed":
                return _message(rid, 200, "You are unsubscribed",
                                f"{found.email} gets no more email from this page.", head=head)
            return _message(rid, 200, "Unsubscribe",
                            f"Press the button to stop email updates to {found.email}.",
                            head=head,
                            form={"action": f"{_page_path(head.url_name)}/unsubscribe",
                                  "token": token, "button": "Unsubscribe"})
        async with self.runtime.db.transaction() as conn:
            found = await subscribe.find_by_unsubscribe_token(conn, head, token)
            if found is None:
                raise gone
            await subscribe.unsubscribe(conn, found, now_s=self.now_s())
        return _message(rid, 200, "You are unsubscribed",
                        f"{found.email} gets no more email from this page.", head=head)


def routes(runtime: Runtime) -> list[Route]:
    """The public pages' routes (domains.py names this factory); the views it keeps in memory
    are answered before routing (`KeptViews`)."""
    site = PublicSite(runtime)
    runtime.front_answers.append(KeptViews(site).answer)
    return site.routes()
