"""POST /event/push/alert/standard?integration_key=…: the standard alert push; beside it
the same pipeline for other tools' payloads (sources.py): /event/push/alert/prometheus
(Alertmanager's webhook), /event/push/alert/grafana and /event/push/alert/webhook.

Not an app_key operation (the integration key authenticates and routes it), but it answers
like one: the same envelope, Service-Request-Id, body limit, content type and JSON rules,
localized errors, rate-limit headers, metrics and access line (api/handler.py).

Order: body size -> integration key (401, nothing stored) -> rate limit per integration
(429) -> channel state (400) -> body schema (400) -> one write transaction -> 200.

A key seen recently skips its lookup before the rate limit: which integration a key names
never changes, so the process remembers it (KnownKeys). Whether the key is still live and its
channel still takes alerts is checked again inside the transaction that stores the event
(service.ingest), so a revoked key stores nothing from its very next push on; only the
lookup's query before the rate limit is saved."""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.api import errors
from dutyline.api.envelope import request_id_headers, success_body
from dutyline.api.handler import decode_json_body, failure, read_body
from dutyline.api.i18n import negotiate
from dutyline.api.runtime import Runtime
from dutyline.incident.ingest import service, sources
from dutyline.incident.ingest.batch import IngestBatcher
from dutyline.incident.ingest.channels import Lookup, hash_key, is_well_formed, lookup
from dutyline.incident.ingest.schemas import PushManyResponse, PushRequest, PushResponse
from dutyline.incident.ingest.service import BAD_KEY, CHANNEL_OFF
from dutyline.kit.ids import request_id as new_request_id

log = structlog.get_logger("dutyline.api")

PUSH_PATH = "/event/push/alert/standard"
PROMETHEUS_PATH = "/event/push/alert/prometheus"  # Alertmanager's webhook (sources.py)
GRAFANA_PATH = "/event/push/alert/grafana"
WEBHOOK_PATH = "/event/push/alert/webhook"  # any JSON, fields mapped in the query string
INGESTION_PATHS = (PUSH_PATH, PROMETHEUS_PATH, GRAFANA_PATH, WEBHOOK_PATH)
_JSON = "application/json"
KNOWN_KEYS = 10_000
Parse = Callable[[Request, bytes], list[PushRequest]]


class KnownKeys:
    """Key hash -> (integration_id, account_id) of keys that resolved lately, least recently
    used first out. Only facts that never change for a key are kept."""

    def __init__(self, size: int = KNOWN_KEYS) -> None:
        self._size = size
        self._entries: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def get(self, key_hash: str) -> tuple[int, int] | None:
        found = self._entries.get(key_hash)
        if found is not None:
            self._entries.move_to_end(key_hash)
        return found

    def put(self, key_hash: str, integration_id: int, account_id: int) -> None:
        self._entries[key_hash] = (integration_id, account_id)
        self._entries.move_to_end(key_hash)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, key_hash: str) -> None:
        self._entries.pop(key_hash, None)

    def __len__(self) -> int:
        return len(self._entries)


def routes(runtime: Runtime) -> list[Route]:
    decoder = msgspec.json.Decoder(PushRequest)
    batcher = IngestBatcher(runtime.db)
    known = KnownKeys()
    any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()
    metrics = runtime.metrics

    async def check(key_hash: str) -> Lookup:
        """The key's integration, read now: 401 when it is not live."""
        found = await runtime.db.run_sync(functools.partial(lookup, key_hash=key_hash),
                                          write=False)
        if found is None:
            known.forget(key_hash)
            raise errors.Unauthorized(BAD_KEY)
        known.put(key_hash, found.integration.integration_id, found.integration.account_id)
        return found

    def refuse_if_off(found: Lookup) -> None:
        integration = found.integration
        if integration.channel_status != "enabled":
            raise errors.BadRequest(CHANNEL_OFF, channel_id=integration.channel_id,
                                    status=integration.channel_status)

    def endpoint(path: str, parse: Parse) -> Route:
        async def push(request: Request) -> Response:
            started = time.perf_counter()
            rid = new_request_id()
            locale = negotiate(request.headers.get("accept-language"))
            headers = request_id_headers(rid)
            account_id: int | None = None
            try:
                body = await read_body(request, runtime.settings.max_body_bytes)
                key = request.query_params.get("integration_key")
                if not key or not is_well_formed(key):
                    raise errors.Unauthorized(BAD_KEY)
                key_hash = hash_key(key)
                fresh: Lookup | None = None
                remembered = known.get(key_hash)
                if remembered is None:
                    fresh = await check(key_hash)
                    remembered = (fresh.integration.integration_id, fresh.integration.account_id)
                integration_id, account_id = remembered
                decision = await runtime.limiter.hit(f"i:{integration_id}")
                headers.update(decision.headers())
                if not decision.allowed:
                    raise errors.RequestTooFrequently(retry_after=headers["Retry-After"])
                if fresh is not None:
                    refuse_if_off(fresh)
                try:
                    reqs = parse(request, body)
                except errors.ApiError:
                    if fresh is None:
                        refuse_if_off(await check(key_hash))  # a dead key answers 401 first
                    raise
                # One write transaction per push, or on SQLite one per batch of pushes that
                # arrive together, each in its own savepoint (incident/ingest/batch.py). The key
                # and channel are checked again in it.
                now_s = int(runtime.clock.now())
                try:
                    alert_keys = await batcher.run(
                        functools.partial(service.ingest_all, key_hash=key_hash, reqs=reqs,
                                          now_s=now_s)
                    )
                except errors.Unauthorized:
                    known.forget(key_hash)
                    raise
                answer: Any = (PushResponse(alert_key=alert_keys[0]) if path == PUSH_PATH
                               else PushManyResponse(alert_keys=alert_keys))
                content = success_body(rid, answer)
                status, code = 200, "OK"
            except errors.ApiError as exc:
                status, code, content = failure(runtime, locale, rid, exc)
            except Exception:
                log.exception("unhandled error", request_id=rid, operation=path)
                status, code, content = failure(runtime, locale, rid, None)
            elapsed = time.perf_counter() - started
            metrics.requests.labels(path, code).inc()
            metrics.latency.labels(path).observe(elapsed)
            # Never the query string: it holds the integration key.
            log.info(
                "request", request_id=rid, operation=path, status=status, code=code,
                account_id=account_id, ms=round(elapsed * 1000, 2),
            )
            return Response(content, status, headers, media_type=_JSON)

        return Route(path, push, methods=["POST"])

    def standard(request: Request, body: bytes) -> list[PushRequest]:
        return [decode_json_body(decoder, request, body)]

    def of(convert: Callable[[Any], list[PushRequest]]) -> Parse:
        def parse(request: Request, body: bytes) -> list[PushRequest]:
            return convert(decode_json_body(any_decoder, request, body))
        return parse

    def webhook(request: Request, body: bytes) -> list[PushRequest]:
        return sources.generic(decode_json_body(any_decoder, request, body),
                               request.query_params)

    return [
        endpoint(PUSH_PATH, standard),
        endpoint(PROMETHEUS_PATH, of(sources.alertmanager)),
        endpoint(GRAFANA_PATH, of(sources.grafana)),
        endpoint(WEBHOOK_PATH, webhook),
    ]
