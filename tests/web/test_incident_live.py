"""The incident list, live, against real `dutyline serve` processes: the page's event stream
sends a new incident's row, only to those who may see it, ends when the session ends, and
works across processes (an incident opened through another server process of the same
database appears: NOTIFY on PostgreSQL, the event poll on SQLite)."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from dutyline.cli import GRACEFUL_SHUTDOWN_S
from tests.fixtures.server import running_server
from tests.web.live_support import (
    call,
    create_incident,
    next_event,
    open_stream,
    seed_member,
    seed_owner,
    server_env,
    sign_in,
    sign_out,
    stream_url,
)

pytestmark = pytest.mark.slow


def test_new_incidents_reach_open_lists_of_those_who_may_see_them(sqlite_url: str) -> None:
    owner = asyncio.run(seed_owner(sqlite_url))
    mia = asyncio.run(seed_member(sqlite_url, owner, "Mia"))
    with running_server(server_env(sqlite_url)) as server, \
            server.client() as as_owner, server.client() as as_mia:
        url = server.base_url
        team = call(url, "/team/upsert", owner.app_key,
                    {"team_name": "Core", "person_ids": [owner.person_id]})
        secret = call(url, "/channel/create", owner.app_key, {
            "channel_name": "Secret", "team_id": team["team_id"], "is_private": True})
        sign_in(as_owner, owner)
        sign_in(as_mia, mia)
        with open_stream(as_owner) as owners, open_stream(as_mia) as mias:
            create_incident(url, owner, "secret <b>db</b> down",
                            channel_id=secret["channel_id"])
            row = next_event(owners, "incident-new")
            assert "secret &lt;b&gt;db&lt;/b&gt; down" in row and "<b>" not in row
            assert 'action="/console/incidents/ack"' in row
            counts = next_event(owners, "incident-update")
            assert 'id="progress-tabs"' in counts and 'hx-swap-oob="true"' in counts
            public = create_incident(url, owner, "public api slow")
            assert "public api slow" in next_event(owners, "incident-new")
            # Mia's stream got nothing of the private incident, not even its id.
            seen = next_event(mias, "incident-new")
            assert "public api slow" in seen and "secret" not in seen
            # A change to a listed incident replaces its row wherever it is.
            call(url, "/incident/ack", owner.app_key, {"incident_ids": [public]})
            updated = next_event(mias, "incident-update", f'<li id="incident-{public}"')
            assert 'hx-swap-oob="true"' in updated and "Processing" in updated


def test_the_stream_ends_with_the_session(sqlite_url: str) -> None:
    owner = asyncio.run(seed_owner(sqlite_url))
    with running_server(server_env(sqlite_url)) as server, \
            server.client() as web, server.client() as other_tab:
        sign_in(web, owner)
        other_tab.cookies.update(web.cookies)
        url = stream_url(web)
        with open_stream(web) as events:
            sign_out(other_tab)
            # Open streams check the session on their heartbeat, not on every change: until
            # then one may still send rows the person could see when it opened.
            create_incident(server.base_url, owner, "after sign-out")
            assert "after sign-out" in next_event(events, "incident-new")
        # Reconnecting (as the page does at once, and after STREAM_MAX_S) is told at once.
        again = web.get(url, timeout=10.0)
        assert again.status_code == 200 and "event: session-ended" in again.text
        assert "Sign in again" in again.text and "incident-" not in again.text
        assert web.get("/console/incidents", follow_redirects=False).status_code == 303


def test_an_incident_opened_through_another_process_appears(database_url: str) -> None:
    owner = asyncio.run(seed_owner(database_url))
    env = server_env(database_url)
    with running_server(env) as watched, running_server(env) as other, \
            watched.client() as web:
        sign_in(web, owner)
        with open_stream(web) as events:
            create_incident(other.base_url, owner, "opened elsewhere")
            assert "opened elsewhere" in next_event(events, "incident-new")


def test_a_server_stops_promptly_with_a_stream_open(sqlite_url: str) -> None:
    """An open stream never finishes by itself: `serve` closes it a few seconds into its
    shutdown instead of waiting for it (or for the SIGKILL after STOP_TIMEOUT_S)."""
    owner = asyncio.run(seed_owner(sqlite_url))
    with running_server(server_env(sqlite_url)) as server, server.client() as web:
        sign_in(web, owner)
        with open_stream(web):  # its answer has begun: the stream is open
            started = time.monotonic()
            # Ended by its own SIGTERM handling (uvicorn exits through the signal), not killed.
            assert server.stop() in (0, -signal.SIGTERM)
            assert time.monotonic() - started < GRACEFUL_SHUTDOWN_S + 5
