"""Acknowledging by keypress during a voice page.

The call's TwiML gathers one digit and has Twilio POST it to `/incident/voice/<token>`, the
token being the person's signed acknowledge link. Twilio signs every callback as its security
guide documents: `X-Twilio-Signature` = base64(HMAC-SHA1(key = the account's auth token,
message = the full URL it requested + every POST parameter name and value, sorted by name)).
Only a request with that signature, for our account, acts; pressing "1" acknowledges the
incident as the person called (the same path as the link's button). The answer is TwiML that
says what happened."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import structlog
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.dispatch import links

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

log = structlog.get_logger("dutyline.dispatch.voice")

ACK_DIGIT = "1"
SIGNATURE_HEADER = "X-Twilio-Signature"


def twilio_signature(auth_token: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    """Twilio's request signature: the URL, then each parameter's name and value in name
    order (a repeated name's values sorted too), HMAC-SHA1, base64."""
    message = url + "".join(k + v for k, v in sorted(params))
    mac = hmac.new(auth_token.encode("utf-8"), message.encode("utf-8"), hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def _say(text: str, status: int = 200) -> Response:
    return Response(f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say>{escape(text)}"
                    "</Say></Response>", status_code=status, media_type="text/xml")


def routes(runtime: Runtime) -> list[Route]:
    settings = runtime.settings

    async def gathered(request: Request) -> Response:
        token = request.path_params["token"]
        form = await request.form()
        params = [(k, str(v)) for k, v in form.multi_items()]
        # The URL Twilio requested is the one the call's TwiML named: built from the base URL
        # as configured, since a proxy in front may change the host or strip a path prefix.
        url = settings.base_url.rstrip("/") + links.VOICE_PATH + token
        if request.url.query:
            url += "?" + request.url.query
        auth_token = settings.twilio_auth_token or ""
        given = request.headers.get(SIGNATURE_HEADER, "")
        if not auth_token or not hmac.compare_digest(
                given.encode(), twilio_signature(auth_token, url, params).encode()) \
                or form.get("AccountSid") != settings.twilio_account_sid:
            log.info("dispatch.voice.refused", reason="signature")
            return _say("This request is not signed by Twilio.", 403)
        link = links.verify(await links.server_key(settings), token, int(runtime.clock.now()))
        if link is None or link.action != "ack":
            return _say("This call's link has expired. Open the incident in dutyline.", 404)
        if form.get("Digits") != ACK_DIGIT:
            return _say("Nothing was done. Goodbye.")
        outcome = await links.perform(
            runtime, link, client_ip=request.client.host if request.client else "")
        log.info("dispatch.voice.keypress", incident_id=link.incident_id,
                 person_id=link.person_id, outcome=outcome)
        if outcome == links.DONE:
            return _say("The incident is acknowledged. Goodbye.")
        if outcome == links.NOT_MEMBER:
            return _say("You are no longer a member of this account. Goodbye.")
        return _say("The incident is already acknowledged or closed. Goodbye.")

    return [Route(links.VOICE_PATH + "{token}", gathered, methods=["POST"])]
