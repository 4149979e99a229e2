"""POST /event/push/alert/standard?integration_key=…: the standard alert push; beside it
the same pipeline for other tools' payloads (sources.py): /event/push/alert/prometheus
(Alertmanager's webhook), /event/push/alert/grafana and /event/push/alert/webhook.

Not an app_key operation (the integration key authenticates and routes it), but it runs
through the same pipeline (api/handler.py `Pipeline`: request id, envelope, localized errors,
metrics and access line) with its own steps in place of an operation's: the integration key
is its authentication, checked BEFORE any transaction (an operation authenticates inside its
one transaction), so a flood of pushes is rate-limited per integration without costing a
transaction each; keys resolve from memory (KnownKeys); and on SQLite the pushes that arrive
together share one write transaction (batch.py). The body size, content type and JSON rules
and the rate-limit step and its headers are the operations' own functions.

Order: body size -> integration key (401, nothing stored) -> rate limit per integration
(429) -> channel state (400) -> body schema (400) -> one write transaction -> 200. What
became of each event is recorded in that transaction for the integration's page
(outcomes.py); a push refused after the rate limit (400) is recorded apart with its reason.

A key seen recently skips its lookup before the rate limit: which integration a key names
never changes, so the process remembers it (KnownKeys). Whether the key is still live and its
channel still takes alerts is checked again inside the transaction that stores the event
(service.ingest), so a revoked key stores nothing from its very next push on; only the
lookup's query before the rate limit is saved."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
import structlog
from starlette.requests import Request
from starlette.routing import Route

from dutyline.api import errors
from dutyline.api.handler import Call, Pipeline, decode_json_body, rate_limit, read_body
from dutyline.api.i18n import DEFAULT_LOCALE
from dutyline.api.runtime import Runtime
from dutyline.enrichment import service as enrichment
from dutyline.incident.ingest import service, sources
from dutyline.incident.ingest.batch import IngestBatcher
from dutyline.incident.ingest.channels import Lookup, hash_key, is_well_formed, lookup
from dutyline.incident.ingest.schemas import PushManyResponse, PushRequest, PushResponse
from dutyline.incident.ingest.service import BAD_KEY, CHANNEL_OFF

PUSH_PATH = "/event/push/alert/standard"
PROMETHEUS_PATH = "/event/push/alert/prometheus"  # Alertmanager's webhook (sources.py)
GRAFANA_PATH = "/event/push/alert/grafana"
WEBHOOK_PATH = "/event/push/alert/webhook"  # any JSON, fields mapped in the query string
# The name each path's events are recorded under (outcomes.py).
SOURCE_OF_PATH = {PUSH_PATH: "standard", PROMETHEUS_PATH: "prometheus",
                  GRAFANA_PATH: "grafana", WEBHOOK_PATH: "webhook"}
KNOWN_KEYS = 10_000
log = structlog.get_logger("dutyline.ingest")
# Runs of a push whose enrichment calls mapping APIs: the answers of one round may feed the
# labels of the next API's call (chained mappings); the answers given to the last are final.
_LOOKUP_ROUNDS = 3
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


class Ingestion:
    """What the push endpoints of one app share: the batcher of SQLite writes, the keys seen
    lately, and the steps around a push's one transaction."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.batcher = IngestBatcher(runtime.db)
        self.known = KnownKeys()

    async def check(self, key_hash: str) -> Lookup:
        """The key's integration, read now: 401 when it is not live."""
        found = await self.runtime.db.run_sync(functools.partial(lookup, key_hash=key_hash),
                                               write=False)
        if found is None or not service.takes_alerts(found):
            self.known.forget(key_hash)
            raise errors.Unauthorized(BAD_KEY)
        self.known.put(key_hash, found.integration.integration_id,
                       found.integration.account_id)
        return found

    async def ingest(self, key_hash: str, reqs: list[PushRequest], now_s: int,
                     source: str = "") -> list[str]:
        """Ingest the push; when its enrichment needs mapping API answers it does not have
        (enrichment.LookupsNeeded, raised before anything is written, its transaction or
        savepoint rolled back), make those calls here, outside any transaction, and run it
        again with them. The last round's answers are final: a push never loops."""
        runtime = self.runtime
        answers = enrichment.Answers()  # none yet: ask for the calls needed
        for round_ in range(_LOOKUP_ROUNDS):
            try:
                return await self.batcher.run(functools.partial(
                    service.ingest_all, key_hash=key_hash, reqs=reqs, now_s=now_s,
                    answers=answers, source=source))
            except enrichment.LookupsNeeded as needed:
                answers = await enrichment.fetch_lookups(
                    needed, before=answers, final=round_ == _LOOKUP_ROUNDS - 2,
                    deps=runtime.deps, now_s=now_s,
                    count=runtime.metrics.count_enrichment_lookup)
        raise RuntimeError("mapping API answers were final and still asked for")


