"""Members' contact methods and notification preferences.

A member reads and sets their own; another member's need `account_manage`, and changing them
or sending them a test also every right that member holds (role.service.require_over). The
channels a member may choose are those a person can be reached by (e-mail, SMS, voice, a
direct message on Telegram, Slack, Feishu, DingTalk, WeCom or Zoom, to their handle in
`im`); a severity without a choice uses e-mail. The escalation engine reads `preferences`
when a layer says `by.follow_preference`. Setting one is audited (the member's id), whoever asks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.types import SaveWarning
from dutyline.config import Settings
from dutyline.kit.channels import IM_PLATFORMS, address_key, personal_refusal
from dutyline.kit.vocabulary import SEVERITY_KEYS
from dutyline.notify.delivery.adapters import needs
from dutyline.notify.preference import repository as repo
from dutyline.notify.preference.schemas import MemberNotifyItem
from dutyline.notify.preference.schemas import NotifyChanges as NotifyChanges  # the record taken
from dutyline.platform.member import service as members
from dutyline.platform.role import service as roles

DEFAULT_CHANNELS = ("email",)
# The API's bound on a chat handle (schemas.py), held for every caller.
HANDLE_MAX = 128

_json = msgspec.json.Decoder()


@dataclass(frozen=True)
class Preference:
    """How one member wants to be paged: channels per severity and their chat handles."""

    by_severity: dict[str, tuple[str, ...]] = field(default_factory=dict)
    im: dict[str, str] = field(default_factory=dict)

    def channels(self, severity: str) -> tuple[str, ...]:
        return self.by_severity.get(severity.lower()) or DEFAULT_CHANNELS


def _dump(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _preference(row: Any) -> Preference:
    if row is None:
        return Preference()
    return Preference(by_severity={s: tuple(_json.decode(getattr(row, s)))
                                   for s in SEVERITY_KEYS},
                      im=dict(_json.decode(row.im)))


def _target_sync(conn: Connection, actor: Actor, member_id: int) -> members.Contact:
    member_id = member_id or actor.person_id
    if not member_id:
        raise errors.invalid("member_id", "is required")
    if member_id != actor.person_id and not actor.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    found = members.contacts_sync(conn, actor, [member_id])
    if member_id not in found:
        raise errors.not_found("member", member_id)
    return found[member_id]


async def _target(conn: AsyncConnection, actor: Actor, member_id: int) -> members.Contact:
    return await conn.run_sync(_target_sync, actor, member_id)


def reach_sync(conn: Connection, actor: Actor, *,
               member_id: int) -> tuple[members.Contact, Preference]:
    """A member's contacts and preference (the caller's own unless `member_id` names
    another, which needs account management): what a test notification uses."""
    person = _target_sync(conn, actor, member_id)
    return person, _preference(repo.get_sync(conn, actor.account_id, person.person_id))


async def reach(conn: AsyncConnection, actor: Actor, *,
                member_id: int) -> tuple[members.Contact, Preference]:
    """A member's contacts and preference (`reach_sync`), for a test sent to them: acting
    on them."""
    person, pref = await conn.run_sync(lambda sync: reach_sync(sync, actor,
                                                               member_id=member_id))
    await roles.require_over(conn, actor, member_ids=[person.person_id])
    return person, pref


def address(person: members.Contact, pref: Preference, channel: str) -> str:
    """Where `channel` reaches the person: e-mail, the phone in E.164 form, or their handle
    on the chat platform (`slack` and `slack_app` both use `im.slack`, and so on)."""
    where = address_key(channel)
    if where == "email":
        return person.email
    if where == "phone":
        return person.e164_phone
    return pref.im.get(where, "") if where else ""


def delivery_warnings(settings: Settings, *, im: dict[str, str] | None,
                      by_severity: dict[str, list[str] | None]) -> list[SaveWarning]:
    """Channels and chat handles being saved that these settings cannot page (the
    preference is saved anyway)."""
    out: list[SaveWarning] = []
    for severity, channels in by_severity.items():
        for i, channel in enumerate(channels or []):
            if reason := needs.gap(settings, channel, personal=True):
                out.append(SaveWarning(field=f"{severity}[{i}]", message=f"{channel}: {reason}"))
    for kind, handle in (im or {}).items():
        if handle.strip() and (reason := needs.gap(settings, kind, personal=True)):
            out.append(SaveWarning(field=f"im.{kind}", message=reason))
    return out


def notify_info_sync(conn: Connection, actor: Actor, *, member_id: int) -> MemberNotifyItem:
    """A member's contacts, chat handles and channels per severity (the caller's own unless
    `member_id` names another, which needs account management)."""
    person = _target_sync(conn, actor, member_id)
    row = repo.get_sync(conn, actor.account_id, person.person_id)
    pref = _preference(row)
    return MemberNotifyItem(
        account_id=actor.account_id, member_id=person.person_id,
        member_name=person.person_name, email=person.email,
        phone=members.mask_phone(person.phone), country_code=person.country_code,
        im=pref.im, **{s: list(pref.channels(s)) for s in SEVERITY_KEYS},
        updated_at=int(row.updated_at) if row is not None else 0)


def _checked_channels(name: str, channels: list[str]) -> list[str]:
    for i, channel in enumerate(channels):
        if refused := personal_refusal(channel):
            raise errors.invalid(f"{name}[{i}]", refused)
    return list(dict.fromkeys(channels))


def _checked_im(im: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind, handle in im.items():
        if kind not in IM_PLATFORMS:
            raise errors.invalid(f"im.{kind}"[:64],
                                 "is not a known IM type: one of " + ", ".join(IM_PLATFORMS))
        if len(handle.strip()) > HANDLE_MAX:
            raise errors.invalid(f"im.{kind}", f"must be at most {HANDLE_MAX} characters")
        if handle.strip():
            out[kind] = handle.strip()
    return out


@writes("/member/notify/reset", inputs=NotifyChanges)
async def notify_reset(conn: AsyncConnection, actor: Actor, *, member_id: int,
                       im: dict[str, str] | None, critical: list[str] | None,
                       warning: list[str] | None, info: list[str] | None) -> int:
    """Set what was given; returns the member's id (for the audit log)."""
    person = await _target(conn, actor, member_id)
    await roles.require_over(conn, actor, member_ids=[person.person_id])
    given = dict(zip(SEVERITY_KEYS, (critical, warning, info), strict=True))
    values: dict[str, Any] = {s: _dump(_checked_channels(s, v))
                              for s, v in given.items() if v is not None}
    if im is not None:
        values["im"] = _dump(_checked_im(im))
    await repo.upsert(conn, actor.account_id, person.person_id, {
        **values, "updated_by": actor.person_id, "updated_at": actor.now_s})
    return person.person_id


async def preferences(conn: AsyncConnection, actor: Actor,
                      member_ids: list[int]) -> dict[int, Preference]:
    """Each member's preference (the default for those who set none): the engine's read."""
    rows = {r.member_id: r
            for r in await repo.many(conn, actor.account_id, sorted(set(member_ids)))}
    return {m: _preference(rows.get(m)) for m in member_ids}
