"""Mails with one-time links: invitations (welcome: set a first password) and password
resets, sent by a job so that a slow or down mail relay never holds up a page.

The job carries who and what for, never a token: it makes the link when it runs (retiring
that person's earlier links of the kind), commits it, then sends. A retried job makes a new
link, so only the last mail's link works."""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.unit import Call, system_actor, unit
from dutyline.kit import mail
from dutyline.platform.member import service as members
from dutyline.platform.role import service as roles
from dutyline.web import service as signin
from dutyline.work.queue import enqueue
from dutyline.work.registry import JobContext, job_handler

log = structlog.get_logger("dutyline.web.mail")

LINK_MAIL_JOB = "console.link_mail"

_SUBJECTS = {"welcome": "You are invited to dutyline",
             "reset": "Reset your dutyline password"}
_TEXTS = {
    "welcome": ("Hello {name},\n\nyou have been invited to the dutyline console. Open this "
                "link to choose your password and sign in (it works once, within 7 days):\n\n"
                "  {url}\n\nYou sign in with this e-mail address, {email}.\n"),
    "reset": ("Hello {name},\n\nsomeone asked to reset the password of {email} for "
              "dutyline. If it was you, open this link within an hour to choose a new one "
              "(it works once):\n\n  {url}\n\nIf it was not you, ignore this mail: your "
              "password stays as it is.\n"),
}


async def enqueue_link_mail(conn: AsyncConnection, *, purpose: signin.LinkPurpose,
                            account_id: int, person_id: int, now_ms: int) -> None:
    # One pending mail per person and kind: asking again while one waits sends one mail.
    await enqueue(conn, LINK_MAIL_JOB, {"purpose": purpose, "account_id": account_id,
                                        "person_id": person_id},
                  now_ms=now_ms, dedupe_key=f"{LINK_MAIL_JOB}:{purpose}:{person_id}",
                  max_attempts=5)


@writes("/console/member/invite", ACCOUNT_MANAGE)
async def invite(conn: AsyncConnection, actor: Actor, *, person_id: int) -> int:
    """Mail a member of the account a welcome link (their earlier links stop working)."""
    found = await members.contacts(conn, actor, [person_id])
    person = found.get(person_id)
    if person is None:
        raise errors.not_found("member", person_id)
    # A welcome link sets a password: inviting again is acting on the member.
    await roles.require_over(conn, actor, member_ids=[person_id])
    if not person.email:
        raise errors.invalid("email", "the member has no e-mail address")
    await enqueue_link_mail(conn, purpose="welcome", account_id=actor.account_id,
                            person_id=person_id, now_ms=actor.now_ms)
    return person_id


async def request_reset(conn: AsyncConnection, *, email: str, now_ms: int) -> None:
    """Mail a reset link to every member with this address who has a password; nothing
    for an unknown address (and the page says the same either way)."""
    found = await members.operator_find_by_email(conn, email=email.strip().lower())
    with_password = await signin.have_passwords(conn, [p for _, p in found])
    for account_id, person_id in found:
        if person_id in with_password:
            await enqueue_link_mail(conn, purpose="reset", account_id=account_id,
                                    person_id=person_id, now_ms=now_ms)


@job_handler(LINK_MAIL_JOB)
async def send_link_mail(ctx: JobContext, payload: dict[str, Any]) -> None:
    runtime = ctx.runtime
    purpose: signin.LinkPurpose = "reset" if payload["purpose"] == "reset" else "welcome"
    account_id, person_id = int(payload["account_id"]), int(payload["person_id"])
    # The link commits in a transaction of its own before the relay is contacted: the job's
    # transaction would hold SQLite's writer while the mail goes out.
    async with unit(runtime, system_actor(account_id, runtime.clock), write=True,
                    call=Call(f"job-{ctx.job_id}")) as work:
        found = await members.contacts(work.conn, work.actor, [person_id])
        person = found.get(person_id)
        if person is None or not person.email:
            log.info("console link mail skipped", person_id=person_id, purpose=purpose)
            return
        token = await signin.issue_link(work.conn, work.actor, purpose=purpose,
                                        person_id=person_id)
    url = signin.link_url(runtime.settings.base_url, purpose, token)
    await mail.send_mail(
        runtime.settings, to=person.email, subject=_SUBJECTS[purpose],
        text=_TEXTS[purpose].format(name=person.person_name, email=person.email, url=url))
    log.info("console link mail sent", person_id=person_id, purpose=purpose)
