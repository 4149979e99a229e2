"""Rules of members: contacts unique per account, roles only from the account, the Owner
fixed (never deleted, its role never granted or revoked here), nobody deletes themselves,
and nobody acts on a member holding rights they lack (role.service.require_over)."""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Select

from dutyline.api import errors
from dutyline.api.access import writes
from dutyline.api.actor import Actor
from dutyline.api.auth import Caller
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.types import SaveWarning
from dutyline.kit.ids import numeric_id
from dutyline.platform.auth import caller_from_rows
from dutyline.platform.member import repository as repo
from dutyline.platform.member.schemas import (
    Invitations,
    MemberInfoResponse,
    MemberItem,
    NewMemberItem,
    PersonItem,
)
from dutyline.platform.member.schemas import MemberSearch as MemberSearch  # for the console
from dutyline.platform.member.schemas import NewMember as NewMember  # the records it takes
from dutyline.platform.member.schemas import ProfileChanges as ProfileChanges
from dutyline.platform.member.schemas import RoleChoice as RoleChoice
from dutyline.platform.role import service as roles

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+?[0-9][0-9 -]{3,30}$")
# Read once: checking a zone name must not touch the file system inside a request.
_TIME_ZONES = frozenset(zoneinfo.available_timezones())
# The zones a member's or an invitation's time zone may name, in order (the console's list).
TIME_ZONE_NAMES: tuple[str, ...] = tuple(sorted(_TIME_ZONES))
_OWNER_ROLE_FIXED = "the Owner role cannot be granted or revoked"


def member_info_sync(conn: Connection, actor: Actor) -> MemberInfoResponse:
    """The actor's own profile and their account; sync, for one unit of database work."""
    me = repo.get_sync(conn, actor.account_id, actor.person_id)
    if me is None:  # the key resolved a moment ago, in another transaction
        raise errors.Unauthorized()
    acc = repo.account_row_sync(conn, actor.account_id)
    role_ids = repo.role_ids_by_member_sync(conn, [me.member_id])
    return MemberInfoResponse(
        account_id=acc.account_id, account_name=acc.account_name, account_avatar="",
        account_email=acc.email, account_role_ids=role_ids[me.member_id],
        account_locale=acc.locale, account_time_zone=acc.time_zone, domain=acc.domain,
        member_id=me.member_id, member_name=me.member_name, phone=mask_phone(me.phone),
        phone_verified=False, email=me.email, email_verified=False,
        country_code=me.country_code, avatar=me.avatar, locale=me.locale,
        time_zone=me.time_zone, is_external=me.is_external, status=me.status,
        created_at=me.created_at,
    )


def list_members_sync(
    conn: Connection, actor: Actor, *, role_id: int | None = None, query: str = "",
    orderby: str = "created_at", asc: bool = False, offset: int, limit: int,
) -> tuple[int, list[MemberItem]]:
    """(total, one page of the account's members); sync, for one unit of database work
    (api/operation.py)."""
    total, rows = repo.list_page_sync(
        conn, actor.account_id, role_id=role_id, query=query.strip(),
        orderby=orderby, asc=asc, offset=offset, limit=limit,
    )
    role_ids = repo.role_ids_by_member_sync(conn, [r.member_id for r in rows])
    return total, [_member_item(r, role_ids[r.member_id]) for r in rows]


async def list_members(
    conn: AsyncConnection, actor: Actor, *, role_id: int | None = None, query: str = "",
    orderby: str = "created_at", asc: bool = False, offset: int, limit: int,
) -> tuple[int, list[MemberItem]]:
    """(total, one page of the account's members)."""
    return await conn.run_sync(lambda sync: list_members_sync(
        sync, actor, role_id=role_id, query=query, orderby=orderby, asc=asc, offset=offset,
        limit=limit))


def member_record_sync(conn: Connection, actor: Actor, *, member_id: int) -> MemberItem:
    """One live member of the account, as the member list shows them (the console's member
    page); readable by every member, like the list."""
    row = _require_member_sync(conn, actor, member_id)
    role_ids = repo.role_ids_by_member_sync(conn, [row.member_id])
    return _member_item(row, role_ids[row.member_id])


async def member_record(conn: AsyncConnection, actor: Actor, *, member_id: int) -> MemberItem:
    """One live member of the account, as the member list shows them."""
    return await conn.run_sync(lambda sync: member_record_sync(sync, actor,
                                                               member_id=member_id))


