"""POST /event/push/change/standard?integration_key=…: a change event from the tool that made
the change (a deployment pipeline, a configuration tool, a feature-flag service).

Not an app_key operation: the change integration's key authenticates it and names its channel,
as for alert pushes (incident/ingest/endpoint.py), through the same pipeline (request id,
envelope, localized errors, metrics, access line) and its own steps:

body size -> integration key (401, nothing stored) and channel state (400) -> rate limit per
integration (429) -> body schema (400) -> one write transaction (the key checked again in
it) -> 200 `{change_id, change_key}`."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.routing import Route

from dutyline.api import errors
from dutyline.api.handler import Call, Pipeline, decode_json_body, rate_limit, read_body
from dutyline.api.runtime import Runtime
from dutyline.channel.integration.service import hash_key, is_well_formed
from dutyline.incident.change import service
from dutyline.incident.change.schemas import ChangePushRequest

PUSH_PATH = "/event/push/change/standard"


class ChangePushEndpoint(Pipeline):
    def __init__(self, runtime: Runtime) -> None:
        super().__init__(runtime, PUSH_PATH)
        self.decoder = msgspec.json.Decoder(ChangePushRequest)

    async def _run(self, request: Request, call: Call, headers: dict[str, str]) -> Any:
        runtime = self.runtime
        body = await read_body(request, runtime.settings.max_body_bytes)
        key = request.query_params.get("integration_key")
        if not key or not is_well_formed(key):
            raise errors.Unauthorized(service.BAD_KEY)
        key_hash = hash_key(key)
        # Who the key is, read before the rate limit and the write transaction, so a flood
        # of pushes with a wrong key costs no write.
        integration_id, account_id, _ = await runtime.db.run_sync(
            functools.partial(service.check_key_sync, key_hash=key_hash), write=False)
        call.who = {"account_id": account_id}
        await rate_limit(runtime, f"i:{integration_id}", headers)
        req = decode_json_body(self.decoder, request, body)
        now_s = int(runtime.clock.now())
        return await runtime.db.run_sync(functools.partial(
            service.push_sync, key_hash=key_hash, req=req, now_s=now_s))


def routes(runtime: Runtime) -> list[Route]:
    # A bound method: Starlette treats any other callable as a raw ASGI app.
    return [Route(PUSH_PATH, ChangePushEndpoint(runtime).__call__, methods=["POST"])]
