"""Route lookup by exact path.

Every operation path is a fixed string, and Starlette's router tries each route's pattern in
turn: with a few hundred operations that walk cost more than authenticating a request. This
router finds fixed paths in a dict first and otherwise tries only the other routes (the
patterns, `/status/{url_name}` and the like), then Starlette's own 404/405 handling.

Starlette's own trailing-slash redirect builds an absolute URL from the request's Host
header, so `GET /status/x/` with `Host: evil.example` would send the browser to evil.example.
This router turns that redirect off and answers a relative one (`Location: /status/x`).

Given a `Priority` (api/priority.py), every request it routes counts as urgent except those
under the `yielding` prefixes (the public pages), which wait for the urgent ones."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.responses import RedirectResponse
from starlette.routing import Match, Route, Router
from starlette.types import Receive, Scope, Send

from dutyline.api.envelope import request_id_headers
from dutyline.api.priority import Priority, urgent
from dutyline.kit.ids import request_id as new_request_id


class ExactPathRouter(Router):
    def __init__(self, *args: Any, priority: Priority | None = None,
                 yielding: tuple[str, ...] = (), **kwargs: Any) -> None:
        kwargs["redirect_slashes"] = False
        super().__init__(*args, **kwargs)
        self.priority = priority
        self.yielding = yielding
        self._exact: dict[str, Route] = {
            route.path: route
            for route in self.routes
            if isinstance(route, Route) and "{" not in route.path
        }
        # Everything else, in its order: only these can match a path that is not fixed, so
        # `/status/{url_name}` is found without trying the few hundred fixed paths first.
        self._others = [route for route in self.routes
                        if not (isinstance(route, Route) and "{" not in route.path)]

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = self._exact.get(scope["path"])
            if route is not None and route.methods and scope["method"] in route.methods:
                scope["endpoint"] = route.endpoint
                scope["path_params"] = {}
                if self.priority is None:
                    await route.app(scope, receive, send)
                else:
                    await urgent(self.priority, route.app, scope, receive, send)
                return
            if route is None:
                for other in self._others:
                    match, child_scope = other.matches(scope)
                    if match is Match.FULL:
                        scope.update(child_scope)
                        if self.priority is None or scope["path"].startswith(self.yielding):
                            await other.handle(scope, receive, send)
                        else:
                            await urgent(self.priority, other.handle, scope, receive, send)
                        return
            redirect = self._slash_redirect(scope)
            if redirect is not None:
                await redirect(scope, receive, send)
                return
        # Partial matches (a wrong method: 405), 404s and lifespan: Starlette's own handling.
        await super().app(scope, receive, send)

    def _slash_redirect(self, scope: Scope) -> RedirectResponse | None:
        """A relative redirect to the same path without its trailing slash, when only that
        one has a route; never an absolute URL built from request headers."""
        path: str = scope["path"]
        if path == "/" or not path.endswith("/"):
            return None
        if any(route.matches(scope)[0] is not Match.NONE for route in self.routes):
            return None
        stripped = {**scope, "path": path.rstrip("/") or "/"}
        if not any(route.matches(stripped)[0] is not Match.NONE for route in self.routes):
            return None
        location = quote(stripped["path"], safe="/%@:+,;=!$&'()*~-._")
        query = scope.get("query_string", b"").decode("latin-1")
        if location.startswith("//"):  # a protocol-relative URL would leave the site
            location = "/" + location.lstrip("/")
        return RedirectResponse(f"{location}?{query}" if query else location,
                                headers=request_id_headers(new_request_id()))
