"""Emailing a page's subscribers about an event: a durable job per notification.

`enqueue` runs in the writer's own transaction (a rolled-back event emails nobody). The job
sends one batch of confirmed subscribers, keyset-paged by id, then hands the rest to a
successor job, so a page with many subscribers never holds one job (and its lease) for long.
A failed send ends the batch early and hands over from the failed subscriber with a backoff:
subscribers already mailed are not mailed again. What the email says is read when it is sent,
so an event deleted meanwhile sends nothing.

Every email carries the subscriber's one-click unsubscribe link (tokens.unsubscribe_url); its
token is derived from the server key, and the stored hash is put right if a row lacks it."""

from __future__ import annotations

import html
import json
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.config import Settings
from dutyline.kit import mail
from dutyline.status_page import tokens
from dutyline.status_page.change import repository as change_repo
from dutyline.status_page.page import repository as page_repo
from dutyline.status_page.subscriber import repository as subscribers
from dutyline.work import queue
from dutyline.work.registry import JobContext, job_handler

log = structlog.get_logger("dutyline.status_page.notify")

NOTIFY_JOB = "status_page.notify"
BATCH = 50
# Consecutive failed hand-overs before a notification is given up (logged).
MAX_FAILURES = 8
RETRY_BASE_S = 30
RETRY_CAP_S = 3600


async def enqueue(conn: AsyncConnection, *, page_id: int, change_id: int, update_id: str,
                  event: str, now_s: int) -> None:
    """Email the page's subscribers about this entry of the event (`created` / `updated`)."""
    await queue.enqueue(conn, NOTIFY_JOB, {
        "page_id": page_id, "change_id": change_id, "update_id": update_id, "event": event,
        "after": "", "failures": 0,
    }, now_ms=now_s * 1000)


async def _load(conn: AsyncConnection, payload: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    page_id, change_id = int(payload["page_id"]), int(payload["change_id"])
    page = await page_repo.page_by_id(conn, page_id)
    change = await change_repo.change_of_page(conn, page_id, change_id)
    entry = await change_repo.entry_of_change(conn, change_id, str(payload["update_id"]))
    if page is None or change is None or entry is None:
        return None
    return page, change, entry


def _mentioned(change: Any, entry: Any) -> set[str]:
    ids = {str(c["component_id"]) for c in json.loads(change.affected_components or "[]")}
    ids.update(str(c["component_id"]) for c in json.loads(entry.component_changes or "[]"))
    return ids


def _wants(subscriber: Any, mentioned: set[str]) -> bool:
    followed = json.loads(subscriber.component_ids or "[]")
    return not followed or bool(mentioned.intersection(followed))


def compose(settings: Settings, page: Any, change: Any, entry: Any, event: str,
            unsubscribe: str) -> tuple[str, str, str]:
    """Subject, text and HTML of one notification."""
    status = entry.status.replace("_", " ")
    kind = "Maintenance" if change.type == "maintenance" else "Incident"
    verb = "New" if event == "created" else "Update"
    subject = f"[{page.page_name}] {verb}: {change.title} ({status})"
    page_url = f"{settings.base_url.rstrip('/')}/status/{page.url_name}"
    text = (
        f"{kind}: {change.title}\nStatus: {status}\n\n{entry.description}\n\n"
        f"Status page: {page_url}\n\n"
        f"You receive this because you subscribed to {page.page_name}.\n"
        f"Unsubscribe: {unsubscribe}\n"
    )
    e = html.escape
    body = (
        f"<h1>{e(kind)}: {e(change.title)}</h1><p><strong>Status:</strong> {e(status)}</p>"
        f"<p>{e(entry.description).replace(chr(10), '<br>')}</p>"
        f'<p><a href="{e(page_url)}">View the status page</a></p>'
        f"<p>You receive this because you subscribed to {e(page.page_name)}. "
        f'<a href="{e(unsubscribe)}">Unsubscribe</a></p>'
    )
    return subject, text, body


@job_handler(NOTIFY_JOB)
async def send_notifications(ctx: JobContext, payload: dict[str, Any]) -> None:
    loaded = await _load(ctx.conn, payload)
    if loaded is None:
        return  # the page, event or entry was deleted since: nothing to say
    page, change, entry = loaded
    settings = ctx.runtime.settings
    secret_key = await tokens.server_key(settings)
    mentioned = _mentioned(change, entry)
    batch = await subscribers.confirmed_after(ctx.conn, page.page_id, str(payload["after"]),
                                              BATCH)
    for subscriber in batch:
        if not _wants(subscriber, mentioned):
            continue
        token = tokens.unsubscribe_token(secret_key, subscriber.subscriber_id)
        if subscriber.unsubscribe_token_hash != tokens.token_hash(token):
            await subscribers.update_subscriber(ctx.conn, subscriber.subscriber_id, {
                "unsubscribe_token_hash": tokens.token_hash(token)})
        subject, text, body = compose(settings, page, change, entry, str(payload["event"]),
                                      tokens.unsubscribe_url(settings.base_url, page.url_name,
                                                             token))
        try:
            await mail.send_mail(settings, to=subscriber.email, subject=subject, text=text,
                                 html=body)
        except mail.MailNotConfigured:
            log.warning("status_page.notify.no_mail", page_id=page.page_id)
            return
        except mail.MailError:
            await _hand_over(ctx, payload, after=_before(batch, subscriber), failed=True)
            return
    if len(batch) == BATCH:
        await _hand_over(ctx, payload, after=batch[-1].subscriber_id, failed=False)


def _before(batch: list[Any], subscriber: Any) -> str:
    """The keyset position just before `subscriber`, so the successor starts with it."""
    index = batch.index(subscriber)
    return str(batch[index - 1].subscriber_id) if index else ""


async def _hand_over(ctx: JobContext, payload: dict[str, Any], *, after: str,
                     failed: bool) -> None:
    failures = int(payload.get("failures", 0)) + 1 if failed else 0
    if failures > MAX_FAILURES:
        log.error("status_page.notify.gave_up", page_id=payload["page_id"],
                  change_id=payload["change_id"], update_id=payload["update_id"])
        return
    now_ms = ctx.now_ms()
    delay_s = min(RETRY_CAP_S, RETRY_BASE_S * 2 ** (failures - 1)) if failed else 0
    await queue.enqueue(ctx.conn, NOTIFY_JOB, {**payload, "after": after or payload["after"],
                                               "failures": failures},
                        now_ms=now_ms, run_at_ms=now_ms + delay_s * 1000)
