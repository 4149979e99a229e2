"""The Roles pages: what each role can do in words, custom roles made and changed by ticking
permissions, enabling, disabling and deleting them, granting and revoking them; the invite
form's default role, which works incidents."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import permissions
from dutyline.db.tables.platform import audit_log, member_role, role, role_permission
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, browser, link_for, signed_in
from tests.web.incident_support import info, ok, seed

pytestmark = pytest.mark.anyio

PASSWORD = "a long enough secret"
ZH = {"Accept-Language": "zh-CN"}


async def _role_id(api: Api, account_id: int, *, builtin: str = "", name: str = "") -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        where = (role.c.builtin == builtin) if builtin else (role.c.role_name == name)
        return int((await conn.execute(select(role.c.role_id).where(
            role.c.account_id == account_id, where))).scalar_one())


async def _role(api: Api, role_id: int) -> Any:
    async with api.runtime.db.transaction(write=False) as conn:
        return (await conn.execute(select(role).where(role.c.role_id == role_id))).first()


async def _granted(api: Api, role_id: int) -> set[int]:
    async with api.runtime.db.transaction(write=False) as conn:
        return set((await conn.execute(select(role_permission.c.permission_id).where(
            role_permission.c.role_id == role_id))).scalars())


async def _holders(api: Api, role_id: int) -> set[int]:
    async with api.runtime.db.transaction(write=False) as conn:
        return set((await conn.execute(select(member_role.c.member_id).where(
            member_role.c.role_id == role_id))).scalars())


async def _writes(api: Api, account_id: int) -> list[tuple[str, str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(
            select(audit_log.c.operation, audit_log.c.outcome, audit_log.c.credential)
            .where(audit_log.c.account_id == account_id, audit_log.c.is_write)
            .order_by(audit_log.c.id))
        return [(r.operation, r.outcome, r.credential) for r in rows]


async def _responder(api: Api, who: Person) -> int:
    """The account's Responder role, as the console's first invitation makes it."""
    return int((await ok(api, "/role/upsert", {
        "role_name": permissions.RESPONDER_NAME,
        "permission_ids": sorted(permissions.RESPONDER_DEFAULT)}, who))["role_id"])


def _row(page: str, name: str) -> str:
    found = re.search(rf">{re.escape(name)}</a>.*?</tr>", page, re.DOTALL)
    assert found, name
    return found[0]


async def test_the_roles_page_says_what_each_role_can_do(api: Api, owner: Person,
                                                         console: Browser) -> None:
    page = await console.get("/console/roles")
    assert page.status_code == 200
    assert re.findall(r'href="/console/roles/\d+">([^<]+)</a>', page.text) == [
        "Owner", "Admin", "Member"]
    assert "Everything, including what later versions" in _row(page.text, "Owner")
    member = _row(page.text, "Member")
    assert "acknowledge" not in member and "See channels and their incidents" in member
    # The invitations' default role, before the first invitation makes it.
    assert "New members get the Responder role" in page.text
    assert 'href="/console/roles/new"' in page.text
    await _responder(api, owner)
    page = await console.get("/console/roles")
    assert re.findall(r'href="/console/roles/\d+">([^<]+)</a>', page.text) == [
        "Owner", "Admin", "Member", "Responder"]
    responder = _row(page.text, "Responder")
    assert "acknowledge, resolve, comment, snooze, reassign" in responder
    assert "See on-call schedules and who is on call" in responder
    # In the reader's language.
    zh = await console.get("/console/roles", headers=ZH)
    assert "确认、解决、评论、暂停提醒、转派" in zh.text


async def test_a_custom_role_is_made_and_changed_by_ticking_permissions(
        api: Api, owner: Person, console: Browser) -> None:
    form = await console.get("/console/roles/new")
    assert form.status_code == 200
    assert 'name="permission_ids" value="203"' in form.text
    assert "Work incidents in the channels they can see" in form.text
    done = await console.post("/console/roles/new", {
        "role_name": "On-call lead", "description": "Leads the rota",
        "permission_ids": ["203", "221"]})
    assert done.status_code == 303
    path = done.headers["location"]
    role_id = int(path.rsplit("/", 1)[1])
    page = await console.get(path)
    assert page.status_code == 200 and "The role On-call lead is saved." in page.text
    assert "<h1>On-call lead</h1>" in page.text and "Leads the rota" in page.text
    # Managing schedules includes seeing them: the page says both.
    assert "Create and change on-call schedules" in page.text
    assert "See on-call schedules and who is on call" in page.text
    stored = await _role(api, role_id)
    assert (stored.role_name, stored.description, stored.builtin) == (
        "On-call lead", "Leads the rota", "")
    assert await _granted(api, role_id) == {203, 221}

    edit = await console.get(f"{path}/edit")
    assert edit.status_code == 200
    assert 'value="203" checked' in edit.text and 'value="204">' in edit.text
    saved = await console.post(f"{path}/edit", {"role_name": "Lead", "description": "",
                                                "permission_ids": ["204"]})
    assert saved.status_code == 303
    assert await _granted(api, role_id) == {204}
    assert (await _role(api, role_id)).role_name == "Lead"
    # Unticking every box takes every permission away.
    await console.post(f"{path}/edit", {"role_name": "Lead"})
    assert await _granted(api, role_id) == set()
    assert await _writes(api, owner.account_id) == [("role.upsert", "OK", "session")] * 3


async def test_role_form_errors_are_shown_by_their_field(api: Api, owner: Person,
                                                        console: Browser) -> None:
    blank = await console.post("/console/roles/new", {"role_name": "", "permission_ids": ["204"]})
    assert blank.status_code == 400 and 'id="e-role_name"' in blank.text
    assert 'value="204" checked' in blank.text  # the ticks are kept
    long = await console.post("/console/roles/new", {"role_name": "x" * 40})
    assert long.status_code == 400
    error = re.search(r'id="e-role_name">([^<]*)<', long.text)
    assert error and error[1] == "must be at most 39 characters"
    taken = await console.post("/console/roles/new", {"role_name": "member"})
    assert taken.status_code == 400
    error = re.search(r'id="e-role_name">([^<]*)<', taken.text)
    assert error and error[1] == "already exists"
    unknown = await console.post("/console/roles/new", {"role_name": "Odd",
                                                        "permission_ids": ["9999"]})
    assert unknown.status_code == 400 and 'id="e-permission_ids"' in unknown.text
    async with api.runtime.db.transaction(write=False) as conn:
        names = set((await conn.execute(select(role.c.role_name).where(
            role.c.account_id == owner.account_id))).scalars())
    assert names == {"Owner", "Admin", "Member"}
    # A built-in role has no edit form, and its page offers none.
    member_role_id = await _role_id(api, owner.account_id, builtin="member")
    assert (await console.get(f"/console/roles/{member_role_id}/edit")).status_code == 400
    page = await console.get(f"/console/roles/{member_role_id}")
    assert "/edit" not in page.text and "Built-in role" in page.text
    refused = await console.post(f"/console/roles/{member_role_id}/edit",
                                 {"role_name": "Member", "permission_ids": ["1"]})
    assert refused.status_code == 400
    assert await _granted(api, member_role_id) == set(permissions.MEMBER_DEFAULT)


async def test_enabling_disabling_and_deleting_a_role(api: Api, owner: Person,
                                                     console: Browser) -> None:
    done = await console.post("/console/roles/new", {"role_name": "Temp",
                                                     "permission_ids": ["204"]})
    path = done.headers["location"]
    role_id = int(path.rsplit("/", 1)[1])
    holder = await new_member(api, owner, name="Holder", role_ids=[role_id])
    assert (await console.post(f"{path}/disable")).status_code == 303
    assert (await _role(api, role_id)).status == "disabled"
    page = await console.get(path)
    assert "it grants nothing" in page.text and f'action="{path}/enable"' in page.text
    assert "disabled" in _row((await console.get("/console/roles")).text, "Temp")
    assert (await console.post(f"{path}/enable")).status_code == 303
    assert (await _role(api, role_id)).status == "enabled"

    confirm = await console.get(f"{path}/delete")
    assert confirm.status_code == 200 and "Delete the role Temp?" in confirm.text
    held = await console.post(f"{path}/delete")
    assert held.status_code == 400 and "still held by members" in held.text
    assert await _role(api, role_id) is not None
    revoked = await console.post(f"{path}/revoke", {"member_ids": [str(holder.person_id)]})
    assert revoked.status_code == 303
    deleted = await console.post(f"{path}/delete")
    assert deleted.status_code == 303 and deleted.headers["location"] == "/console/roles"
    assert await _role(api, role_id) is None
    assert (await console.get(path)).status_code == 400
    assert [w[:2] for w in (await _writes(api, owner.account_id))[1:]] == [
        ("role.disable", "OK"), ("role.enable", "OK"), ("role.delete", "ReferenceExist"),
        ("role.member.revoke", "OK"), ("role.delete", "OK")]


async def test_granting_and_revoking_from_the_roles_page(api: Api, owner: Person,
                                                        console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada", email="ada@acme.example")
    bob = await new_member(api, owner, name="Bob", email="bob@acme.example")
    responder = await _responder(api, owner)
    path = f"/console/roles/{responder}"
    page = await console.get(path)
    assert f'name="member_ids" value="{ada.person_id}"' in page.text
    found = await console.get(f"{path}?q=bob")
    assert f'value="{bob.person_id}"' in found.text and f'value="{ada.person_id}"' not in found.text

    none = await console.post(f"{path}/grant", {})
    assert none.status_code == 400
    error = re.search(r'id="e-member_ids">([^<]*)<', none.text)
    assert error and error[1] == "choose at least one"
    done = await console.post(f"{path}/grant", {"member_ids": [str(ada.person_id),
                                                              str(bob.person_id)]})
    assert done.status_code == 303
    assert await _holders(api, responder) == {ada.person_id, bob.person_id}
    page = await console.get(path)
    assert "The role Responder is granted." in page.text
    assert f'href="/console/members/{ada.person_id}">Ada</a>' in page.text
    assert "2" in _row((await console.get("/console/roles")).text, "Responder")
    assert (await console.post(f"{path}/revoke",
                               {"member_ids": [str(ada.person_id)]})).status_code == 303
    assert await _holders(api, responder) == {bob.person_id}
    # The member's page names the role, and grants and revokes it too.
    member_page = await console.get(f"/console/members/{bob.person_id}")
    assert "Responder" in member_page.text
    # The form's empty choice is refused before the service: no write to record.
    assert (await _writes(api, owner.account_id))[1:] == [
        ("role.member.grant", "OK", "session"), ("role.member.revoke", "OK", "session")]
    # The Owner role is never granted or revoked: its page offers neither.
    owner_role = await _role_id(api, owner.account_id, builtin="owner")
    owner_page = await console.get(f"/console/roles/{owner_role}")
    assert "/grant" not in owner_page.text and "/revoke" not in owner_page.text
    refused = await console.post(f"/console/roles/{owner_role}/grant",
                                 {"member_ids": [str(ada.person_id)]})
    assert refused.status_code == 400 and "cannot be granted or revoked" in refused.text


async def test_a_plain_member_reads_the_roles_but_changes_nothing(
        api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain")
    other = await new_member(api, owner, name="Other")
    responder = await _responder(api, owner)
    b = await signed_in(api, plain)
    listed = await b.get("/console/roles")
    assert listed.status_code == 200 and "Responder" in listed.text
    assert "/console/roles/new" not in listed.text
    assert 'href="/console/roles"' not in listed.text  # no navigation link to it
    page = await b.get(f"/console/roles/{responder}")
    assert page.status_code == 200 and "/grant" not in page.text
    for path in ("/console/roles/new", f"/console/roles/{responder}/delete"):
        refused = await b.get(path)
        assert refused.status_code == 403 and "Not allowed" in refused.text
    made = await b.post("/console/roles/new", {"role_name": "Sneaky",
                                               "permission_ids": ["1"]})
    assert made.status_code == 403 and "Not allowed" in made.text
    granted = await b.post(f"/console/roles/{responder}/grant",
                           {"member_ids": [str(plain.person_id), str(other.person_id)]})
    assert granted.status_code == 403
    assert await _holders(api, responder) == set()
    assert (await _writes(api, owner.account_id))[1:] == [
        ("role.upsert", "AccessDenied", "session"),
        ("role.member.grant", "AccessDenied", "session")]
    await b.aclose()


async def test_nobody_acts_above_their_own_rights_and_is_told_in_words(
        api: Api, owner: Person) -> None:
    # A manager whose role holds account management and the Member's views, no more.
    managing = (await ok(api, "/role/upsert", {
        "role_name": "People manager",
        "permission_ids": [1, *sorted(permissions.MEMBER_DEFAULT)]}, owner))["role_id"]
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managing])
    b = await signed_in(api, manager)
    refused = await b.post("/console/roles/new", {"role_name": "Pager",
                                                  "permission_ids": ["203"]})
    assert refused.status_code == 403
    assert "grants permissions you do not hold: Manage incidents" in refused.text
    responder = await _responder(api, owner)
    plain = await new_member(api, owner, name="Plain")
    grant = await b.post(f"/console/roles/{responder}/grant",
                         {"member_ids": [str(plain.person_id)]})
    assert grant.status_code == 403
    assert "Manage incidents; View on-call schedules" in grant.text
    assert 'class="error-summary"' in grant.text
    # The same refusal from the member's page.
    from_member = await b.post(f"/console/members/{plain.person_id}/roles",
                               {"role_ids": [str(responder)]})
    assert from_member.status_code == 403
    assert "Manage incidents; View on-call schedules" in from_member.text
    # Acting on someone who holds more than the manager: named in words too.
    admin = await new_member(api, owner, name="Boss", builtin="admin")
    mine = (await ok(api, "/role/upsert", {"role_name": "Viewer", "permission_ids": [204]},
                     owner))["role_id"]
    over = await b.post(f"/console/roles/{mine}/grant", {"member_ids": [str(admin.person_id)]})
    assert over.status_code == 403 and "holds permissions you do not hold" in over.text
    assert "incident_manage" not in over.text
    assert await _holders(api, responder) == set() and await _holders(api, mine) == set()
    await b.aclose()


async def test_another_accounts_roles_are_not_found(api: Api, owner: Person,
                                                   other_owner: Person,
                                                   console: Browser) -> None:
    foreign = await _responder(api, other_owner)
    custom = (await ok(api, "/role/upsert", {"role_name": "Theirs", "permission_ids": [204]},
                       other_owner))["role_id"]
    for path in (f"/console/roles/{foreign}", f"/console/roles/{custom}/edit",
                 f"/console/roles/{custom}/delete", "/console/roles/abc"):
        missing = await console.get(path)
        # As the API answers an id of another account: ResourceNotFound.
        assert missing.status_code == 400 and "not found" in missing.text, path
        assert "Theirs" not in missing.text
    for path, form in ((f"/console/roles/{custom}/edit", {"role_name": "Mine"}),
                       (f"/console/roles/{custom}/disable", {}),
                       (f"/console/roles/{custom}/delete", {}),
                       (f"/console/roles/{foreign}/grant",
                        {"member_ids": [str(owner.person_id)]})):
        assert (await console.post(path, form)).status_code == 400, path
    # Another account's member is not found either.
    mine = await _responder(api, owner)
    theirs = await console.post(f"/console/roles/{mine}/grant",
                                {"member_ids": [str(other_owner.person_id)]})
    assert theirs.status_code == 400 and "not found" in theirs.text.lower()
    assert (await _role(api, custom)).role_name == "Theirs"
    assert await _holders(api, mine) == set()


async def test_a_teammate_invited_with_the_default_role_works_incidents(
        api: Api, owner: Person, console: Browser) -> None:
    form = await console.get("/console/members/new")
    chosen = re.search(r'<option value="([^"]+)" selected>([^<]+)<', form.text)
    assert chosen and chosen[1] == "responder" and chosen[2].startswith("Responder")
    assert 'href="/console/roles"' in form.text
    done = await console.post("/console/members/new", {
        "member_name": "Grace Hopper", "email": "grace@acme.example", "role_id": chosen[1]})
    assert done.status_code == 303
    grace = Person(owner.account_id, int(done.headers["location"].rsplit("/", 1)[1]), "")
    # The invitation made the account's Responder role, and gave it to her.
    responder = await _role_id(api, owner.account_id, name="Responder")
    assert await _granted(api, responder) == set(permissions.RESPONDER_DEFAULT)
    assert await _holders(api, responder) == {grace.person_id}
    assert [w[0] for w in await _writes(api, owner.account_id)] == [
        "role.upsert", "member.invite"]
    # The next invitation picks that role first, and makes none.
    again = await console.get("/console/members/new")
    assert f'<option value="{responder}" selected>Responder<' in again.text
    assert 'value="responder"' not in again.text
    roles_page = await console.get("/console/roles")
    assert "acknowledge, resolve, comment" in _row(roles_page.text, "Responder")

    # She signs in with her welcome link, as she would from the e-mail.
    teammate = browser(api)
    link = await link_for(api, grace)
    assert "Welcome, Grace Hopper" in (await teammate.get(link)).text
    signed = await teammate.post(link, {"password": PASSWORD, "password_again": PASSWORD})
    assert signed.status_code == 303
    seeded = await seed(api, owner)
    path = f"/console/incidents/{seeded.incident_id}"
    page = await teammate.get(path)
    assert page.status_code == 200
    for button in ('id="do-ack"', 'id="do-resolve"', 'id="do-comment"'):
        assert button in page.text, button
    assert (await teammate.post(f"{path}/ack")).status_code == 303
    assert (await teammate.post(f"{path}/comment", {"comment": "on it"})).status_code == 303
    assert (await teammate.post(f"{path}/snooze", {"minutes": "30"})).status_code == 303
    assert (await teammate.post(f"{path}/resolve")).status_code == 303
    got = await info(api, owner, seeded.incident_id)
    assert got["progress"] == "Closed"
    async with api.runtime.db.transaction(write=False) as conn:
        by_her = [(r.operation, r.outcome, r.credential) for r in await conn.execute(
            select(audit_log).where(audit_log.c.member_id == grace.person_id,
                                    audit_log.c.operation.like("incident.%"))
            .order_by(audit_log.c.id))]
    assert by_her == [("incident.ack", "OK", "session"), ("incident.comment", "OK", "session"),
                      ("incident.snooze", "OK", "session"),
                      ("incident.resolve", "OK", "session")]
    await teammate.aclose()


async def test_an_inviter_who_cannot_give_the_default_role_is_told_in_words(
        api: Api, owner: Person) -> None:
    managing = (await ok(api, "/role/upsert", {
        "role_name": "People manager",
        "permission_ids": [1, *sorted(permissions.MEMBER_DEFAULT)]}, owner))["role_id"]
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managing])
    b = await signed_in(api, manager)
    await b.get("/console/members/new")
    refused = await b.post("/console/members/new", {
        "member_name": "Newcomer", "email": "new@acme.example", "role_id": "responder"})
    assert refused.status_code == 403
    assert "Manage incidents; View on-call schedules" in refused.text
    assert 'value="Newcomer"' in refused.text  # the form comes back as typed
    async with api.runtime.db.transaction(write=False) as conn:
        names = set((await conn.execute(select(role.c.role_name).where(
            role.c.account_id == owner.account_id))).scalars())
    assert "Responder" not in names
    await b.aclose()


async def test_a_refused_invitation_keeps_the_responder_role_it_made_chosen(
        api: Api, owner: Person, console: Browser) -> None:
    await console.get("/console/members/new")
    refused = await console.post("/console/members/new", {
        "member_name": "Copy Cat", "email": "OWNER@acme.example", "role_id": "responder"})
    assert refused.status_code == 400 and 'id="e-email"' in refused.text
    responder = await _role_id(api, owner.account_id, name="Responder")
    assert f'<option value="{responder}" selected>Responder<' in refused.text
    assert [w[:2] for w in await _writes(api, owner.account_id)] == [
        ("role.upsert", "OK"), ("member.invite", "InvalidParameter")]