def refuse_if_off(found: Lookup) -> None:
    integration = found.integration
    if integration.channel_status != "enabled":
        raise errors.BadRequest(CHANNEL_OFF, channel_id=integration.channel_id,
                                status=integration.channel_status)


class IngestEndpoint(Pipeline):
    """One push path: the operation pipeline's frame (api/handler.py Pipeline) with the
    integration key as its authentication step, in the order of the module's docstring."""

    def __init__(self, ingestion: Ingestion, path: str, parse: Parse) -> None:
        super().__init__(ingestion.runtime, path)
        self.ingestion = ingestion
        self.parse = parse

    def credential(self, request: Request) -> str:
        """The integration key's hash; 401 for a missing or malformed key."""
        key = request.query_params.get("integration_key")
        if not key or not is_well_formed(key):
            raise errors.Unauthorized(BAD_KEY)
        return hash_key(key)

    async def authenticate(self, key_hash: str) -> tuple[int, int, Lookup | None]:
        """(integration id, account id, the lookup when it was read now): a key seen lately
        is taken from memory, since which integration a key names never changes; whether it
        is still live is checked again in the push's transaction."""
        ingestion = self.ingestion
        remembered = ingestion.known.get(key_hash)
        fresh: Lookup | None = None
        if remembered is None:
            fresh = await ingestion.check(key_hash)
            remembered = (fresh.integration.integration_id, fresh.integration.account_id)
        return remembered[0], remembered[1], fresh

    async def _run(self, request: Request, call: Call, headers: dict[str, str]) -> Any:
        runtime, ingestion = self.runtime, self.ingestion
        body = await read_body(request, runtime.settings.max_body_bytes)
        key_hash = self.credential(request)
        integration_id, account_id, fresh = await self.authenticate(key_hash)
        call.who = {"account_id": account_id}
        await rate_limit(runtime, f"i:{integration_id}", headers)
        try:
            alert_keys = await self._ingest(request, body, key_hash, fresh)
        except errors.Unauthorized:
            ingestion.known.forget(key_hash)
            raise
        except errors.ApiError as exc:
            # Past the rate limit, so a flood of bad pushes costs at most its limit in
            # writes: recorded for the integration's page with its reason.
            await self._record_refusal(integration_id, account_id, exc)
            raise
        if self.path == PUSH_PATH:
            return PushResponse(alert_key=alert_keys[0])
        return PushManyResponse(alert_keys=alert_keys)

    async def _ingest(self, request: Request, body: bytes, key_hash: str,
                      fresh: Lookup | None) -> list[str]:
        ingestion = self.ingestion
        if fresh is not None:
            refuse_if_off(fresh)
        try:
            reqs = self.parse(request, body)
        except errors.ApiError:
            if fresh is None:
                refuse_if_off(await ingestion.check(key_hash))  # a dead key answers 401 first
            raise
        # One write transaction per push, or on SQLite one per batch of pushes that arrive
        # together, each in its own savepoint (incident/ingest/batch.py). The key and channel
        # are checked again in it.
        now_s = int(self.runtime.clock.now())
        return await ingestion.ingest(key_hash, reqs, now_s, SOURCE_OF_PATH[self.path])

    async def _record_refusal(self, integration_id: int, account_id: int,
                              exc: errors.ApiError) -> None:
        runtime = self.runtime
        reason = runtime.translator.render(DEFAULT_LOCALE, exc.message, exc.fields)
        try:
            await self.ingestion.batcher.run(functools.partial(
                service.record_refusal, account_id=account_id, integration_id=integration_id,
                source=SOURCE_OF_PATH[self.path], reason=reason,
                now_s=int(runtime.clock.now())))
        except Exception:  # the refusal is what the caller must hear about, not this
            log.warning("refused push not recorded", integration_id=integration_id,
                        exc_info=True)


def routes(runtime: Runtime) -> list[Route]:
    ingestion = Ingestion(runtime)
    decoder = msgspec.json.Decoder(PushRequest)
    any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()

    def standard(request: Request, body: bytes) -> list[PushRequest]:
        return [decode_json_body(decoder, request, body)]

    def of(convert: Callable[[Any], list[PushRequest]]) -> Parse:
        def parse(request: Request, body: bytes) -> list[PushRequest]:
            return convert(decode_json_body(any_decoder, request, body))
        return parse

    def webhook(request: Request, body: bytes) -> list[PushRequest]:
        return sources.generic(decode_json_body(any_decoder, request, body),
                               request.query_params)

    def endpoint(path: str, parse: Parse) -> Route:
        # A bound method: Starlette treats any other callable as a raw ASGI app.
        return Route(path, IngestEndpoint(ingestion, path, parse).__call__, methods=["POST"])

    return [
        endpoint(PUSH_PATH, standard),
        endpoint(PROMETHEUS_PATH, of(sources.alertmanager)),
        endpoint(GRAFANA_PATH, of(sources.grafana)),
        endpoint(WEBHOOK_PATH, webhook),
    ]
