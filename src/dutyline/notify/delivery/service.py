"""Delivery: making a notification (a row and its job, in the caller's transaction), taking
an attempt's outcome (retry with backoff, or the final outcome in the incident feed), and
reading deliveries per incident (for channel viewers) and the webhook history (for
integration viewers); and the test notification (trial.py) as the API and the console send it."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INTEGRATION_VIEW
from dutyline.channel import service as channels
from dutyline.config import Settings
from dutyline.incident.service import feed
from dutyline.incident.service import query as incidents
from dutyline.kit.clock import Clock, millis
from dutyline.kit.ids import hex_id
from dutyline.notify.delivery import repository as repo
from dutyline.notify.delivery import trial
from dutyline.notify.delivery.adapters import needs
from dutyline.notify.delivery.adapters.base import Attempt, SendEnv, dumps, session_for
from dutyline.notify.delivery.schemas import (
    DeliveryAttemptItem,
    DeliveryItem,
    ListWebhookHistoryResponse,
    NotifyTestResponse,
    WebhookHistoryDetail,
    history_item,
)
from dutyline.work import queue

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

DELIVER_JOB = "notify.deliver"
MAX_ATTEMPTS = 5
RETRY_BASE_S = 10
RETRY_CAP_S = 600
PENDING, SUCCESS, FAILED = "pending", "success", "failed"

_json = msgspec.json.Decoder()


def personal_gap(settings: Settings, channel: str) -> str | None:
    """Why a person cannot be paged by `channel` with these settings (None: they can)."""
    return needs.gap(settings, channel, personal=True)


def group_gap(settings: Settings, channel: str) -> str | None:
    """Why a group target of this kind (an app's group chat, e-mail) cannot be reached."""
    return needs.gap(settings, channel, personal=False)


@dataclass(frozen=True)
class Means:
    """One means of delivery as this server's settings have it (for the operator's page):
    `key` names it (email, twilio, telegram, slack, feishu, dingtalk, wecom, zoom, teams),
    `how` says how it sends when ready (credentials masked, never a secret), `settings` are
    the names of what to set for it, `unsupported` why no setting helps."""

    key: str
    label: str
    ready: bool
    how: str
    settings: tuple[str, ...]
    unsupported: str


_MEANS_KEYS = {needs.EMAIL: "email", needs.TWILIO: "twilio", needs.TELEGRAM_BOT: "telegram",
               needs.SLACK_APP: "slack", needs.FEISHU_APP: "feishu",
               needs.DINGTALK_APP: "dingtalk", needs.WECOM_APP: "wecom",
               needs.ZOOM_APP: "zoom", needs.TEAMS_APP: "teams"}


def means_of(settings: Settings) -> list[Means]:
    """Every means of delivery, whether these settings let it send, and how."""
    out = []
    for need, key in _MEANS_KEYS.items():
        ready = not need.unsupported and need.ready(settings)
        out.append(Means(key, need.label, ready, need.how(settings) if ready else "",
                         need.variables, need.unsupported))
    return out


def send_env(runtime: Runtime) -> SendEnv:
    """What an attempt is made with in this process: its settings, outbound policy and kept
    connections."""
    deps = runtime.deps
    env = SendEnv(settings=deps.settings, policy=needs.policy_of(deps.settings, deps.policy),
                  secrets=deps.box, clock=runtime.clock)
    return replace(env, session=runtime.kept_sessions.get("delivery", lambda: session_for(env)))


async def send_test(conn: AsyncConnection, actor: Actor, *, runtime: Runtime, member_id: int,
                    channels: list[str] | None) -> NotifyTestResponse:
    """A test notification to a member (the actor when `member_id` is 0), answered per
    channel, under the process's per-member cooldown (trial.py): the API's
    /member/notify/test and the console's buttons alike."""
    return await trial.test_member(conn, actor, env=send_env(runtime),
                                   cooldown=runtime.notify_test_cooldown,
                                   member_id=member_id, channels=channels)


def retry_delay_s(attempts_done: int) -> int:
    """10 s, 20 s, 40 s ... capped at 10 minutes."""
    return int(min(RETRY_CAP_S, RETRY_BASE_S * 2 ** max(0, attempts_done - 1)))


class Outbox:
    """The deliveries one transaction makes (a step, or a batch of them), each a row and its
    durable job, written together by `flush` before the transaction ends: a rolled-back
    step sends nothing, a committed one is never lost. `jobs` takes the maker's other jobs
    too (the escalation's next timers), into the same insert. Given the maker's job's
    `handoff`, the delivery jobs go to its worker, which sends them once the maker commits."""

    def __init__(self) -> None:
        self.deliveries: list[dict[str, Any]] = []
        self.jobs = queue.NewJobs()

    def add(self, actor: Actor, *, incident_id: str, channel_id: int, rule_id: str,
            rule_name: str, layer_idx: int, fire_type: str, channel: str, person_id: int,
            address: str, content: dict[str, Any], delivery_id: str | None = None) -> str:
        delivery_id, now = delivery_id or hex_id(), actor.now_s
        self.deliveries.append({
            "delivery_id": delivery_id, "account_id": actor.account_id,
            "incident_id": incident_id, "channel_id": channel_id, "rule_id": rule_id,
            "rule_name": rule_name, "layer_idx": layer_idx, "fire_type": fire_type,
            "channel": channel, "person_id": person_id, "address": address,
            "content": dumps(content), "status": PENDING, "attempts": 0, "last_error": "",
            "created_at": now, "updated_at": now,
        })
        self.jobs.add(DELIVER_JOB, {"delivery_id": delivery_id, "attempt": 1},
                      now_ms=actor.now_ms, dedupe_key=f"{DELIVER_JOB}:{delivery_id}:1",
                      handoff=True)
        return delivery_id

    async def flush(self, conn: AsyncConnection, handoff: queue.Handoff | None = None) -> None:
        rows, self.deliveries = self.deliveries, []
        await repo.insert_deliveries(conn, rows)
        await self.jobs.flush(conn, handoff)


async def record_attempts(conn: AsyncConnection, clock: Clock,
                          outcomes: list[tuple[Any, Attempt]]) -> list[str | None]:
    """Store attempts of deliveries (of any accounts) and move each delivery on: success, a
    retry later (its own job), or failed once the attempts are spent; the final outcome goes
    into the incident feed, written by the system (person 0). The attempts, retries and
    feed entries go in one insert each. Returns each delivery's new status, or None when
    its attempt was recorded already elsewhere."""
    now_s, now_ms = int(clock.now()), millis(clock)
    finished = [_finished(row, attempt) for row, attempt in outcomes]
    moved = await repo.finish_attempts(conn, finished, now_s=now_s)
    attempts: list[dict[str, Any]] = []
    entries: list[feed.Entry] = []
    retries = queue.NewJobs()
    for (row, attempt), done in zip(outcomes, finished, strict=True):
        if done.delivery_id not in moved:
            continue
        attempts.append(_attempt_row(row, attempt, done.attempts, now_ms))
        if done.status == PENDING:
            number = done.attempts + 1
            retries.add(DELIVER_JOB, {"delivery_id": row.delivery_id, "attempt": number},
                        now_ms=now_ms, run_at_ms=now_ms + retry_delay_s(done.attempts) * 1000,
                        dedupe_key=f"{DELIVER_JOB}:{row.delivery_id}:{number}")
        else:
            entries.append(feed.Entry(int(row.account_id), row.incident_id, "i_notify",
                                      notify_detail(row, attempt, done.status)))
    await repo.insert_attempts(conn, attempts)
    await retries.flush(conn)
    await feed.add_many(conn, entries, creator_id=0, now_s=now_s)
    return [done.status if done.delivery_id in moved else None for done in finished]


def _finished(row: Any, attempt: Attempt) -> repo.Finished:
    number = int(row.attempts) + 1
    final = attempt.ok or not attempt.retryable or number >= MAX_ATTEMPTS
    return repo.Finished(delivery_id=row.delivery_id, attempts_before=int(row.attempts),
                         attempts=number,
                         status=SUCCESS if attempt.ok else (FAILED if final else PENDING),
                         last_error=attempt.error)


def _attempt_row(row: Any, attempt: Attempt, number: int, now_ms: int) -> dict[str, Any]:
    return {
        "delivery_id": row.delivery_id, "account_id": row.account_id,
        "incident_id": row.incident_id, "channel_id": row.channel_id, "channel": row.channel,
        "attempt": number, "endpoint": attempt.endpoint,
        "request_headers": dumps(attempt.request_headers), "request_body": attempt.request_body,
        "status": SUCCESS if attempt.ok else FAILED, "status_code": attempt.status_code,
        "error_message": attempt.error, "response_headers": dumps(attempt.response_headers),
        "response_body": attempt.response_body, "duration_ms": attempt.duration_ms,
        "event_time_ms": now_ms,
    }


def notify_detail(row: Any, attempt: Attempt, status: str) -> dict[str, Any]:
    """FeedDetailIncidentNotify: who, how (`by`), and the outcome (`failed_reason`)."""
    failed: dict[str, Any] = {} if status == SUCCESS else {"failed_reason": attempt.error}
    detail: dict[str, Any] = {
        "rid": row.delivery_id, "msg_id": attempt.message_id, "fire_type": row.fire_type,
        "escalate_rule_name": row.rule_name, "escalate_rule_id": row.rule_id,
        "layer_idx": row.layer_idx, "by": row.channel, "status": status,
    }
    if row.person_id:
        detail["persons"] = [{"person_id": row.person_id, **failed}]
    elif row.channel.endswith("_app"):
        # A group chat an app posted into (reference NotifyChat).
        content = _json.decode(row.content)
        source = content.get("data_source_id")
        detail["chats"] = [{"data_source_id": source if isinstance(source, int) else 0,
                            "chat_id": row.address, "chat_name": str(content.get("alias", "")),
                            **failed}]
    elif row.channel == "email":
        detail["emails"] = [{"email": row.address, **failed}]
    else:
        detail["robots"] = [{"token": row.address, "alias": row.channel, **failed}]
    return detail


@reads_sync(CHANNEL_VIEW)
def deliveries_sync(conn: Connection, actor: Actor, *,
                    incident_id: str) -> list[DeliveryItem]:
    """Every delivery of an incident with its attempts, in one statement each (the incident's
    visibility is the caller's to check)."""
    rows = repo.deliveries_of_incident_sync(conn, actor.account_id, incident_id.lower())
    by_delivery: dict[str, list[DeliveryAttemptItem]] = {}
    for a in repo.attempts_of_sync(conn, [r.delivery_id for r in rows]):
        by_delivery.setdefault(a.delivery_id, []).append(DeliveryAttemptItem(
            attempt=a.attempt, status=a.status, status_code=a.status_code,
            error_message=a.error_message, duration=a.duration_ms,
            event_time=a.event_time_ms))
    return [
        DeliveryItem(
            delivery_id=r.delivery_id, incident_id=r.incident_id, channel=r.channel,
            person_id=r.person_id, address=r.address, escalate_rule_id=r.rule_id,
            escalate_rule_name=r.rule_name, layer_idx=r.layer_idx, fire_type=r.fire_type,
            status=r.status, attempts=by_delivery.get(r.delivery_id, []),
            last_error=r.last_error, created_at=r.created_at, updated_at=r.updated_at)
        for r in rows
    ]


def _cursor(t: int, i: int) -> str:
    return base64.urlsafe_b64encode(f"{t}:{i}".encode()).decode().rstrip("=")


def _read_cursor(text: str) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        t, _, i = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode().partition(":")
        return int(t), int(i)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise errors.invalid("search_after_ctx", "is not a cursor of this list") from exc


@reads_sync(INTEGRATION_VIEW)
def webhook_history_sync(conn: Connection, actor: Actor, *, start_ms: int, end_ms: int,
                         limit: int, status: str, ref_id: str, asc: bool, cursor: str,
                         event_types: list[str],
                         integration_id: int = 0) -> ListWebhookHistoryResponse:
    """Attempts of the account's outgoing webhooks (escalation layers' webhooks and chat
    robots, which belong to no integration: a filter on an integration finds none)."""
    if end_ms <= start_ms:
        raise errors.invalid("end_time", "must be greater than start_time")
    if status not in ("", SUCCESS, FAILED):
        raise errors.invalid("status", "must be success or failed")
    if integration_id or (event_types and "i_notify" not in event_types):
        return ListWebhookHistoryResponse(items=[], total=0, search_after_ctx="")
    after = _read_cursor(cursor)
    kw: dict[str, Any] = {"start_ms": start_ms, "end_ms": end_ms, "status": status,
                          "ref_id": ref_id.lower()}
    total = repo.history_count_sync(conn, actor.account_id, **kw)
    rows = repo.history_page_sync(conn, actor.account_id, asc=asc, after=after,
                                  limit=limit + 1, **kw)
    more = len(rows) > limit
    rows = rows[:limit]
    return ListWebhookHistoryResponse(
        items=[history_item(r) for r in rows], total=total,
        search_after_ctx=_cursor(rows[-1].event_time_ms, rows[-1].id) if more else "")


@reads_sync(INTEGRATION_VIEW)
def webhook_history_detail_sync(conn: Connection, actor: Actor, *,
                                event_id: str) -> WebhookHistoryDetail:
    delivery_id, _, number = event_id.partition("-")
    row = None
    if number.isdigit() and len(delivery_id) == 24:
        row = repo.attempt_by_event_sync(conn, actor.account_id, delivery_id.lower(),
                                         int(number))
    if row is None:
        raise errors.not_found("event", event_id)
    # What the delivery was about, by the names of now (as the reference resolves them).
    names = channels.channel_names_sync(conn, actor, [row.channel_id]) if row.channel_id else {}
    detail: WebhookHistoryDetail = history_item(
        row, WebhookHistoryDetail,
        ref_title=incidents.title_sync(conn, actor, incident_id=row.incident_id)
        if row.incident_id else "",
        channel_name=names.get(row.channel_id, ("", ""))[0])
    return detail
