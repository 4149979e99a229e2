"""For the console tests against a real `dutyline serve`: an account seeded in its database
before it starts (an Owner with a password and an app key, a member with a password), signing
in through the form, and reading the incident list's event stream.

    owner = asyncio.run(seed_owner(url))
    with running_server(server_env(url)) as server, server.client() as web:
        sign_in(web, owner)
        with open_stream(web) as events:
            create_incident(server, owner, "db down")
            event, data = next_event(events, "incident-new")"""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import insert, select

from dutyline.db.engine import Database
from dutyline.db.tables.platform import member, member_role, role
from dutyline.kit.clock import SystemClock
from dutyline.kit.ids import numeric_id
from dutyline.platform.account.service import create_account
from dutyline.web import passwords
from dutyline.web import repository as web_repo

PASSWORD = "correct horse battery"
SECRET_KEY = "console-live-tests"
_CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')
_STREAM = re.compile(r'sse-connect="([^"]+)"')


@dataclass(frozen=True)
class Seeded:
    account_id: int
    person_id: int
    email: str
    app_key: str = ""  # the Owner's; members act through the console only


def server_env(url: str) -> dict[str, str]:
    return {"DUTYLINE_DATABASE_URL": url, "DUTYLINE_SECRET_KEY": SECRET_KEY,
            "DUTYLINE_LOG_LEVEL": "warning"}


async def seed_owner(url: str, name: str = "Acme") -> Seeded:
    db = Database(url)
    try:
        async with db.transaction() as conn:
            email = f"owner@{name.lower()}.example"
            made = await create_account(conn, account_name=name, owner_name=f"{name} Owner",
                                        owner_email=email, now_s=_now())
            await _password(conn, made.account_id, made.person_id)
        return Seeded(made.account_id, made.person_id, email, made.app_key)
    finally:
        await db.dispose()


async def seed_member(url: str, owner: Seeded, name: str, builtin: str = "member") -> Seeded:
    """A member with a built-in role (`member` holds channel_view and incident_manage)."""
    db = Database(url)
    try:
        async with db.transaction() as conn:
            person_id, email = numeric_id(), f"{name.lower()}@members.example"
            await conn.execute(insert(member).values(
                member_id=person_id, account_id=owner.account_id, member_name=name,
                email=email, status="enabled", created_at=_now(), updated_at=_now()))
            role_id = (await conn.execute(select(role.c.role_id).where(
                role.c.account_id == owner.account_id, role.c.builtin == builtin))).scalar_one()
            await conn.execute(insert(member_role).values(
                member_id=person_id, role_id=role_id, account_id=owner.account_id))
            await _password(conn, owner.account_id, person_id)
        return Seeded(owner.account_id, person_id, email)
    finally:
        await db.dispose()


async def _password(conn: Any, account_id: int, person_id: int) -> None:
    prepared = await passwords.new_password(PASSWORD)
    await web_repo.set_password(conn, account_id=account_id, member_id=person_id,
                                password_hash=prepared.hash, now_s=_now())


def _now() -> int:
    return int(SystemClock().now())


def csrf_of(page: str) -> str:
    found = _CSRF.search(page)
    assert found is not None, "no form on the page"
    return found[1]


def sign_in(web: httpx.Client, who: Seeded) -> None:
    """Sign in through the form, as a person would."""
    form = web.get("/console/sign-in")
    answer = web.post("/console/sign-in", data={
        "email": who.email, "password": PASSWORD, "csrf_token": csrf_of(form.text),
        "next": "/console/incidents"})
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/console/incidents"


def sign_out(web: httpx.Client) -> None:
    page = web.get("/console/incidents")
    answer = web.post("/console/sign-out", data={"csrf_token": csrf_of(page.text)})
    assert answer.status_code == 303, answer.text


def call(server_url: str, path: str, key: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(f"{server_url}{path}", params={"app_key": key}, json=body,
                        timeout=10, trust_env=False)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def create_incident(server_url: str, owner: Seeded, title: str, **body: Any) -> str:
    made = call(server_url, "/incident/create", owner.app_key,
                {"incident_severity": "Critical", "title": title, **body})
    return str(made["incident_id"])


def stream_url(web: httpx.Client, query: str = "") -> str:
    """The stream the list page (with `query`) opens."""
    page = web.get(f"/console/incidents{query}")
    assert page.status_code == 200, page.text
    found = _STREAM.search(page.text)
    assert found is not None
    return html.unescape(found[1])


@contextlib.contextmanager
def open_stream(web: httpx.Client, query: str = "", *, read_timeout: float = 5.0,
                ) -> Iterator[Iterator[tuple[str, str]]]:
    """The (event, data) messages of the list's stream, as they come. A read that waits
    longer than `read_timeout` for the next byte fails the test (httpx.ReadTimeout)."""
    url = stream_url(web, query)
    timeout = httpx.Timeout(10.0, read=read_timeout)
    with web.stream("GET", url, timeout=timeout) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        yield _messages(answer.iter_lines())


def _messages(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    event, data = "message", []
    for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def next_event(messages: Iterator[tuple[str, str]], event: str, containing: str = "") -> str:
    """The data of the next message of kind `event` (holding `containing`); the messages
    before it are skipped."""
    for kind, data in messages:
        if kind == event and containing in data:
            return data
    raise AssertionError(f"the stream ended before a {event!r} message")
