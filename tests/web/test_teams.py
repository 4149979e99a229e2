"""The Teams pages: the list, a team's page, creating, editing and deleting a team."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api.ratelimit import MemoryRateLimiter, Window
from dutyline.db.tables.platform import audit_log, team, team_member
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in

pytestmark = pytest.mark.anyio

HOSTILE = '<img src=x onerror="alert(1)">'


async def _audit(api: Api, account_id: int) -> list[tuple[str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                  .where(audit_log.c.account_id == account_id,
                                         audit_log.c.is_write)
                                  .order_by(audit_log.c.id))
        return [(r.operation, r.credential) for r in rows]


async def _rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(select(audit_log).where(
            audit_log.c.account_id == account_id).order_by(audit_log.c.id)))


async def _outcomes(api: Api, account_id: int) -> list[tuple[str, str]]:
    return [(r.operation, r.outcome) for r in await _rows(api, account_id) if r.is_write]


async def _teams(api: Api, account_id: int) -> dict[str, set[int]]:
    """{team name: member ids} of the account."""
    async with api.runtime.db.transaction(write=False) as conn:
        rows = list(await conn.execute(select(team.c.team_id, team.c.team_name).where(
            team.c.account_id == account_id)))
        people = list(await conn.execute(select(team_member.c.team_id,
                                                team_member.c.person_id)))
    return {r.team_name: {p.person_id for p in people if p.team_id == r.team_id}
            for r in rows}


async def _create(console: Browser, name: str, *people: Person,
                  description: str = "") -> str:
    done = await console.post("/console/teams/new", {
        "team_name": name, "description": description,
        "person_ids": [str(p.person_id) for p in people]})
    assert done.status_code == 303, done.text
    return str(done.headers["location"])


async def test_creating_a_team_and_its_page(api: Api, owner: Person,
                                           console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada", email="ada@acme.example")
    bob = await new_member(api, owner, name="Bob", email="bob@acme.example")
    form = await console.get("/console/teams/new")
    assert form.status_code == 200
    assert f'name="person_ids" value="{ada.person_id}"' in form.text
    path = await _create(console, "SRE", ada, bob, description="Keeps the lights on")
    assert re.fullmatch(r"/console/teams/\d+", path)
    page = await console.get(path)
    assert page.status_code == 200
    assert "<h1>SRE</h1>" in page.text and "Keeps the lights on" in page.text
    assert f'href="/console/members/{ada.person_id}">Ada</a>' in page.text
    assert "bob@acme.example" in page.text
    assert await _teams(api, owner.account_id) == {"SRE": {ada.person_id, bob.person_id}}
    assert await _audit(api, owner.account_id) == [("team.upsert", "session")]
    # The members list names each member's teams.
    members = await console.get("/console/members")
    row = re.search(r">Ada</a>.*?</tr>", members.text, re.DOTALL)
    assert row and "SRE" in row[0]
    listed = await console.get("/console/teams")
    assert 'href="' + path + '">SRE</a>' in listed.text and "1 team" in listed.text


async def test_the_list_shows_the_accounts_teams_only(
        api: Api, owner: Person, other_owner: Person, console: Browser) -> None:
    await _create(console, "Acme Ops")
    theirs = await signed_in(api, other_owner)
    foreign = await _create(theirs, "Globex Ops")
    listed = await console.get("/console/teams")
    assert "Acme Ops" in listed.text and "Globex Ops" not in listed.text
    missing = await console.get(foreign)
    assert missing.status_code == 400 and "Globex Ops" not in missing.text
    # Nor can it be changed or deleted from here.
    edit = await console.post(foreign + "/edit", {"team_name": "Taken over"})
    assert edit.status_code == 400
    gone = await console.post(foreign + "/delete")
    assert gone.status_code == 400
    assert set(await _teams(api, other_owner.account_id)) == {"Globex Ops"}
    found = await console.get("/console/teams?q=acme")
    assert "Acme Ops" in found.text
    none = await console.get("/console/teams?q=nothing-like-it")
    assert "0 teams found" in none.text
    # Past /team/list's 255 characters a search is no search: the whole list.
    too_long = await console.get("/console/teams?q=" + "x" * 256)
    assert too_long.status_code == 200 and "Acme Ops" in too_long.text
    await theirs.aclose()


async def test_editing_a_team(api: Api, owner: Person, console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    bob = await new_member(api, owner, name="Bob")
    path = await _create(console, "SRE", ada)
    form = await console.get(path + "/edit")
    assert 'value="SRE"' in form.text
    assert f'value="{ada.person_id}" checked' in form.text
    assert f'value="{bob.person_id}" checked' not in form.text
    done = await console.post(path + "/edit", {"team_name": "Platform",
                                               "description": "Renamed",
                                               "person_ids": [str(bob.person_id)]})
    assert done.status_code == 303 and done.headers["location"] == path
    assert await _teams(api, owner.account_id) == {"Platform": {bob.person_id}}
    emptied = await console.post(path + "/edit", {"team_name": "Platform"})
    assert emptied.status_code == 303
    assert await _teams(api, owner.account_id) == {"Platform": set()}
    assert await _audit(api, owner.account_id) == [("team.upsert", "session")] * 3


async def test_errors_are_shown_by_their_field_with_the_input_kept(
        api: Api, owner: Person, console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    await _create(console, "SRE")
    taken = await console.post("/console/teams/new", {
        "team_name": "sre", "description": "A second one",
        "person_ids": [str(ada.person_id)]})
    assert taken.status_code == 400
    error = re.search(r'id="e-team_name">([^<]*)<', taken.text)
    assert error and "already exists" in error[1]
    assert 'value="sre"' in taken.text and ">A second one</textarea>" in taken.text
    assert f'value="{ada.person_id}" checked' in taken.text
    too_long = await console.post("/console/teams/new", {"team_name": "x" * 40})
    assert too_long.status_code == 400
    assert 'id="e-team_name"' in too_long.text and "at most 39" in too_long.text
    empty = await console.post("/console/teams/new", {"team_name": ""})
    assert empty.status_code == 400 and 'id="e-team_name"' in empty.text
    stranger = await console.post("/console/teams/new", {"team_name": "Ghosts",
                                                         "person_ids": ["123456789"]})
    assert stranger.status_code == 400 and 'id="e-person_ids"' in stranger.text
    assert set(await _teams(api, owner.account_id)) == {"SRE"}
    # What the service refused is recorded with its outcome, as the API records it; what
    # the page refused before calling it (the length, the person ids) reached no write.
    assert await _outcomes(api, owner.account_id) == [
        ("team.upsert", "OK"), ("team.upsert", "InvalidParameter"),  # taken
        ("team.upsert", "InvalidParameter")]  # empty


async def test_a_refused_console_write_is_audited_as_the_api_s(
        api: Api, owner: Person, console: Browser) -> None:
    """The unit of work records a write its service refused, with the outcome the API
    records for the same refusal, and the form as its body (the CSRF token left out)."""
    await _create(console, "SRE")
    taken = await console.post("/console/teams/new", {"team_name": "sre",
                                                      "description": "again"})
    assert taken.status_code == 400
    by_api = await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)
    assert by_api.status == 400
    *_, by_console_row, by_api_row = await _rows(api, owner.account_id)
    assert (by_console_row.operation, by_console_row.credential, by_console_row.outcome,
            by_console_row.is_write) == ("team.upsert", "session", by_api.code, True)
    assert (by_api_row.operation, by_api_row.credential, by_api_row.outcome) == (
        "team.upsert", "app_key", by_api.code)
    assert by_console_row.member_id == owner.person_id
    assert json.loads(by_console_row.body) == {"team_name": "sre", "description": "again"}


async def test_console_writes_count_against_the_account_s_rate_limit(
        api: Api, owner: Person, console: Browser) -> None:
    """The console's writes are limited by the limiter the API's calls are, on the same
    account's windows: once they are full, both are refused alike."""
    api.runtime.limiter = MemoryRateLimiter((Window(2, 60.0),), api.runtime.clock)
    await _create(console, "One")
    await _create(console, "Two")
    refused = await console.post("/console/teams/new", {"team_name": "Three"})
    assert refused.status_code == 429
    assert set(await _teams(api, owner.account_id)) == {"One", "Two"}
    by_api = await api.call("/team/list", {}, key=owner.key)
    assert (by_api.status, by_api.code) == (429, "RequestTooFrequently")
    # Reading pages is not counted: a person browsing is not a client hammering the API.
    assert (await console.get("/console/teams")).status_code == 200


