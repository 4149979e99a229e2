"""Route lookup by exact path.

Every operation path is a fixed string, and Starlette's router tries each route's pattern in
turn: with a few hundred operations that walk cost more than authenticating a request. This
router finds fixed paths in a dict first and falls back to the patterns (`/status/{url_name}`
and the like), and to Starlette's own 404/405 handling, for everything else."""

from __future__ import annotations

from typing import Any

from starlette.routing import Route, Router
from starlette.types import Receive, Scope, Send


class ExactPathRouter(Router):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._exact: dict[str, Route] = {
            route.path: route
            for route in self.routes
            if isinstance(route, Route) and "{" not in route.path
        }

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            route = self._exact.get(scope["path"])
            if route is not None and route.methods and scope["method"] in route.methods:
                scope["endpoint"] = route.endpoint
                scope["path_params"] = {}
                await route.app(scope, receive, send)
                return
        await super().app(scope, receive, send)