def _member_item(r: Any, role_ids: list[int]) -> MemberItem:
    return MemberItem(
        account_id=r.account_id, member_id=r.member_id, member_name=r.member_name,
        country_code=r.country_code, phone=mask_phone(r.phone), email=r.email,
        locale=r.locale, time_zone=r.time_zone, phone_verified=False, email_verified=False,
        avatar=r.avatar, status=r.status, account_role_ids=role_ids,
        is_external=r.is_external, ref_id=r.ref_id, created_at=r.created_at,
        updated_at=r.updated_at,
    )


@writes("/member/invite", ACCOUNT_MANAGE, inputs=Invitations,
        targets=lambda added: [m.member_id for m in added])
async def invite_members(conn: AsyncConnection, actor: Actor, *,
                         members: Sequence[NewMember]) -> list[NewMemberItem]:
    """Add members to the account, enabled at once; returns them in the order given."""
    account_id = actor.account_id
    emails: dict[str, int] = {}
    phones: dict[str, int] = {}
    for i, item in enumerate(members):
        _validate_invite(i, item.member_name, item.email, item.phone, item.time_zone)
        if email := item.email.strip().lower():
            if email in emails:
                raise errors.invalid(f"members[{i}].email", "is given twice")
            emails[email] = i
        if phone := item.phone.strip():
            if phone in phones:
                raise errors.invalid(f"members[{i}].phone", "is given twice")
            phones[phone] = i
    taken_emails, taken_phones = await repo.taken_contacts(
        conn, account_id, emails=set(emails), phones=set(phones)
    )
    if taken_emails:
        first = min(emails[e] for e in taken_emails)
        raise errors.invalid(f"members[{first}].email", "already belongs to a member")
    if taken_phones:
        first = min(phones[p] for p in taken_phones)
        raise errors.invalid(f"members[{first}].phone", "already belongs to a member")

    default_role = await roles.builtin_role_id(conn, actor, builtin="member")
    owner_role = await roles.builtin_role_id(conn, actor, builtin="owner")
    now = actor.now_s
    rows: list[dict[str, Any]] = []
    grants: list[tuple[int, list[int]]] = []
    for i, item in enumerate(members):
        role_ids = list(dict.fromkeys(item.role_ids)) if item.role_ids else [default_role]
        chosen = await roles.require_roles(conn, actor, role_ids=role_ids)
        if item.role_ids:
            # Roles the inviter picks are theirs to give; the account's default role is
            # what every new member gets, whoever invites them.
            await roles.require_within_rights(conn, actor, rows=chosen)
        if owner_role in role_ids:
            raise errors.invalid(f"members[{i}].role_ids", _OWNER_ROLE_FIXED)
        member_id = numeric_id()
        # `enabled` at once, not `pending`: no invitation email is sent yet, so there is
        # nothing for the person to accept; the admin hands out an app key instead.
        rows.append({
            "member_id": member_id, "account_id": account_id,
            "member_name": item.member_name.strip(), "email": item.email.strip().lower(),
            "phone": item.phone.strip(), "country_code": item.country_code.strip(),
            "locale": item.locale, "time_zone": item.time_zone.strip(), "ref_id": item.ref_id,
            "status": "enabled", "created_at": now, "updated_at": now,
        })
        grants.append((member_id, role_ids))
    try:
        await repo.insert_members(conn, rows)
    except IntegrityError:
        # A concurrent invite took one of these emails between our check and the insert.
        raise errors.invalid("members.email", "already belongs to a member") from None
    for member_id, role_ids in grants:
        await repo.add_roles(conn, account_id, member_id, role_ids)
    return [NewMemberItem(member_id=r["member_id"], member_name=r["member_name"]) for r in rows]


@writes("/member/delete", ACCOUNT_MANAGE, dangerous=True)
async def delete_member(
    conn: AsyncConnection, actor: Actor, *, member_id: int = 0, member_name: str = "",
    email: str = "", phone: str = "", country_code: str = "", ref_id: str = "",
) -> int:
    """Remove a member found by id, name, email, phone (with country code) or external ref;
    returns their id."""
    target = await _find_for_delete(conn, actor, member_id=member_id, member_name=member_name,
                                    email=email, phone=phone, country_code=country_code,
                                    ref_id=ref_id)
    await roles.require_over(conn, actor, member_ids=[target.member_id])
    if target.member_id == actor.person_id:
        raise errors.BadRequest("You cannot delete yourself")
    if await repo.owner_ids(conn, actor.account_id, [target.member_id]):
        raise errors.BadRequest("The account Owner cannot be deleted")
    await repo.soft_delete(conn, target.member_id, actor.now_s)
    return int(target.member_id)


