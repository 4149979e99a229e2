"""A test notification: a short message to one member through each of their channels, sent
at once (not through the delivery jobs) and answered channel by channel, so a person can see
that a page would reach them before the night it has to.

What is sent is no page: no incident, no delivery row, no feed entry; only the audit log
keeps that it was asked for (`test_member`, which any member may ask for themselves; another
member needs account management). Each channel is bounded by TIMEOUT_S, all sent side by
side. The operator's `dutyline notify-test` calls `test_member` too, as the service itself.

A member is tested at most once per channel every COOLDOWN_S, whoever asks (the API, the
console's button): a channel tested more recently is answered `skipped` with the wait, and
a request that would send nothing else for that reason alone is refused (429). Only a
channel that is actually tried counts: a test skipped for a missing address or setting can
be asked again at once, after the address is added. The operator's command is under the
same cooldown, shared with the server's processes when they share it through Redis."""

from __future__ import annotations

import asyncio
import html
import math
from dataclasses import dataclass, replace

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.ratelimit import MemoryRateLimiter, RateLimiter, Window
from dutyline.config import Settings
from dutyline.kit.channels import address_key, personal_refusal
from dutyline.kit.clock import Clock
from dutyline.kit.ids import hex_id
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.notify.delivery.adapters import adapter, needs
from dutyline.notify.delivery.adapters.base import Outgoing, SendEnv
from dutyline.notify.delivery.schemas import NotifyTestResponse, NotifyTestResult
from dutyline.notify.preference import service as preferences
from dutyline.platform.member.service import Contact, mask_phone

TIMEOUT_S = 20.0
COOLDOWN_S = 60.0
SENT, FAILED, SKIPPED = "sent", "failed", "skipped"
SUBJECT = "dutyline test notification"

log = structlog.get_logger("dutyline.notify.delivery")


@dataclass(frozen=True)
class Plan:
    """Who is tested, by what, and from whom (read before anything is sent)."""

    person: Contact
    preference: preferences.Preference
    channels: tuple[str, ...]
    requested_by: str


def _same_app(channel: str) -> str:
    # `slack` and `slack_app` reach a person through the same app: test it once.
    return address_key(channel) or channel


def default_channels(person: Contact, pref: preferences.Preference) -> tuple[str, ...]:
    """Every channel the member can be reached by: those they chose per severity, e-mail
    and SMS when they have an address and a phone, and each chat handle they gave. Voice is
    only called when they chose it (or it is asked for): a test should not ring by default."""
    chosen = [c for s in SEVERITY_KEYS for c in pref.channels(s)]
    if person.email:
        chosen.append("email")
    if person.phone:
        chosen.append("sms")
    chosen += sorted(pref.im)
    seen: dict[str, str] = {}
    for channel in chosen:
        seen.setdefault(_same_app(channel), channel)
    return tuple(seen.values())


async def plan(conn: AsyncConnection, actor: Actor, *, member_id: int,
               channels: list[str] | None) -> Plan:
    for i, channel in enumerate(channels or []):
        if refused := personal_refusal(channel):
            raise errors.invalid(f"channels[{i}]", refused)
    person, pref = await preferences.reach(conn, actor, member_id=member_id)
    wanted = (tuple(dict.fromkeys(channels)) if channels
              else default_channels(person, pref))
    return Plan(person=person, preference=pref, channels=wanted,
                requested_by=actor.person_name or ("the server's operator"
                                                   if not actor.person_id else ""))


def _content(channel: str, plan: Plan) -> dict[str, str]:
    by = f" at the request of {plan.requested_by}" if plan.requested_by else ""
    text = (f"This is a test notification from dutyline{by}, to check that {channel} "
            f"reaches {plan.person.person_name}. No incident is open; nothing to do.")
    if channel == "email":
        return {"subject": SUBJECT, "text": text + "\n", "html": f"<p>{html.escape(text)}</p>"}
    return {"text": text}


def _no_address(channel: str) -> str:
    kind = address_key(channel)
    if kind == "email":
        return "the member has no e-mail address"
    if kind == "phone":
        return "the member has no phone number"
    return f"the member has no {kind} handle (im.{kind} in their notification settings)"


def _shown(channel: str, address: str) -> str:
    # Phones are masked wherever a member record is read; the test answer is no exception.
    return mask_phone(address) if address_key(channel) == "phone" else address


def _unsendable(env: SendEnv, plan: Plan, channel: str) -> NotifyTestResult | None:
    """Why `channel` is not tried at all (the server cannot use it, or the member has no
    address for it), or None."""
    reason = needs.gap(env.settings, channel, personal=True)
    if reason:
        return NotifyTestResult(channel=channel, status=SKIPPED, reason=reason)
    if adapter(channel, personal=True) is None:
        reason = f"{channel} cannot reach a person"
    elif not preferences.address(plan.person, plan.preference, channel):
        reason = _no_address(channel)
    return NotifyTestResult(channel=channel, status=SKIPPED, reason=reason) if reason else None


