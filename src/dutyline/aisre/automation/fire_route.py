"""POST /safari/automation/triggers/{trigger_id}/fire: the HTTP POST trigger.

Not an app_key operation: `Authorization: Bearer <http_post_token>` authenticates it. It answers
like one (envelope, Service-Request-Id, localized errors).

Order: body size (64 KB, 413) -> token (401, the same for an unknown trigger and a wrong
token; skipped for a trigger this process saw opened by the same token) -> rate limit per
trigger (429) -> JSON body (400) -> one write transaction, in one hop (Database.run_sync), that
checks the token again, refuses a disabled trigger or rule (403) and queues the run -> 200
`{type: "routine_fire", run_id, session_id}`."""

from __future__ import annotations

import functools
import hmac
import time
from collections import OrderedDict
from typing import Any

import msgspec
import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.aisre.automation import runs, tokens
from dutyline.api import errors
from dutyline.api.envelope import REQUEST_ID_HEADER, success_body
from dutyline.api.handler import CallLog, decode_json_body, failure, rate_limit, read_body
from dutyline.api.i18n import negotiate
from dutyline.api.runtime import Runtime
from dutyline.kit.ids import request_id as new_request_id

log = structlog.get_logger("dutyline.api")

FIRE_PATH = "/safari/automation/triggers/{trigger_id}/fire"
MAX_CONTEXT_BYTES = 64 * 1024
KNOWN_TRIGGERS = 10_000
_JSON = "application/json"
_any = msgspec.json.Decoder(Any)


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 256:
        raise errors.Unauthorized(runs.FIRE_BAD_TOKEN)
    return token


class KnownTokens:
    """trigger_id -> hash of the token that last opened it, least recently used out first:
    a trigger fired again skips the read transaction of the token check before the rate limit.
    The writing transaction checks the token again, so a rotated one is refused at once."""

    def __init__(self, size: int = KNOWN_TRIGGERS) -> None:
        self._size = size
        self._entries: OrderedDict[str, str] = OrderedDict()

    def get(self, trigger_id: str) -> str | None:
        found = self._entries.get(trigger_id)
        if found is not None:
            self._entries.move_to_end(trigger_id)
        return found

    def put(self, trigger_id: str, token_hash: str) -> None:
        self._entries[trigger_id] = token_hash
        self._entries.move_to_end(trigger_id)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, trigger_id: str) -> None:
        self._entries.pop(trigger_id, None)


def routes(runtime: Runtime) -> list[Route]:
    known = KnownTokens()
    call_log = CallLog(runtime, FIRE_PATH)

    async def fire(request: Request) -> Response:
        started = time.perf_counter()
        rid = new_request_id()
        locale = negotiate(request.headers.get("accept-language"))
        headers: dict[str, str] = {REQUEST_ID_HEADER: rid}
        trigger_id = str(request.path_params.get("trigger_id", ""))
        try:
            body = await read_body(request, MAX_CONTEXT_BYTES)
            token = _bearer(request)
            token_hash = tokens.token_hash(token)
            if not hmac.compare_digest(known.get(trigger_id) or "", token_hash):
                await runtime.db.run_sync(functools.partial(
                    runs.check_fire_token_sync, trigger_id=trigger_id, token=token), write=False)
                known.put(trigger_id, token_hash)
            await rate_limit(runtime, f"atrig:{trigger_id}", headers)
            context = decode_json_body(_any, request, body)
            now_ms = int(runtime.clock.now() * 1000)
            try:
                answer = await runtime.db.run_sync(functools.partial(
                    runs.fire_sync, trigger_id=trigger_id, token=token, context=context,
                    now_ms=now_ms))
            except errors.Unauthorized:
                known.forget(trigger_id)  # rotated or deleted since it was remembered
                raise
            content = success_body(rid, answer)
            status, code = 200, "OK"
        except errors.ApiError as exc:
            status, code, content = failure(runtime, locale, rid, exc)
        except Exception:
            log.exception("unhandled error", request_id=rid, operation=FIRE_PATH)
            status, code, content = failure(runtime, locale, rid, None)
        # Never the Authorization header: it holds the token.
        call_log.record(rid, started, status, code, trigger_id=trigger_id)
        return Response(content, status, headers, media_type=_JSON)

    return [Route(FIRE_PATH, fire, methods=["POST"])]
