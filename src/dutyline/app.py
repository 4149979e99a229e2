"""create_app(settings): routes, error handlers, and the lifespan that starts the workers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from dutyline.api import errors, openapi
from dutyline.api.envelope import encode, error_body, request_id_headers
from dutyline.api.handler import make_endpoint
from dutyline.api.i18n import Translator, negotiate
from dutyline.api.observe import Metrics, configure_logging
from dutyline.api.operation import Operation
from dutyline.api.ratelimit import MemoryRateLimiter, NoRateLimiter, RateLimiter, default_windows
from dutyline.api.reference_page import ReferencePage
from dutyline.api.routing import ExactPathRouter
from dutyline.api.runtime import FrontAnswer, Runtime
from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.db.signals import ChangeSignals
from dutyline.domains import all_routers, extra_routes, load_tasks, runtime_hooks
from dutyline.kit.clock import Clock, SystemClock
from dutyline.kit.extras import OTEL, REDIS, require
from dutyline.kit.ids import request_id as new_request_id
from dutyline.kit.secretbox import SecretBox
from dutyline.notify.delivery import trial
from dutyline.platform.audit.sink import DatabaseAuditSink
from dutyline.platform.auth import DatabaseAuthenticator
from dutyline.work.startup import BackgroundTask, default_background

log = structlog.get_logger("dutyline.app")

KEY_USE_FLUSH_SECONDS = 15.0
# Pages for anyone (status pages and their feeds): they wait for the API and the console when
# the process is saturated (api/priority.py).
PUBLIC_PREFIXES = ("/status/",)


def build_limiter(settings: Settings, clock: Clock, metrics: Metrics | None = None) -> RateLimiter:
    windows = default_windows(settings.rate_limit_per_second, settings.rate_limit_per_minute)
    if not windows:
        return NoRateLimiter()
    if settings.redis_url:
        require(REDIS, setting="DUTYLINE_REDIS_URL")
        from dutyline.api.ratelimit_redis import RedisRateLimiter

        return RedisRateLimiter(settings.redis_url, windows, clock=clock,
                                registry=metrics.registry if metrics else None)
    return MemoryRateLimiter(windows, clock)


def build_runtime(settings: Settings, clock: Clock | None = None) -> Runtime:
    # Every process (API and worker) must know the incident-event subscribers: the API to
    # fan each event out to them, the workers to run their jobs.
    load_tasks()
    clock = clock or SystemClock()
    db = Database(settings.database_url, pool_size=settings.database_pool_size)
    metrics = Metrics()
    signals = ChangeSignals()
    return Runtime(
        settings=settings,
        db=db,
        clock=clock,
        translator=Translator(),
        limiter=build_limiter(settings, clock, metrics),
        authenticator=DatabaseAuthenticator(clock, signals=signals),
        signals=signals,
        audit=DatabaseAuditSink(clock),
        metrics=metrics,
        secrets=SecretBox(settings.resolved_secret_key),
        notify_test_cooldown=trial.cooldown_limiter(settings, clock),
        operations=tuple(op for router in all_routers() for op in router.operations),
        **runtime_hooks(settings),
    )


class ServicePages:
    """The routes that are not operations: the API's description and the probes."""

    def __init__(self, runtime: Runtime, operations: list[Operation]) -> None:
        self.runtime = runtime
        spec = openapi.build(operations)
        self.spec_bytes = encode(spec)
        self.reference = ReferencePage(spec["info"]["title"])

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/openapi.json", self.openapi_json, methods=["GET"]),
            *self.reference.routes(),
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/readyz", self.readyz, methods=["GET"]),
            Route("/metrics", self.metrics, methods=["GET"]),
        ]

    async def openapi_json(self, _: Request) -> Response:
        return Response(self.spec_bytes, media_type="application/json")

    async def healthz(self, _: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, _: Request) -> Response:
        try:
            async with self.runtime.db.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as exc:  # any failure means not ready
            log.warning("readiness check failed", error=str(exc))
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def metrics(self, _: Request) -> Response:
        return Response(generate_latest(self.runtime.metrics.registry),
                        media_type=CONTENT_TYPE_LATEST)


class HttpErrors:
    """Failures outside an operation (unknown path, wrong method, a crash in a route that is
    not an operation), answered with the same envelope as an operation's errors."""

    def __init__(self, translator: Translator) -> None:
        self.translator = translator

    def __call__(self, request: Request, exc: Exception) -> Response:
        rid = new_request_id()
        if isinstance(exc, ClientDisconnect):
            # The client hung up while sending its body: nobody reads an answer, and it is
            # no failure of ours (no error line, no 5xx in the metrics).
            log.info("client went away", request_id=rid, path=request.url.path)
            return Response(status_code=400)
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        error: errors.ApiError
        if status == 404:
            error = errors.RouteNotFound(path=request.url.path)
        elif status == 405:
            error = errors.MethodNotAllowed(method=request.method, path=request.url.path)
        else:
            log.error("unhandled error outside an operation", request_id=rid, error=repr(exc))
            error = errors.InternalError()
        locale = negotiate(request.headers.get("accept-language"))
        message = self.translator.render(locale, error.message, error.fields)
        headers = request_id_headers(rid)
        if status == 405 and isinstance(exc, HTTPException) and exc.headers:
            # Starlette names the methods the route takes; RFC 9110 wants them on a 405.
            allow = exc.headers.get("Allow") or exc.headers.get("allow")
            if allow:
                headers["Allow"] = allow
        return Response(
            error_body(rid, error.code, message), error.status, headers,
            media_type="application/json",
        )


