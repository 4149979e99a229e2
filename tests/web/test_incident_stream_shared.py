"""Open streams of one process share the work of a change: the streams of one reader and
view read the changed rows and the counts once per batch, and each reader still gets only the
incidents they may see."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import event

from dutyline.incident import live
from dutyline.web.pages import incidents_live
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import signed_in
from tests.incident.lifecycle_support import create
from tests.web.test_incident_stream import _messages, _of, _stream_url

pytestmark = pytest.mark.anyio


async def test_streams_of_one_reader_share_a_read_and_each_reader_sees_their_own(
        api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incidents_live, "STREAM_MAX_S", 2.0)
    team = await api.call("/team/upsert", {"team_name": "Core",
                                           "person_ids": [owner.person_id]}, key=owner.key)
    secret = (await api.call("/channel/create", {
        "channel_name": "Secret", "team_id": team.data["team_id"], "is_private": True},
        key=owner.key)).data["channel_id"]
    tabs = [await signed_in(api, owner), await signed_in(api, owner)]
    mia = await signed_in(api, await new_member(api, owner, name="Mia"))
    urls = [await _stream_url(b) for b in (*tabs, mia)]
    streams = [asyncio.create_task(_messages(b, url))
               for b, url in zip((*tabs, mia), urls, strict=True)]
    feeds = live.feeds_for(api.runtime.db)
    # Each stream follows the account's feed before anything changes (bounded by the test's
    # own timeout; the streams get here at once).
    for _ in range(500):
        feed = feeds._feeds.get(owner.account_id)
        if feed is not None and feed.followers == 3 and feed.ready.is_set():
            break
        await asyncio.sleep(0.01)
    assert feed is not None
    for _ in range(20):
        await asyncio.sleep(0)
    start_seq = feed.seq

    counted: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "GROUP BY incident.progress" in statement:
            counted.append(statement)

    engine = api.runtime.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        hidden = await create(api, owner, title="secret down", channel_id=secret)
        public = await create(api, owner, title="public slow")
        first, second, mias = await asyncio.gather(*streams)
        batches = feed.seq - start_seq
    finally:
        event.remove(engine, "before_cursor_execute", count)

    # One counts read per batch for the owner's two tabs, one for Mia's: not one per stream.
    assert batches >= 1
    assert len(counted) == 2 * batches
    assert first == second
    owners = "".join(_of(first, "incident-new"))
    assert hidden in owners and public in owners
    seen = "".join(data for _, data in mias)
    assert public in seen and hidden not in seen and "secret" not in seen
    for b in (*tabs, mia):
        await b.aclose()