@writes("/member/role/grant", ACCOUNT_MANAGE)
async def grant_roles(conn: AsyncConnection, actor: Actor, *, member_id: int,
                      role_ids: Sequence[int]) -> None:
    target, wanted = await _role_change(conn, actor, member_id, role_ids)
    actor.note_audit_targets(target.member_id)
    current = await _current_roles(conn, target.member_id)
    await repo.add_roles(conn, actor.account_id, target.member_id,
                         [r for r in wanted if r not in current])
    await repo.touch(conn, target.member_id, {"updated_at": actor.now_s})


@writes("/member/role/revoke", ACCOUNT_MANAGE)
async def revoke_roles(conn: AsyncConnection, actor: Actor, *, member_id: int,
                       role_ids: Sequence[int]) -> None:
    target, wanted = await _role_change(conn, actor, member_id, role_ids)
    actor.note_audit_targets(target.member_id)
    await repo.remove_roles(conn, target.member_id, wanted)
    await repo.touch(conn, target.member_id, {"updated_at": actor.now_s})


@writes("/member/role/update", ACCOUNT_MANAGE, inputs=RoleChoice)
async def update_roles(conn: AsyncConnection, actor: Actor, *, member_id: int,
                       role_ids: Sequence[int]) -> None:
    """Replace a member's roles (the Owner role stays as it is)."""
    target = await _require_member(conn, actor, member_id)
    actor.note_audit_targets(target.member_id)
    await roles.require_over(conn, actor, member_ids=[target.member_id])
    wanted = list(dict.fromkeys(role_ids))
    await roles.require_roles(conn, actor, role_ids=wanted)
    owner_role = await roles.builtin_role_id(conn, actor, builtin="owner")
    current = await _current_roles(conn, target.member_id)
    # The Owner role must come out exactly as it went in: the set may name it only for the
    # member who already holds it, and must name it for them.
    if (owner_role in wanted) != (owner_role in current):
        raise errors.invalid("role_ids", _OWNER_ROLE_FIXED)
    moved = set(wanted).symmetric_difference(current)
    await roles.require_within_rights(
        conn, actor, rows=await roles.require_roles(conn, actor, role_ids=sorted(moved)))
    await repo.remove_roles(conn, target.member_id, [r for r in current if r not in wanted])
    await repo.add_roles(conn, actor.account_id, target.member_id,
                         [r for r in wanted if r not in current])
    await repo.touch(conn, target.member_id, {"updated_at": actor.now_s})


def person_infos_sync(conn: Connection, actor: Actor, *,
                      person_ids: Sequence[int]) -> list[PersonItem]:
    """Profiles of the account's persons among these ids; other ids are left out. Sync, for
    one unit of database work (api/operation.py)."""
    account_id = actor.account_id
    rows = repo.find_many_sync(conn, account_id, list(dict.fromkeys(person_ids)))
    owners = repo.owner_ids_sync(conn, account_id, [r.member_id for r in rows])
    return [
        PersonItem(
            account_id=r.account_id, person_id=r.member_id, person_name=r.member_name,
            avatar=r.avatar, locale=r.locale, time_zone=r.time_zone, email=r.email,
            phone=r.phone, phone_verified=False, email_verified=False,
            login_as="account" if r.member_id in owners else "member", status=r.status,
        )
        for r in rows
    ]


async def person_infos(conn: AsyncConnection, actor: Actor, *,
                       person_ids: Sequence[int]) -> list[PersonItem]:
    """Profiles of the account's persons among these ids; other ids are left out."""
    return await conn.run_sync(lambda sync: person_infos_sync(sync, actor,
                                                              person_ids=person_ids))


