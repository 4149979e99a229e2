"""The Members pages: the list, inviting by e-mail, roles, removing; who may do what."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log, member, member_role, role
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, browser, signed_in
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio

PASSWORD = "a long enough secret"
HOSTILE = '<script>alert("x")</script>'


@pytest.fixture
def settings(settings: Settings, smtp_sink: SmtpSink) -> Settings:
    return settings.with_(smtp_url=smtp_sink.url, base_url="http://on-call.example")


async def _run_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes += [await worker.execute(job) for job in claimed]
    return outcomes


async def _outcomes(api: Api, account_id: int) -> list[tuple[str, str]]:
    """The writes of the account's audit log, refused or failed ones too, with outcomes."""
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.outcome)
                                  .where(audit_log.c.account_id == account_id,
                                         audit_log.c.is_write)
                                  .order_by(audit_log.c.id))
        return [(r.operation, r.outcome) for r in rows]


async def _audit(api: Api, account_id: int) -> list[tuple[str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                  .where(audit_log.c.account_id == account_id,
                                         audit_log.c.is_write)
                                  .order_by(audit_log.c.id))
        return [(r.operation, r.credential) for r in rows]


async def _role_id(api: Api, account_id: int, builtin: str) -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(select(role.c.role_id).where(
            role.c.account_id == account_id, role.c.builtin == builtin))).scalar_one())


async def _roles_of(api: Api, person_id: int) -> set[int]:
    async with api.runtime.db.transaction(write=False) as conn:
        return set((await conn.execute(select(member_role.c.role_id).where(
            member_role.c.member_id == person_id))).scalars())


async def _status(api: Api, person_id: int) -> str:
    async with api.runtime.db.transaction(write=False) as conn:
        return str((await conn.execute(select(member.c.status).where(
            member.c.member_id == person_id))).scalar_one())


async def _member_count(api: Api, account_id: int) -> int:
    async with api.runtime.db.transaction(write=False) as conn:
        return int((await conn.execute(select(func.count()).select_from(member).where(
            member.c.account_id == account_id))).scalar_one())


async def test_the_list_shows_the_accounts_members_only(
        api: Api, owner: Person, other_owner: Person, console: Browser) -> None:
    await new_member(api, owner, name="Ada Lovelace", email="ada@acme.example")
    stranger = await new_member(api, other_owner, name="Globex Gus", email="gus@globex.example")
    page = await console.get("/console/members")
    assert page.status_code == 200
    assert "Ada Lovelace" in page.text and "ada@acme.example" in page.text
    assert "Acme Owner" in page.text and "Owner" in page.text  # the Owner's role by name
    assert "Globex" not in page.text and "gus@globex.example" not in page.text
    # Only "Members" is the current item of the navigation ("Me" is a prefix of it).
    assert re.findall(r'<a href="([^"]+)" aria-current="page"', page.text) == [
        "/console/members"]
    # Another account's member is not found, as through the API (ResourceNotFound: 400).
    missing = await console.get(f"/console/members/{stranger.person_id}")
    assert missing.status_code == 400 and "not found" in missing.text
    assert "Globex" not in missing.text
    assert (await console.get("/console/members/not-a-number")).status_code == 400


async def test_search_and_pages(api: Api, owner: Person, console: Browser,
                                clock: FakeClock) -> None:
    for i in range(24):
        clock.advance(1)  # the list runs oldest first
        await new_member(api, owner, name=f"Person {i:02}", email=f"p{i:02}@acme.example")
    first = await console.get("/console/members")
    assert "25 members" in first.text
    assert "Page 1 of 2" in first.text and 'rel="next"' in first.text
    assert "Acme Owner" in first.text and "Person 23" not in first.text
    second = await console.get("/console/members?p=2&q=")
    assert "Person 23" in second.text and 'rel="prev"' in second.text
    found = await console.get("/console/members?q=P07%40ACME")
    assert "1 member found" in found.text
    assert "Person 07" in found.text and "Person 08" not in found.text
    assert 'value="P07@ACME"' in found.text  # the search stays in its box
    beyond = await console.get("/console/members?p=999999")
    assert beyond.status_code == 200
    # Past /member/list's 255 characters a search is no search: the whole list, not a page
    # refused and not a search for a cut-off text.
    at_limit = await console.get("/console/members?q=" + "z" * 255)
    assert "0 members found" in at_limit.text
    too_long = await console.get("/console/members?q=" + "z" * 256)
    assert too_long.status_code == 200 and "25 members" in too_long.text


