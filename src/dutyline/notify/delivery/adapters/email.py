"""E-mail over SMTP (DUTYLINE_SMTP_URL): a text part and an HTML part."""

from __future__ import annotations

import time

from dutyline.kit import mail
from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    c = out.content
    attempt = Attempt(ok=False, endpoint=f"mailto:{out.address}",
                      request_headers={"Subject": str(c.get("subject", ""))},
                      request_body=str(c.get("text", "")))
    if not out.address:
        attempt.error, attempt.retryable = "the recipient has no e-mail address", False
        return attempt
    started = time.monotonic()
    try:
        await mail.send_mail(env.settings, to=out.address, subject=str(c["subject"]),
                             text=str(c["text"]), html=str(c["html"]),
                             headers={"X-Dutyline-Delivery-Id": out.delivery_id})
    except mail.MailNotConfigured as exc:
        attempt.error, attempt.retryable = str(exc), False
    except mail.MailError as exc:
        attempt.error = str(exc)[:500]
    else:
        attempt.ok = True
    attempt.duration_ms = int((time.monotonic() - started) * 1000)
    return attempt
