"""Who closed an incident, and how: an i_rslv entry's `from` is the caller's way (the actor's
credential) in the reference's vocabulary, not the console's whoever calls."""

from __future__ import annotations

import pytest

from dutyline.api.actor import Actor, Credential
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.incident.service import lifecycle
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.incident.lifecycle_support import create, seed_channel

pytestmark = pytest.mark.anyio


async def _resolve_from(api: Api, owner: Person, incident_id: str) -> tuple[str, int]:
    """(`from`, creator) of the incident's i_rslv, as /incident/feed returns it (checked
    against the reference's schema, whose enum `from` must be one of)."""
    reply = await api.raw("POST", "/incident/feed", params={"app_key": owner.key},
                          json={"incident_id": incident_id, "asc": True})
    items = check("/incident/feed", reply)["data"]["items"]
    [closed] = [i for i in items if i["type"] == "i_rslv"]
    return closed["detail"]["from"], closed["creator_id"]


async def test_the_feed_says_how_the_caller_closed_it(api: Api, owner: Person) -> None:
    channel_id = await seed_channel(api, owner)
    by_api = await create(api, owner, channel_id=channel_id)
    reply = await api.call("/incident/resolve", {"incident_ids": [by_api]}, key=owner.key)
    assert reply.status == 200, reply.body
    # The reference names no API source: the API runs the console's operations.
    assert await _resolve_from(api, owner, by_api) == ("console", owner.person_id)

    expected: dict[Credential, str] = {"session": "console", "signed_link": "wcard",
                                       "system": "escalation"}
    for credential, source in expected.items():
        incident_id = await create(api, owner, channel_id=channel_id)
        person_id = 0 if credential == "system" else owner.person_id
        actor = Actor(account_id=owner.account_id, person_id=person_id,
                      clock=api.runtime.clock, is_admin=True,
                      permissions=frozenset({INCIDENT_MANAGE}), credential=credential)
        async with api.runtime.db.transaction(write=True) as conn:
            await lifecycle.resolve(conn, actor, incident_ids=[incident_id])
            await api.runtime.audit.flush(conn, actor)
        assert await _resolve_from(api, owner, incident_id) == (source, person_id), credential
