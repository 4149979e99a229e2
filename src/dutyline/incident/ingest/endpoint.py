"""POST /event/push/alert/standard?integration_key=…: the standard alert push.

Not an app_key operation (the integration key authenticates and routes it), but it answers
like one: the same envelope, Service-Request-Id, body limit, content type and JSON rules,
localized errors, rate-limit headers, metrics and access line (api/handler.py).

Order: body size -> integration key (401, nothing stored) -> rate limit per integration
(429) -> channel state (400) -> body schema (400) -> one write transaction -> 200."""

from __future__ import annotations

import time

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.api import errors
from dutyline.api.envelope import REQUEST_ID_HEADER, error_body, success_body
from dutyline.api.handler import decode_json_body, read_body
from dutyline.api.i18n import negotiate
from dutyline.api.runtime import Runtime
from dutyline.incident.ingest import service
from dutyline.incident.ingest.batch import IngestBatcher
from dutyline.incident.ingest.channels import resolve_key
from dutyline.incident.ingest.schemas import PushRequest, PushResponse
from dutyline.kit.ids import request_id as new_request_id

log = structlog.get_logger("dutyline.api")

PUSH_PATH = "/event/push/alert/standard"
_JSON = "application/json"
BAD_KEY = "Missing or invalid integration_key"
CHANNEL_OFF = "Channel {channel_id} is {status} and does not accept alerts"


def routes(runtime: Runtime) -> list[Route]:
    decoder = msgspec.json.Decoder(PushRequest)
    batcher = IngestBatcher(runtime.db)
    metrics = runtime.metrics
    latency = metrics.latency.labels(PUSH_PATH)

    async def push(request: Request) -> Response:
        started = time.perf_counter()
        rid = new_request_id()
        locale = negotiate(request.headers.get("accept-language"))
        headers: dict[str, str] = {REQUEST_ID_HEADER: rid}
        account_id: int | None = None
        try:
            body = await read_body(request, runtime.settings.max_body_bytes)
            key = request.query_params.get("integration_key")
            if not key or len(key) > 256:
                raise errors.Unauthorized(BAD_KEY)

            async def work(conn: AsyncConnection) -> str:
                nonlocal account_id
                integration = await resolve_key(conn, key)
                if integration is None:
                    raise errors.Unauthorized(BAD_KEY)
                account_id = integration.account_id
                decision = await runtime.limiter.hit(f"i:{integration.integration_id}")
                headers.update(decision.headers())
                if not decision.allowed:
                    raise errors.RequestTooFrequently(retry_after=headers["Retry-After"])
                if integration.channel_status != "enabled":
                    raise errors.BadRequest(
                        CHANNEL_OFF, channel_id=integration.channel_id,
                        status=integration.channel_status,
                    )
                req = decode_json_body(decoder, request, body)
                return await service.ingest(conn, integration, req, now_s=int(runtime.clock.now()))

            # One write transaction per push, or on SQLite one per batch of pushes that
            # arrive together, each in its own savepoint (incident/ingest/batch.py).
            alert_key = await batcher.run(work)
            content = success_body(rid, PushResponse(alert_key=alert_key))
            status, code = 200, "OK"
        except errors.ApiError as exc:
            status, code = exc.status, exc.code
            message = runtime.translator.render(locale, exc.message, exc.fields)
            content = error_body(rid, code, message)
        except Exception:
            log.exception("unhandled error", request_id=rid, operation=PUSH_PATH)
            status, code = 500, "InternalError"
            message = runtime.translator.render(locale, errors.InternalError.default_message, {})
            content = error_body(rid, code, message)
        elapsed = time.perf_counter() - started
        metrics.requests.labels(PUSH_PATH, code).inc()
        latency.observe(elapsed)
        # Never the query string: it holds the integration key.
        log.info(
            "request", request_id=rid, operation=PUSH_PATH, status=status, code=code,
            account_id=account_id, ms=round(elapsed * 1000, 2),
        )
        return Response(content, status, headers, media_type=_JSON)

    return [Route(PUSH_PATH, push, methods=["POST"])]