async def test_deleting_a_team(api: Api, owner: Person, console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    path = await _create(console, "SRE", ada)
    confirm = await console.get(path + "/delete")
    assert confirm.status_code == 200 and "Delete the team SRE?" in confirm.text
    done = await console.post(path + "/delete")
    assert done.status_code == 303 and done.headers["location"] == "/console/teams"
    assert "The team SRE is deleted" in (await console.get("/console/teams")).text
    assert await _teams(api, owner.account_id) == {}
    assert await _audit(api, owner.account_id) == [("team.upsert", "session"),
                                                   ("team.delete", "session")]


async def test_a_plain_member_sees_no_controls_and_forged_posts_are_refused(
        api: Api, owner: Person, console: Browser) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    path = await _create(console, "SRE", plain)
    b = await signed_in(api, plain)
    listed = await b.get("/console/teams")
    assert listed.status_code == 200 and "SRE" in listed.text
    assert "New team" not in listed.text
    page = await b.get(path)
    assert page.status_code == 200 and "Plain" in page.text
    assert "/edit" not in page.text and "/delete" not in page.text
    for form in ("/console/teams/new", path + "/edit", path + "/delete"):
        assert (await b.get(form)).status_code == 403
    refused = [
        await b.post("/console/teams/new", {"team_name": "Rogue"}),
        await b.post(path + "/edit", {"team_name": "Renamed"}),
        await b.post(path + "/delete"),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403]
    assert await _teams(api, owner.account_id) == {"SRE": {plain.person_id}}
    assert await _outcomes(api, owner.account_id) == [
        ("team.upsert", "OK"), ("team.upsert", "AccessDenied"),
        ("team.upsert", "AccessDenied"), ("team.delete", "AccessDenied")]
    await b.aclose()


async def test_a_post_without_the_csrf_token_is_refused(
        api: Api, owner: Person, console: Browser) -> None:
    path = await _create(console, "SRE")
    forged = [
        await console.post("/console/teams/new", {"team_name": "Forged"}, csrf=False),
        await console.post(path + "/edit", {"team_name": "Forged"}, csrf=False),
        await console.post(path + "/delete", csrf=False),
    ]
    assert [r.status_code for r in forged] == [403, 403, 403]
    assert set(await _teams(api, owner.account_id)) == {"SRE"}


async def test_hostile_names_are_escaped(api: Api, owner: Person, console: Browser) -> None:
    person = await new_member(api, owner, name=HOSTILE, email="h@acme.example")
    path = await _create(console, HOSTILE[:39], person, description=HOSTILE)
    for page_path in ("/console/teams", path, path + "/edit", path + "/delete",
                      "/console/teams/new", "/console/members"):
        page = await console.get(page_path)
        assert page.status_code == 200, page_path
        assert "<img" not in page.text, page_path
        assert "&lt;img" in page.text, page_path
