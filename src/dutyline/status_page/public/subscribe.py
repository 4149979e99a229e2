"""Email subscription from the public page, with double opt-in.

subscribe -> `pending` row + a confirmation-mail job (in the request's transaction);
the job mails a link -> the visitor presses Confirm -> `confirmed`.
Every email carries an unsubscribe link; pressing its button -> `unsubscribed`.

Both links open a page with a button and act only on its POST: mail scanners prefetch links,
and must neither confirm a subscription nobody wanted nor end one somebody did.

Tokens: the confirmation token is derived (HMAC with the server key) from the subscriber id
and a random nonce that only the mail job's payload holds; the row keeps its SHA-256. So the
database alone (rows or job payloads) never yields a working link, and a newer request (new
nonce) makes older links and not-yet-sent mails void. The unsubscribe token is the shared
scheme of status_page/tokens.py, so notification mails sent by the admin side link the same.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.config import Settings
from dutyline.kit.ids import hex_id
from dutyline.kit.mail import send_mail
from dutyline.status_page import tokens
from dutyline.status_page.page import repository as page_repo
from dutyline.status_page.public.render import render_email
from dutyline.status_page.public.snapshot import PageHead
from dutyline.status_page.subscriber import repository as subscriber_repo
from dutyline.work.queue import enqueue
from dutyline.work.registry import JobContext, job_handler

log = structlog.get_logger("dutyline.status_page.public")

CONFIRM_MAIL_JOB = "status_page.subscriber_confirm_mail"
# A pending address gets at most one confirmation mail per this many seconds, so the form
# cannot be used to flood somebody's inbox.
RESEND_AFTER_S = 300


def confirm_token(key: str, subscriber_id: str, nonce: str) -> str:
    mac = hmac.new(key.encode(), f"status-confirm:{subscriber_id}:{nonce}".encode(),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def confirm_url(base_url: str, url_name: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/status/{url_name}/confirm?token={quote(token, safe='')}"


@dataclass(frozen=True)
class Outcome:
    # mailed: a confirmation mail was queued; quiet: nothing to do (already confirmed, or a
    # mail went out moments ago). The visitor sees the same answer either way, so the form
    # does not tell strangers who is subscribed.
    mailed: bool


async def subscribe(
    conn: AsyncConnection, settings: Settings, head: PageHead, email: str, *, now_s: int
) -> Outcome:
    key = await tokens.server_key(settings)
    row = await subscriber_repo.by_email(conn, head.page_id, email)
    nonce = secrets.token_urlsafe(16)
    if row is None:
        subscriber_id = hex_id()
        await subscriber_repo.insert_subscribers(conn, [{
            "subscriber_id": subscriber_id, "page_id": head.page_id,
            "account_id": head.account_id, "email": email, "status": "pending",
            "confirm_token_hash": tokens.token_hash(confirm_token(key, subscriber_id, nonce)),
            "unsubscribe_token_hash": tokens.unsubscribe_token_hash(key, subscriber_id),
            "source": "web", "created_at": now_s, "updated_at": now_s,
        }])
    else:
        subscriber_id = row.subscriber_id
        if row.status == "confirmed":
            return Outcome(mailed=False)
        if row.status == "pending" and now_s - int(row.updated_at) < RESEND_AFTER_S:
            return Outcome(mailed=False)
        await subscriber_repo.update_subscriber(conn, subscriber_id, {
            "status": "pending",
            "confirm_token_hash": tokens.token_hash(confirm_token(key, subscriber_id, nonce)),
            "unsubscribe_token_hash": tokens.unsubscribe_token_hash(key, subscriber_id),
            "updated_at": now_s,
        })
    await enqueue(conn, CONFIRM_MAIL_JOB, {"subscriber_id": subscriber_id, "nonce": nonce},
                  now_ms=now_s * 1000, max_attempts=8)
    return Outcome(mailed=True)


async def find_by_confirm_token(
    conn: AsyncConnection, head: PageHead, token: str
) -> Any | None:
    if not token or len(token) > 128:
        return None
    return await subscriber_repo.by_confirm_hash(conn, head.page_id, tokens.token_hash(token))


async def find_by_unsubscribe_token(
    conn: AsyncConnection, head: PageHead, token: str
) -> Any | None:
    if not token or len(token) > 128:
        return None
    return await subscriber_repo.by_unsubscribe_hash(conn, head.page_id,
                                                     tokens.token_hash(token))


async def confirm(conn: AsyncConnection, subscriber: Any, *, now_s: int) -> None:
    # The confirmation link works once: its hash is cleared with the confirmation.
    await subscriber_repo.update_subscriber(conn, subscriber.subscriber_id, {
        "status": "confirmed", "confirm_token_hash": "", "updated_at": now_s,
    })


async def unsubscribe(conn: AsyncConnection, subscriber: Any, *, now_s: int) -> None:
    if subscriber.status != "unsubscribed":
        await subscriber_repo.update_subscriber(conn, subscriber.subscriber_id, {
            "status": "unsubscribed", "confirm_token_hash": "", "updated_at": now_s,
        })


@job_handler(CONFIRM_MAIL_JOB)
async def send_confirmation(ctx: JobContext, payload: dict[str, Any]) -> None:
    settings = ctx.runtime.settings
    subscriber_id = str(payload["subscriber_id"])
    key = await tokens.server_key(settings)
    token = confirm_token(key, subscriber_id, str(payload["nonce"]))
    # Read on a connection of its own and send before the job's transaction starts: on SQLite
    # that transaction holds the writer lock, which must not wait on an SMTP server.
    async with ctx.runtime.db.connect() as conn:
        subscriber = await subscriber_repo.by_id(conn, subscriber_id)
        page = (None if subscriber is None
                else await page_repo.page_by_id(conn, subscriber.page_id))
    if (
        subscriber is None or page is None or subscriber.status != "pending"
        or not tokens.tokens_match(token, subscriber.confirm_token_hash)
    ):
        # Confirmed, unsubscribed, deleted, or superseded by a newer request: its own mail.
        log.info("confirmation mail skipped", subscriber_id=subscriber_id)
        return
    unsubscribe_link = tokens.unsubscribe_url(
        settings.base_url, page.url_name, tokens.unsubscribe_token(key, subscriber_id)
    )
    mail_ctx = {
        "page_name": page.page_name,
        "confirm_url": confirm_url(settings.base_url, page.url_name, token),
        "unsubscribe_url": unsubscribe_link,
    }
    await send_mail(
        settings,
        to=subscriber.email,
        subject=f"Confirm your subscription to {' '.join(page.page_name.split())} status updates",
        text=render_email("confirm_email.txt", **mail_ctx),
        html=render_email("confirm_email.html", **mail_ctx),
        headers={"List-Unsubscribe": f"<{unsubscribe_link}>",
                 "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
    )
