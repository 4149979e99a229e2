"""SMS and voice calls through a Twilio-compatible HTTP API (Twilio itself, or any gateway
speaking its REST shape): form-encoded POSTs with HTTP basic auth (account SID, auth token),

- SMS: `POST {base}/2010-04-01/Accounts/{sid}/Messages.json` with `To`, `From`, `Body`;
- voice: `POST {base}/2010-04-01/Accounts/{sid}/Calls.json` with `To`, `From`, `Twiml`
  (the page read out twice by `<Say>` inside a `<Gather>`: pressing 1 acknowledges);

answered by a JSON resource whose `sid` becomes the notification's message id. Base URL,
account, token and the from-number are settings (DUTYLINE_TWILIO_*). The recipient is the
person's phone in E.164 form."""

from __future__ import annotations

import base64
from urllib.parse import quote, urlencode
from xml.sax.saxutils import escape

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv, post, response_field

SMS_MAX = 1_600  # Twilio's limit on a message body
VOICE_MAX = 1_000
FORM = "application/x-www-form-urlencoded"


GATHER_PROMPT = "Press 1 to acknowledge."


def twiml(text: str, gather_url: str = "") -> str:
    """The call: the page read out twice; with a `gather_url`, inside a `<Gather>` of one
    digit that Twilio POSTs there (signed), so pressing 1 acknowledges (dispatch/voice.py)."""
    said = escape(" ".join(text.split())[:VOICE_MAX])
    if not gather_url:
        return f'<Response><Say loop="2">{said}</Say></Response>'
    action = escape(gather_url, {'"': "&quot;"})
    return (f'<Response><Gather numDigits="1" timeout="10" method="POST" action="{action}">'
            f'<Say loop="2">{said} {GATHER_PROMPT}</Say></Gather>'
            f'<Say>No key was pressed. Goodbye.</Say></Response>')


async def _create(env: SendEnv, out: Outgoing, resource: str, fields: dict[str, str]) -> Attempt:
    s = env.settings
    base = s.twilio_api_url.rstrip("/")
    if not (s.twilio_account_sid and s.twilio_auth_token and s.twilio_from_number):
        return Attempt(ok=False, retryable=False, endpoint=f"{base}/…/{resource}",
                       error="SMS and voice need DUTYLINE_TWILIO_ACCOUNT_SID, "
                             "DUTYLINE_TWILIO_AUTH_TOKEN and DUTYLINE_TWILIO_FROM_NUMBER")
    url = f"{base}/2010-04-01/Accounts/{quote(s.twilio_account_sid, safe='')}/{resource}"
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=url,
                       error="the recipient has no phone number")
    credentials = f"{s.twilio_account_sid}:{s.twilio_auth_token}".encode()
    headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode(),
               # Twilio ignores it; a compatible gateway may drop repeats with it.
               "I-Twilio-Idempotency-Token": out.delivery_id}
    body = urlencode({"To": out.address, "From": s.twilio_from_number, **fields}).encode()
    attempt = await post(env, url, body, headers, content_type=FORM)
    if attempt.ok:
        attempt.message_id = response_field(attempt, "sid")
    return attempt


async def send_sms(env: SendEnv, out: Outgoing) -> Attempt:
    return await _create(env, out, "Messages.json",
                         {"Body": str(out.content.get("text", ""))[:SMS_MAX]})


async def send_voice(env: SendEnv, out: Outgoing) -> Attempt:
    return await _create(env, out, "Calls.json",
                         {"Twiml": twiml(str(out.content.get("text", "")),
                                         str(out.content.get("gather_url", "")))})