@writes("/member/info/reset", inputs=ProfileChanges)
async def reset_info(conn: AsyncConnection, actor: Actor, *, member_id: int,
                     changes: ProfileChanges) -> None:
    """Update a member's profile and contacts (reference /member/info/reset): one's own, or
    with account management another's whose every right one holds (the e-mail signs in and
    receives password resets). Fields given as None are left unchanged; e-mail and phone
    stay unique among the account's live members, and one of them must remain."""
    if member_id != actor.person_id and not actor.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()
    row = await repo.get(conn, actor.account_id, member_id)
    if row is None or row.status == "deleted":
        raise errors.not_found("member", member_id)
    await roles.require_over(conn, actor, member_ids=[row.member_id])
    actor.note_audit_targets(row.member_id)
    values = {k: v.strip() for k in changes.__struct_fields__
              if (v := getattr(changes, k)) is not None}
    if "email" in values:
        values["email"] = values["email"].lower()
    if "member_name" in values and len(values["member_name"]) < 2:
        raise errors.invalid("member_name", "must be 2 to 39 characters")
    if values.get("email") and not _EMAIL.match(values["email"]):
        raise errors.invalid("email", "is invalid")
    if values.get("phone") and not _PHONE.match(values["phone"]):
        raise errors.invalid("phone", "is invalid")
    if values.get("time_zone") and values["time_zone"] not in _TIME_ZONES:
        raise errors.invalid("time_zone", "is not a known time zone")
    if not values.get("email", row.email) and not values.get("phone", row.phone):
        raise errors.invalid("email", "email or phone is required")
    new_email = values.get("email", row.email)
    new_phone = values.get("phone", row.phone)
    taken_emails, taken_phones = await repo.taken_contacts(
        conn, actor.account_id,
        emails={new_email} if new_email and new_email != row.email else set(),
        phones={new_phone} if new_phone and new_phone != row.phone else set())
    if taken_emails:
        raise errors.invalid("email", "already belongs to a member")
    if taken_phones:
        raise errors.invalid("phone", "already belongs to a member")
    try:
        await repo.touch(conn, member_id, {**values, "updated_at": actor.now_s})
    except IntegrityError:
        # A concurrent write took this e-mail between our check and the update.
        raise errors.invalid("email", "already belongs to a member") from None


def is_email(value: str) -> bool:
    """Whether `value` is an e-mail address as a member's is checked."""
    return bool(_EMAIL.match(value))


def contact_warnings(reach_gap: Callable[[str], str | None], *, email: str | None,
                     phone: str | None) -> list[SaveWarning]:
    """A contact being saved that no channel of this server can use (`reach_gap`: the
    runtime's, which the notify domain answers): a phone without SMS, an e-mail address
    without SMTP. The contact is saved anyway."""
    contacts = {"email": ("email", email), "phone": ("sms", phone)}
    return [SaveWarning(field=name, message=reason)
            for name, (channel, value) in contacts.items()
            if value and value.strip() and (reason := reach_gap(channel))]


def mask_phone(phone: str) -> str:
    """Member records show a masked phone (reference MemberItem); /person/infos does not."""
    if len(phone) <= 4:
        return "*" * len(phone)
    keep = 3 if len(phone) >= 10 else 0
    return phone[:keep] + "*" * (len(phone) - keep - 4) + phone[-4:]


# --- helpers ---------------------------------------------------------------------------


def _validate_invite(i: int, name: str, email: str, phone: str, time_zone: str) -> None:
    if len(name.strip()) < 2:
        raise errors.invalid(f"members[{i}].member_name", "must be 2 to 39 characters")
    email, phone, time_zone = email.strip(), phone.strip(), time_zone.strip()
    if not email and not phone:
        raise errors.invalid(f"members[{i}].email", "email or phone is required")
    if email and not _EMAIL.match(email):
        raise errors.invalid(f"members[{i}].email", "is invalid")
    if phone and not _PHONE.match(phone):
        raise errors.invalid(f"members[{i}].phone", "is invalid")
    if time_zone and time_zone not in _TIME_ZONES:
        raise errors.invalid(f"members[{i}].time_zone", "is not a known time zone")


def _require_member_sync(conn: Connection, actor: Actor, member_id: int) -> Any:
    row = repo.get_sync(conn, actor.account_id, member_id)
    if row is None or row.status == "deleted":
        raise errors.not_found("member", member_id)
    return row


async def _require_member(conn: AsyncConnection, actor: Actor, member_id: int) -> Any:
    return await conn.run_sync(_require_member_sync, actor, member_id)


async def _current_roles(conn: AsyncConnection, member_id: int) -> list[int]:
    return (await repo.role_ids_by_member(conn, [member_id]))[member_id]


async def _role_change(conn: AsyncConnection, actor: Actor, member_id: int,
                       role_ids: Sequence[int]) -> tuple[Any, list[int]]:
    target = await _require_member(conn, actor, member_id)
    await roles.require_over(conn, actor, member_ids=[target.member_id])
    wanted = list(dict.fromkeys(role_ids))
    rows = await roles.require_roles(conn, actor, role_ids=wanted)
    if await roles.builtin_role_id(conn, actor, builtin="owner") in wanted:
        raise errors.invalid("role_ids", _OWNER_ROLE_FIXED)
    await roles.require_within_rights(conn, actor, rows=rows)
    return target, wanted