async def _one(env: SendEnv, plan: Plan, channel: str) -> NotifyTestResult:
    if (unsendable := _unsendable(env, plan, channel)) is not None:
        return unsendable
    address = preferences.address(plan.person, plan.preference, channel)
    send = adapter(channel, personal=True)
    assert send is not None
    shown = _shown(channel, address)
    out = Outgoing(delivery_id=hex_id(), channel=channel, address=address,
                   content=_content(channel, plan), attempt=1)
    try:
        attempt = await asyncio.wait_for(send(env, out), TIMEOUT_S)
    except TimeoutError:
        return NotifyTestResult(channel=channel, status=FAILED, address=shown,
                                reason=f"no answer within {TIMEOUT_S:g} s")
    except Exception as exc:  # an adapter's own fault: answered, not a 500
        log.exception("notify.test.adapter_failed", channel=channel)
        # The exception's own text may carry a URL with a credential in its path (the
        # server's Telegram bot): the answer names its kind, the log has the rest.
        return NotifyTestResult(channel=channel, status=FAILED, address=shown,
                                reason=f"{type(exc).__name__} (see the server log)")
    if attempt.ok:
        return NotifyTestResult(channel=channel, status=SENT, address=shown)
    return NotifyTestResult(channel=channel, status=FAILED, address=shown,
                            reason=attempt.error or f"HTTP {attempt.status_code}")


def cooldown_limiter(settings: Settings, clock: Clock) -> RateLimiter:
    """The process's record of recent tests: one per key per COOLDOWN_S, shared by the
    server's processes through Redis when they share rate limits that way."""
    windows = (Window(1, COOLDOWN_S),)
    if settings.redis_url:
        from dutyline.api.ratelimit_redis import RedisRateLimiter

        return RedisRateLimiter(settings.redis_url, windows, prefix="dutyline:notify-test:",
                                clock=clock)
    return MemoryRateLimiter(windows, clock)


async def _cooled(cooldown: RateLimiter, env: SendEnv, plan: Plan,
                  actor: Actor) -> tuple[tuple[str, ...], dict[str, int]]:
    """The channels that may be tried now, and the seconds to wait for each channel tested
    too recently (each channel that may be tried is counted as tested)."""
    allowed: list[str] = []
    waits: dict[str, int] = {}
    for channel in plan.channels:
        if _unsendable(env, plan, channel) is not None:
            allowed.append(channel)  # answered `skipped` by _one, not counted
            continue
        decision = await cooldown.hit(f"{actor.account_id}:{plan.person.person_id}:{channel}")
        if decision.allowed:
            allowed.append(channel)
        else:
            waits[channel] = max(1, math.ceil(decision.retry_after))
    return tuple(allowed), waits


def _waiting(channel: str, wait_s: int) -> NotifyTestResult:
    return NotifyTestResult(channel=channel, status=SKIPPED,
                            reason=f"tested less than {COOLDOWN_S:g} s ago: "
                                   f"try again in {wait_s} s")


async def send(env: SendEnv, plan: Plan) -> list[NotifyTestResult]:
    """Send the plan's channels side by side; one result per channel, in its order."""
    results = list(await asyncio.gather(*(_one(env, plan, c) for c in plan.channels)))
    for r in results:
        (log.info if r.status == SENT else log.warning)(
            "notify.test", person_id=plan.person.person_id, channel=r.channel,
            status=r.status, reason=r.reason)
    return results


@writes("/member/notify/test", targets=lambda answer: [answer.member_id])
async def test_member(conn: AsyncConnection, actor: Actor, *, env: SendEnv,
                      cooldown: RateLimiter, member_id: int,
                      channels: list[str] | None) -> NotifyTestResponse:
    """Plan and send a test to a member (the actor when `member_id` is 0), answered per
    channel; audited as asked by the actor, whatever each channel answered. `cooldown` is
    the process's (cooldown_limiter): a channel tested within COOLDOWN_S is not sent again,
    and when that leaves nothing to try the request is refused."""
    planned = await plan(conn, actor, member_id=member_id, channels=channels)
    allowed, waits = await _cooled(cooldown, env, planned, actor)
    if waits and all(_unsendable(env, planned, c) is not None for c in allowed):
        raise errors.RequestTooFrequently(retry_after=max(waits.values()))
    sent = {r.channel: r for r in await send(env, replace(planned, channels=allowed))}
    return NotifyTestResponse(member_id=planned.person.person_id, results=[
        _waiting(c, waits[c]) if c in waits else sent[c] for c in planned.channels])