async def test_an_invitation_adds_the_member_and_its_link_signs_in(
        api: Api, owner: Person, console: Browser, smtp_sink: SmtpSink) -> None:
    member_role_id = await _role_id(api, owner.account_id, "member")
    form = await console.get("/console/members/new")
    assert form.status_code == 200
    # The form offers the role that works incidents first (tests/web/test_roles.py); any
    # other may be chosen.
    assert '<option value="responder" selected' in form.text
    assert f'<option value="{member_role_id}">Member<' in form.text
    assert ">Owner<" not in form.text  # the Owner role is never handed out
    done = await console.post("/console/members/new", {
        "member_name": "Grace Hopper", "email": "Grace@Acme.example",
        "role_id": str(member_role_id)})
    assert done.status_code == 303
    member_path = done.headers["location"]
    person_id = int(member_path.rsplit("/", 1)[1])
    page = await console.get(member_path)
    assert "Grace Hopper" in page.text and "an invitation is on its way" in page.text
    assert "never signed in" in page.text
    assert await _roles_of(api, person_id) == {member_role_id}

    assert await _run_jobs(api) == ["done"]
    [message] = await smtp_sink.wait_for(1)
    assert message.rcpt_tos == ["grace@acme.example"]
    link = re.search(r"http://on-call\.example(/console/welcome/[A-Za-z0-9_-]+)", message.text)
    assert link, message.text
    grace = browser(api)
    assert "Welcome, Grace Hopper" in (await grace.get(link[1])).text
    signed = await grace.post(link[1], {"password": PASSWORD, "password_again": PASSWORD})
    assert signed.status_code == 303
    assert (await grace.get("/console/members")).status_code == 200  # signed in
    await grace.aclose()

    # Creating the member and sending their invitation: one entry each, as the person.
    # Adding the member and mailing the invitation is one console write: one audit row, as
    # the person, before the newcomer's own (setting their password, signing in).
    assert (await _audit(api, owner.account_id))[0] == ("member.invite", "session")
    async with api.runtime.db.transaction(write=False) as conn:
        by_owner = (await conn.execute(select(func.count()).select_from(audit_log).where(
            audit_log.c.member_id == owner.person_id))).scalar_one()
    assert by_owner == 1
    # Once signed in, the invitation button is gone.
    listed = await console.get("/console/members")
    row = re.search(r"Grace Hopper.*?</tr>", listed.text, re.DOTALL)
    assert row and "never signed in" not in row[0] and "Send invitation" not in row[0]


async def test_resending_an_invitation(api: Api, owner: Person, console: Browser,
                                       smtp_sink: SmtpSink) -> None:
    newcomer = await new_member(api, owner, name="Newcomer", email="new@acme.example")
    page = await console.get(f"/console/members/{newcomer.person_id}")
    assert f'action="/console/members/{newcomer.person_id}/invite"' in page.text
    listed = await console.get("/console/members")
    assert f'action="/console/members/{newcomer.person_id}/invite"' in listed.text
    sent = await console.post(f"/console/members/{newcomer.person_id}/invite")
    assert sent.status_code == 303
    assert await _run_jobs(api) == ["done"]
    [message] = await smtp_sink.wait_for(1)
    assert message.rcpt_tos == ["new@acme.example"]


