"""Inviting from the Members pages on a server that sends no e-mail."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.console import Browser
from tests.web.test_members import _audit, _role_id, _run_jobs

pytestmark = pytest.mark.anyio


async def test_without_mail_the_member_is_added_and_the_page_says_how_to_invite(
        api: Api, owner: Person, console: Browser) -> None:
    member_role_id = str(await _role_id(api, owner.account_id, "member"))
    form = await console.get("/console/members/new")
    assert "dutyline invite-link" in form.text
    done = await console.post("/console/members/new", {
        "member_name": "Quiet One", "email": "quiet@acme.example", "role_id": member_role_id})
    assert done.status_code == 303
    page = await console.get(done.headers["location"])
    assert "dutyline invite-link" in page.text
    assert await _run_jobs(api) == []
    assert await _audit(api, owner.account_id) == [("member.invite", "session")]
