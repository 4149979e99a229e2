"""The App keys pages: a member's keys by last characters and last use, a manager's view of
every member's, issuing a key (shown once) and revoking one."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import permissions
from dutyline.db.tables.platform import app_key, audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import ok

pytestmark = pytest.mark.anyio

KEYS = "/console/app-keys"


async def _keys(api: Api, person_id: int) -> dict[str, Any]:
    """{key name: row} of a member's keys."""
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(app_key).where(app_key.c.person_id == person_id))
        return {r.key_name: r for r in rows}


async def _writes(api: Api, account_id: int) -> list[tuple[str, str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(
            select(audit_log.c.operation, audit_log.c.outcome, audit_log.c.credential)
            .where(audit_log.c.account_id == account_id, audit_log.c.is_write)
            .order_by(audit_log.c.id))
        return [(r.operation, r.outcome, r.credential) for r in rows]


def _shown_key(page: str) -> str:
    found = re.search(r'<textarea id="f-app_key"[^>]*>([^<]+)</textarea>', page)
    assert found, page
    return found[1]


async def test_a_key_is_made_shown_once_and_works(api: Api, owner: Person,
                                                 console: Browser) -> None:
    form = await console.get(f"{KEYS}/new")
    assert form.status_code == 200 and 'id="f-key_name"' in form.text
    made = await console.post(f"{KEYS}/new", {"key_name": "CI deploys"})
    assert made.status_code == 201
    assert made.headers["cache-control"] == "no-store"
    plaintext = _shown_key(made.text)
    assert "shown this once" in made.text
    stored = (await _keys(api, owner.person_id))["CI deploys"]
    assert stored.suffix == plaintext[-4:] and plaintext not in str(stored.key_hash)
    # The key works on the API, and its use shows on the list.
    assert (await api.call("/member/info", {}, key=plaintext)).status == 200
    await api.runtime.authenticator.flush_last_used(api.runtime.db)  # as the server does
    listed = await console.get(KEYS)
    assert listed.status_code == 200 and plaintext not in listed.text
    row = re.search(r">CI deploys</th>.*?</tr>", listed.text, re.DOTALL)
    assert row and f"…{plaintext[-4:]}" in row[0] and "never" not in row[0]
    assert "2 keys" in listed.text
    assert await _writes(api, owner.account_id) == [("app-key.create", "OK", "session")]


async def test_revoking_a_key_stops_it(api: Api, owner: Person, console: Browser) -> None:
    made = await console.post(f"{KEYS}/new", {"key_name": "old"})
    plaintext = _shown_key(made.text)
    key_id = (await _keys(api, owner.person_id))["old"].key_id
    confirm = await console.get(f"{KEYS}/{key_id}/revoke")
    assert confirm.status_code == 200 and "Revoke the key old?" in confirm.text
    assert plaintext[-4:] in confirm.text
    done = await console.post(f"{KEYS}/{key_id}/revoke")
    assert done.status_code == 303 and done.headers["location"] == KEYS
    assert "The key old is revoked" in (await console.get(KEYS)).text
    assert "old" not in await _keys(api, owner.person_id)
    assert (await api.call("/member/info", {}, key=plaintext)).status == 401
    assert await _writes(api, owner.account_id) == [
        ("app-key.create", "OK", "session"), ("app-key.delete", "OK", "session")]


async def test_key_errors_are_shown_by_their_field(api: Api, owner: Person,
                                                  console: Browser) -> None:
    blank = await console.post(f"{KEYS}/new", {"key_name": ""})
    assert blank.status_code == 400
    error = re.search(r'id="e-key_name">([^<]*)<', blank.text)
    assert error and error[1] == "is required"
    spaces = await console.post(f"{KEYS}/new", {"key_name": "   "})
    assert spaces.status_code == 400 and 'id="e-key_name"' in spaces.text
    long = await console.post(f"{KEYS}/new", {"key_name": "k" * 65})
    assert long.status_code == 400
    error = re.search(r'id="e-key_name">([^<]*)<', long.text)
    assert error and error[1] == "must be at most 64 characters"
    assert 'value="' + "k" * 65 + '"' in long.text
    assert set(await _keys(api, owner.person_id)) == {"default"}


async def test_a_member_sees_and_revokes_only_their_own_keys(
        api: Api, owner: Person) -> None:
    plain = await new_member(api, owner, name="Plain")
    other = await new_member(api, owner, name="Other")
    b = await signed_in(api, plain)
    listed = await b.get(KEYS)
    assert listed.status_code == 200
    assert "every member" not in listed.text and ">you<" in listed.text
    assert "1 key" in listed.text
    form = await b.get(f"{KEYS}/new")
    assert 'name="person_id"' not in form.text  # only for themselves
    made = await b.post(f"{KEYS}/new", {"key_name": "mine"})
    assert made.status_code == 201
    # Another member's key: not theirs to see or to revoke, nor to make.
    theirs = (await _keys(api, other.person_id))["test"].key_id
    missing = await b.get(f"{KEYS}/{theirs}/revoke")
    assert missing.status_code == 400 and "not found" in missing.text
    assert (await b.post(f"{KEYS}/{theirs}/revoke")).status_code == 400
    forged = await b.post(f"{KEYS}/new", {"key_name": "as other",
                                          "person_id": str(other.person_id)})
    assert forged.status_code == 403 and "as other" not in await _keys(api, other.person_id)
    assert set(await _keys(api, other.person_id)) == {"test"}
    assert await _writes(api, owner.account_id) == [
        ("app-key.create", "OK", "session"), ("app-key.create", "AccessDenied", "session")]
    await b.aclose()


async def test_a_manager_sees_every_members_keys_and_acts_within_their_rights(
        api: Api, owner: Person, console: Browser) -> None:
    plain = await new_member(api, owner, name="Plain")
    listed = await console.get(KEYS)
    assert "every member" in listed.text
    assert f'href="/console/members/{plain.person_id}">Plain</a>' in listed.text
    form = await console.get(f"{KEYS}/new")
    assert f'<option value="{plain.person_id}">Plain</option>' in form.text
    made = await console.post(f"{KEYS}/new", {"key_name": "for plain",
                                              "person_id": str(plain.person_id)})
    assert made.status_code == 201 and "acts as Plain" in made.text
    assert "for plain" in await _keys(api, plain.person_id)
    key_id = (await _keys(api, plain.person_id))["test"].key_id
    assert (await console.post(f"{KEYS}/{key_id}/revoke")).status_code == 303
    assert set(await _keys(api, plain.person_id)) == {"for plain"}

    # A manager holding less than a member may not make or revoke that member's keys: the
    # refusal names what they lack, in words.
    managing = (await ok(api, "/role/upsert", {
        "role_name": "People manager",
        "permission_ids": [1, *sorted(permissions.MEMBER_DEFAULT)]}, owner))["role_id"]
    manager = await new_member(api, owner, name="Manager", builtin=None, role_ids=[managing])
    boss = await new_member(api, owner, name="Boss", builtin="admin")
    m = await signed_in(api, manager)
    refused = await m.post(f"{KEYS}/new", {"key_name": "as boss",
                                           "person_id": str(boss.person_id)})
    assert refused.status_code == 403 and "holds permissions you do not hold" in refused.text
    assert "Manage incidents" in refused.text and "incident_manage" not in refused.text
    assert f'<option value="{boss.person_id}" selected>' in refused.text
    boss_key = (await _keys(api, boss.person_id))["test"].key_id
    revoke = await m.post(f"{KEYS}/{boss_key}/revoke")
    assert revoke.status_code == 403 and "Manage incidents" in revoke.text
    assert set(await _keys(api, boss.person_id)) == {"test"}
    await m.aclose()


async def test_another_accounts_keys_and_members_are_not_found(
        api: Api, owner: Person, other_owner: Person, console: Browser) -> None:
    theirs = (await _keys(api, other_owner.person_id))["default"].key_id
    assert "default" in (await console.get(KEYS)).text  # the owner's own
    listed = await console.get(KEYS)
    assert f"/console/app-keys/{theirs}/" not in listed.text
    missing = await console.get(f"{KEYS}/{theirs}/revoke")
    assert missing.status_code == 400 and "not found" in missing.text
    assert (await console.post(f"{KEYS}/{theirs}/revoke")).status_code == 400
    foreign = await console.post(f"{KEYS}/new", {"key_name": "theirs",
                                                  "person_id": str(other_owner.person_id)})
    assert foreign.status_code == 400
    error = re.search(r'id="e-person_id">([^<]*)<', foreign.text)
    assert error and error[1] == "is not a member of this account"
    assert set(await _keys(api, other_owner.person_id)) == {"default"}
    assert (await console.get(f"{KEYS}/abc/revoke")).status_code == 400