async def test_invite_errors_are_shown_by_their_field_with_the_input_kept(
        api: Api, owner: Person, console: Browser) -> None:
    member_role_id = str(await _role_id(api, owner.account_id, "member"))
    before = await _member_count(api, owner.account_id)
    await console.get("/console/members/new")

    bad = await console.post("/console/members/new", {
        "member_name": "Bad Mail", "email": "not-an-address", "role_id": member_role_id})
    assert bad.status_code == 400
    assert 'id="e-email"' in bad.text and 'aria-invalid="true"' in bad.text
    assert 'value="not-an-address"' in bad.text and 'value="Bad Mail"' in bad.text

    taken = await console.post("/console/members/new", {
        "member_name": "Copy Cat", "email": "OWNER@acme.example", "role_id": member_role_id})
    assert taken.status_code == 400
    error = re.search(r'id="e-email">([^<]*)<', taken.text)
    assert error and "already belongs to a member" in error[1]
    assert 'value="Copy Cat"' in taken.text

    long_name = await console.post("/console/members/new", {
        "member_name": "x" * 40, "email": "long@acme.example", "role_id": member_role_id})
    assert long_name.status_code == 400
    assert 'id="e-member_name"' in long_name.text and "at most 39" in long_name.text

    no_mail = await console.post("/console/members/new", {
        "member_name": "No Mail", "email": "", "role_id": member_role_id})
    assert no_mail.status_code == 400 and 'id="e-email"' in no_mail.text

    owner_role = str(await _role_id(api, owner.account_id, "owner"))
    as_owner = await console.post("/console/members/new", {
        "member_name": "Usurper", "email": "u@acme.example", "role_id": owner_role})
    assert as_owner.status_code == 400 and 'id="e-role_id"' in as_owner.text
    foreign = await console.post("/console/members/new", {
        "member_name": "Foreign", "email": "f@acme.example", "role_id": "12345"})
    assert foreign.status_code == 400 and 'id="e-role_id"' in foreign.text

    assert await _member_count(api, owner.account_id) == before
    # What the service refused, by its rights, its rules or its input's limits, is recorded
    # with its outcome, as the API records it; what the form decoder refused before the
    # service was called reaches no write.
    assert await _outcomes(api, owner.account_id) == [
        ("member.invite", "InvalidParameter")] * 5


async def test_a_plain_member_sees_no_controls_and_forged_posts_are_refused(
        api: Api, owner: Person, smtp_sink: SmtpSink) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    other = await new_member(api, owner, name="Other", email="other@acme.example")
    admin_role = await _role_id(api, owner.account_id, "admin")
    member_role_id = await _role_id(api, owner.account_id, "member")
    b = await signed_in(api, plain)
    listed = await b.get("/console/members")
    assert listed.status_code == 200 and "Other" in listed.text
    assert "Invite a member" not in listed.text and "Send invitation" not in listed.text
    page = await b.get(f"/console/members/{other.person_id}")
    assert page.status_code == 200
    assert "Save roles" not in page.text and "/remove" not in page.text
    assert (await b.get("/console/members/new")).status_code == 403
    assert (await b.get(f"/console/members/{other.person_id}/remove")).status_code == 403

    before = await _member_count(api, owner.account_id)
    invited = await b.post("/console/members/new", {
        "member_name": "Sneaky", "email": "sneaky@acme.example",
        "role_id": str(member_role_id)})
    assert invited.status_code == 403
    granted = await b.post(f"/console/members/{other.person_id}/roles",
                           {"role_ids": [str(admin_role)]})
    assert granted.status_code == 403
    removed = await b.post(f"/console/members/{other.person_id}/remove")
    assert removed.status_code == 403
    self_grant = await b.post(f"/console/members/{plain.person_id}/roles",
                              {"role_ids": [str(admin_role)]})
    assert self_grant.status_code == 403

    assert await _member_count(api, owner.account_id) == before
    assert await _roles_of(api, other.person_id) == {member_role_id}
    assert await _roles_of(api, plain.person_id) == {member_role_id}
    assert await _status(api, other.person_id) == "enabled"
    assert await _run_jobs(api) == []
    assert await _outcomes(api, owner.account_id) == [
        ("member.invite", "AccessDenied"), ("member.role.update", "AccessDenied"),
        ("member.delete", "AccessDenied"), ("member.role.update", "AccessDenied")]
    await b.aclose()


async def test_a_post_without_the_csrf_token_is_refused(
        api: Api, owner: Person, console: Browser) -> None:
    other = await new_member(api, owner, name="Other")
    admin_role = str(await _role_id(api, owner.account_id, "admin"))
    before = await _member_count(api, owner.account_id)
    forged = [
        await console.post("/console/members/new", {"member_name": "Forged",
                                                     "email": "forged@acme.example",
                                                     "role_id": admin_role}, csrf=False),
        await console.post(f"/console/members/{other.person_id}/roles",
                           {"role_ids": [admin_role]}, csrf=False),
        await console.post(f"/console/members/{other.person_id}/remove", csrf=False),
    ]
    assert [r.status_code for r in forged] == [403, 403, 403]
    assert await _member_count(api, owner.account_id) == before
    assert await _status(api, other.person_id) == "enabled"
    assert int(admin_role) not in await _roles_of(api, other.person_id)


