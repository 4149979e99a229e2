"""Signed one-click links in every notification: acknowledge, resolve, open.

A link names an action, a person and an incident and expires; it is signed with a key
derived from the server key (HMAC-SHA256), so it cannot be forged or moved to another
person or incident. Opening it (GET) only shows the incident with a button that POSTs back:
a mail scanner or a link preview that fetches every URL acknowledges nothing. The POST acts
as that person through the incident lifecycle service (feed entry, event, and so the
escalation stops), provided they are still a member of the account. The pages a link lands
on are the console's (web/signed_links.py)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from dutyline.api.actor import Actor
from dutyline.api.errors import ApiError
from dutyline.api.unit import Call, unit
from dutyline.config import Settings
from dutyline.dispatch import system
from dutyline.incident.service import lifecycle
from dutyline.platform.member import service as members

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

log = structlog.get_logger("dutyline.dispatch.links")

ACTIONS = ("ack", "resolve", "open")
LINK_TTL_S = 7 * 86_400
PATH = "/incident/link/"
# Twilio's callback with the digit a called person pressed (dispatch/voice.py).
VOICE_PATH = "/incident/voice/"


@dataclass(frozen=True)
class Link:
    action: str
    account_id: int
    person_id: int
    incident_id: str
    expires_at: int


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _link_key(server_key: str) -> bytes:
    return hmac.new(server_key.encode("utf-8"), b"dutyline:incident-link", hashlib.sha256).digest()


def sign(server_key: str, link: Link) -> str:
    body = f"{link.action}.{link.account_id}.{link.person_id}.{link.incident_id}.{link.expires_at}"
    mac = hmac.new(_link_key(server_key), body.encode("ascii"), hashlib.sha256).digest()
    return f"{_b64(body.encode('ascii'))}.{_b64(mac)}"


def verify(server_key: str, token: str, now_s: int) -> Link | None:
    """The link a token stands for, or None (forged, altered, malformed or expired)."""
    try:
        body_b64, mac_b64 = token.split(".", 1)
        body = _unb64(body_b64).decode("ascii")
        mac = _unb64(mac_b64)
        action, account, person, incident_id, expires = body.split(".")
        link = Link(action, int(account), int(person), incident_id, int(expires))
    except (ValueError, UnicodeDecodeError):
        return None
    expected = hmac.new(_link_key(server_key), body.encode("ascii"), hashlib.sha256).digest()
    if not hmac.compare_digest(mac, expected) or link.action not in ACTIONS:
        return None
    return link if link.expires_at > now_s else None


def links_for(settings: Settings, server_key: str, *, account_id: int, person_id: int,
              incident_id: str, now_s: int) -> dict[str, str]:
    """{action: URL} for one person and incident, and `voice`: where a call's keypress is
    sent (an acknowledge link that only a request signed by Twilio may use)."""
    base = settings.base_url.rstrip("/")
    out = {
        action: base + PATH + sign(server_key, Link(action, account_id, person_id, incident_id,
                                                    now_s + LINK_TTL_S))
        for action in ACTIONS
    }
    out["voice"] = base + VOICE_PATH + out["ack"].rsplit("/", 1)[1]
    return out


async def server_key(settings: Settings) -> str:
    if settings.secret_key:
        return settings.secret_key
    return await asyncio.to_thread(settings.resolved_secret_key)


DONE, NOT_MEMBER, REFUSED = "done", "not_member", "refused"


async def perform(runtime: Runtime, link: Link, *, client_ip: str = "") -> str:
    """Acknowledge or resolve the link's incident as its person, in a transaction of its own:
    DONE, NOT_MEMBER (removed from the account since), or REFUSED (already in that state, or
    closed). Used by the link's button and by a call's keypress. One unit of work
    (api/unit.py): the audit log says the person did it through a signed link, or, when
    refused, that they tried."""
    try:
        async with unit(runtime, None, write=True, call=Call(client_ip=client_ip)) as work:
            conn = work.conn
            people = await members.contacts(conn, system.actor(runtime, link.account_id),
                                            [link.person_id])
            person = people.get(link.person_id)
            if person is None:
                return NOT_MEMBER
            actor = system.actor(runtime, link.account_id, person_id=person.person_id,
                                 person_name=person.person_name)
            ids = [link.incident_id]
            if link.action == "ack":
                await lifecycle.ack(conn, actor, incident_ids=ids)
            else:
                await lifecycle.resolve(conn, actor, incident_ids=ids)
    except ApiError as exc:
        log.info("dispatch.link.refused", action=link.action, incident_id=link.incident_id,
                 code=exc.code)
        return REFUSED
    log.info("dispatch.link.used", action=link.action, incident_id=link.incident_id,
             person_id=link.person_id)
    return DONE


def person_actor(runtime: Runtime, link: Link) -> Actor:
    """The link's person, for reading the one incident the link names (the link is the
    authorization: dispatch/system.py)."""
    return system.actor(runtime, link.account_id, person_id=link.person_id)