async def _find_for_delete(
    conn: AsyncConnection, actor: Actor, *, member_id: int, member_name: str, email: str,
    phone: str, country_code: str, ref_id: str,
) -> Any:
    if member_id:
        return await _require_member(conn, actor, member_id)
    match: dict[str, str | int]
    if member_name.strip():
        field, match = "member_name", {"member_name": member_name.strip()}
    elif email.strip():
        field, match = "email", {"email": email.strip().lower()}
    elif phone.strip():
        field, match = "phone", {"phone": phone.strip()}
        if country_code.strip():
            match["country_code"] = country_code.strip()
    elif ref_id:
        field, match = "ref_id", {"ref_id": ref_id}
    else:
        raise errors.invalid("member_id", "is required")
    rows = await repo.find_one(conn, actor.account_id, **match)
    if not rows:
        raise errors.not_found("member", match[field])
    if len(rows) > 1:
        raise errors.invalid(field, "matches more than one member; use member_id")
    return rows[0]


def member_names_sync(conn: Connection, actor: Actor,
                      member_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """{member_id: (name, e-mail)} of the account's members among these ids, removed members
    included: records (incidents, analytics, insight) keep naming who acted."""
    return repo.names_sync(conn, actor.account_id, sorted(set(member_ids) - {0}))


async def existing_member_ids(conn: AsyncConnection, actor: Actor,
                              member_ids: list[int]) -> set[int]:
    """Which of these ids are live members of the actor's account (for other domains that
    reference members, e.g. status page event responders)."""
    return await conn.run_sync(existing_member_ids_sync, actor, member_ids)


def existing_member_ids_sync(conn: Connection, actor: Actor,
                             member_ids: Iterable[int]) -> set[int]:
    """`existing_member_ids` inside a sync unit of database work."""
    rows = repo.find_many_sync(conn, actor.account_id, sorted(set(member_ids)))
    return {r.member_id for r in rows if r.status != "deleted"}


def live_member_ids_statement() -> Select[tuple[int]]:
    """The question of `existing_member_ids` as a statement (one column, member_id) with the
    bind parameters `account_id` and `member_ids` (expanding), for a hot path of another
    domain to send in one round trip with its own query (UNION ALL) and build only once:
    "who is on call now" (schedule/repository.py)."""
    return repo.live_ids_statement()


@dataclass(frozen=True)
class Contact:
    """What paging needs of a member: how to name and reach them (the e-mail of the
    member record; notification preferences default to e-mail)."""

    person_id: int
    person_name: str
    email: str
    phone: str
    country_code: str = ""

    @property
    def e164_phone(self) -> str:
        """The phone as SMS and voice gateways want it: `+<country code><number>`, or as
        stored when it carries its own `+` (or no country code is known)."""
        digits = "".join(c for c in self.phone if c.isdigit())
        if not digits:
            return ""
        if self.phone.strip().startswith("+"):
            return "+" + digits
        code = "".join(c for c in self.country_code if c.isdigit())
        return f"+{code}{digits}" if code else digits


async def contacts(conn: AsyncConnection, actor: Actor,
                   member_ids: list[int]) -> dict[int, Contact]:
    """Live members of the account among these ids, with their contact details; a removed
    member is left out (the escalation engine skips them)."""
    if not member_ids:
        return {}
    return await conn.run_sync(contacts_sync, actor, member_ids)


def contacts_sync(conn: Connection, actor: Actor,
                  member_ids: list[int]) -> dict[int, Contact]:
    """`contacts` inside a sync unit of database work."""
    if not member_ids:
        return {}
    rows = repo.find_many_sync(conn, actor.account_id, sorted(set(member_ids)))
    return {
        r.member_id: Contact(r.member_id, r.member_name, r.email, r.phone, r.country_code)
        for r in rows if r.status != "deleted"
    }


async def operator_find_by_email(conn: AsyncConnection, *, email: str) -> list[tuple[int, int]]:
    """(account_id, member_id) of every live member with this e-mail, across accounts: for
    the server's shell (`dutyline notify-test --email`), which acts for no caller."""
    return [(int(r.account_id), int(r.member_id))
            for r in await repo.live_by_email(conn, email)]


async def reader_time_zones(conn: AsyncConnection, *, account_id: int,
                            person_id: int) -> tuple[str, str]:
    """The zones a signed-in person's pages show times in, first found first: their own,
    their account's ("" for one not set). Read with their session (web/session_cache.py),
    which holds no more than their own record does."""
    return await repo.time_zones(conn, account_id, person_id)


async def signed_in_caller(conn: AsyncConnection, *, account_id: int,
                           person_id: int) -> Caller | None:
    """Who a person signed in to the console is: the same roles and permissions an app key
    of theirs would get, read afresh (a removed role or member takes effect on the next
    page). None when they are no longer an enabled member of the account."""
    rows = await repo.caller_rows(conn, account_id, person_id)
    return caller_from_rows(rows) if rows else None