async def test_changing_a_members_roles(api: Api, owner: Person, console: Browser) -> None:
    other = await new_member(api, owner, name="Other")
    admin_role = await _role_id(api, owner.account_id, "admin")
    member_role_id = await _role_id(api, owner.account_id, "member")
    owner_role = await _role_id(api, owner.account_id, "owner")
    page = await console.get(f"/console/members/{other.person_id}")
    assert f'name="role_ids" value="{member_role_id}" checked' in page.text
    done = await console.post(f"/console/members/{other.person_id}/roles",
                              {"role_ids": [str(admin_role)]})
    assert done.status_code == 303
    assert await _roles_of(api, other.person_id) == {admin_role}
    assert await _audit(api, owner.account_id) == [("member.role.update", "session")]
    # The Owner role is no checkbox, and is kept when the Owner's roles are saved.
    own = await console.get(f"/console/members/{owner.person_id}")
    assert f'value="{owner_role}"' not in own.text
    kept = await console.post(f"/console/members/{owner.person_id}/roles",
                              {"role_ids": [str(member_role_id)]})
    assert kept.status_code == 303
    assert await _roles_of(api, owner.person_id) == {owner_role, member_role_id}
    # Handing out the Owner role by a forged form is refused by the service.
    usurp = await console.post(f"/console/members/{other.person_id}/roles",
                               {"role_ids": [str(owner_role)]})
    assert usurp.status_code == 400 and 'id="e-role_ids"' in usurp.text
    assert await _roles_of(api, other.person_id) == {admin_role}


async def test_removing_a_member_ends_their_console_session(
        api: Api, owner: Person, console: Browser) -> None:
    leaving = await new_member(api, owner, name="Leaving", email="leaving@acme.example")
    theirs = await signed_in(api, leaving)
    assert (await theirs.get("/console/members")).status_code == 200
    confirm = await console.get(f"/console/members/{leaving.person_id}/remove")
    assert confirm.status_code == 200 and "Remove Leaving?" in confirm.text
    done = await console.post(f"/console/members/{leaving.person_id}/remove")
    assert done.status_code == 303 and done.headers["location"] == "/console/members"
    listed = await console.get("/console/members")
    assert "Leaving is removed" in listed.text
    assert "leaving@acme.example" not in listed.text
    assert await _status(api, leaving.person_id) == "deleted"
    assert (await theirs.get("/console/members")).status_code == 303  # to sign in
    assert (await console.get(f"/console/members/{leaving.person_id}")).status_code == 400
    assert await _audit(api, owner.account_id) == [("member.delete", "session")]
    await theirs.aclose()


async def test_the_owner_and_oneself_cannot_be_removed(
        api: Api, owner: Person, console: Browser) -> None:
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    b = await signed_in(api, admin)
    refused = await b.post(f"/console/members/{owner.person_id}/remove")
    assert refused.status_code == 403  # only the Owner acts on the Owner
    assert "Only the Owner may act on the Owner" in refused.text
    self_remove = await b.post(f"/console/members/{admin.person_id}/remove")
    assert self_remove.status_code == 400 and "cannot delete yourself" in self_remove.text
    assert await _status(api, owner.person_id) == "enabled"
    assert await _status(api, admin.person_id) == "enabled"
    own_page = await console.get(f"/console/members/{owner.person_id}")
    assert "/remove" not in own_page.text
    await b.aclose()


async def test_hostile_names_are_escaped(api: Api, owner: Person, console: Browser) -> None:
    hostile = await new_member(api, owner, name=HOSTILE, email="h@acme.example")
    for path in ("/console/members", f"/console/members/{hostile.person_id}",
                 f"/console/members/{hostile.person_id}/remove"):
        page = await console.get(path)
        assert page.status_code == 200
        assert HOSTILE not in page.text
        assert "&lt;script&gt;" in page.text
    await console.get("/console/members/new")
    member_role_id = str(await _role_id(api, owner.account_id, "member"))
    shown = await console.post("/console/members/new", {
        "member_name": HOSTILE, "email": "bad address", "role_id": member_role_id})
    assert shown.status_code == 400 and HOSTILE not in shown.text


async def test_a_message_after_a_change_is_shown_once(api: Api, owner: Person,
                                                      console: Browser) -> None:
    leaving = await new_member(api, owner, name="Leaving")
    await console.post(f"/console/members/{leaving.person_id}/remove")
    assert "Leaving is removed" in (await console.get("/console/members")).text
    assert "Leaving is removed" not in (await console.get("/console/members")).text