class Lifespan:
    """Starts the background tasks with the app and, at shutdown, stops them, writes the
    buffered app-key uses and closes the rate limiter and the database."""

    def __init__(self, runtime: Runtime, background: list[BackgroundTask]) -> None:
        authenticator = runtime.authenticator
        assert isinstance(authenticator, DatabaseAuthenticator)
        self.runtime = runtime
        self.authenticator = authenticator
        self.tasks = [self.flush_key_use, self.follow_signals, *background]

    async def follow_signals(self, runtime: Runtime) -> None:
        await runtime.signals.watch(runtime.db)

    async def flush_key_use(self, runtime: Runtime) -> None:
        while True:
            await asyncio.sleep(KEY_USE_FLUSH_SECONDS)
            try:
                await self.authenticator.flush_last_used(runtime.db)
            except Exception as exc:  # keep flushing; a missed flush only delays a timestamp
                log.warning("could not record app key use", error=repr(exc))

    @contextlib.asynccontextmanager
    async def __call__(self, app: Starlette) -> AsyncIterator[None]:
        runtime = self.runtime
        running = [asyncio.create_task(task(runtime)) for task in self.tasks]
        try:
            yield
        finally:
            for t in running:
                t.cancel()
            for t in running:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            with contextlib.suppress(Exception):
                await self.authenticator.flush_last_used(runtime.db)
            if runtime.runner_hub is not None:  # its relay loop and Redis subscription
                with contextlib.suppress(Exception):
                    await runtime.runner_hub.close()
            await runtime.kept_sessions.aclose()
            await runtime.limiter.close()
            await runtime.notify_test_cooldown.close()
            await runtime.db.dispose()


class _App(Starlette):
    """Starlette, with the runtime's front answers (api/runtime.py) tried first: what the
    process serves from memory under a flood skips routing and the middleware stack.

    Behind a configured reverse proxy (DUTYLINE_TRUSTED_PROXIES), uvicorn's
    ProxyHeadersMiddleware comes first of all: `request.client` and the scheme are then the
    ones the proxy forwarded, for every route and the front answers alike, and a forwarding
    header from any other peer is ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.front_answers: list[FrontAnswer] = []
        self._entry: ASGIApp = self._dispatch

    def trust_proxies(self, proxies: tuple[str, ...]) -> None:
        if proxies:
            self._entry = cast(ASGIApp, ProxyHeadersMiddleware(
                cast(Any, self._dispatch), trusted_hosts=list(proxies)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._entry(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for answer in self.front_answers:
                if await answer(scope, send):
                    return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings | None = None,
    *,
    clock: Clock | None = None,
    background: list[BackgroundTask] | None = None,
) -> Starlette:
    settings = settings or Settings.load()
    runtime = build_runtime(settings, clock)
    operations = [op for router in all_routers() for op in router.operations]
    routes: list[BaseRoute] = [
        Route(op.path, make_endpoint(op, runtime), methods=list(op.methods)) for op in operations
    ]
    routes += extra_routes(runtime)
    routes += ServicePages(runtime, operations).routes()
    http_error = HttpErrors(runtime.translator)
    app = _App(
        exception_handlers={404: http_error, 405: http_error, ClientDisconnect: http_error,
                            Exception: http_error},
    )
    # Set before the first request builds the middleware stack around it.
    app.router = ExactPathRouter(routes=routes, lifespan=Lifespan(runtime, background or []),
                                 priority=runtime.priority, yielding=PUBLIC_PREFIXES)
    app.state.runtime = runtime
    app.front_answers = runtime.front_answers
    app.trust_proxies(settings.trusted_proxies)
    app.state.operations = operations
    configure_logging(settings.log_level, settings.log_json)
    return app


def create_app_from_env() -> Any:
    """Factory for `uvicorn --factory` (serve --workers N): each worker builds its own app
    from the environment `serve` leaves it (DUTYLINE_CONFIG names the file it read)."""
    from dutyline.kit import heap

    settings = Settings.load()
    app = create_app(settings, background=default_background(settings))
    heap.settle()
    if settings.otel:
        # Opt-in: the middleware costs 160-280 µs a request (measured). Exporters are
        # configured the standard way (OTEL_* variables, or `opentelemetry-instrument`).
        otel = require(OTEL, setting="DUTYLINE_OTEL")
        return otel.OpenTelemetryMiddleware(app)
    return app

