"""The insight services guard themselves: called directly, as the console would, not through
the operation layer, each refuses an actor holding none of the incident read permissions and
answers one holding either. Insights only read: they note no audit entry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INCIDENT_MANAGE, SCHEDULE_VIEW
from dutyline.insight import service
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync
from tests.insight.conftest import START

pytestmark = pytest.mark.anyio

QUERY = service.Query(start_time=START, end_time=START + 86_400)
Call = Callable[[Any, Actor], Awaitable[Any]]
CALLS: dict[str, Call] = {
    "dimension": lambda conn, a: service.dimension(conn, a, by="account", query=QUERY),
    "responders": lambda conn, a: service.responders(conn, a, query=QUERY),
    "incidents": lambda conn, a: in_sync(conn, service.incidents_sync,
                                         a, query=QUERY, offset=0, limit=10),
    "alert_topk": lambda conn, a: in_sync(conn, service.alert_topk_sync,
                                          a, query=QUERY, label="check", k=5,
                                                     orderby="total_alert_cnt", asc=False),
    "dimension_csv": lambda conn, a: service.dimension_csv(conn, a, by="team", query=QUERY),
    "responders_csv": lambda conn, a: service.responders_csv(conn, a, query=QUERY),
    "incidents_csv": lambda conn, a: service.incidents_csv(conn, a, query=QUERY),
}


def actor(capi: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=capi.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_an_insight_needs_an_incident_read_permission(
        capi: Api, acme: Person, name: str) -> None:
    call = CALLS[name]
    async with capi.runtime.db.connect() as conn:
        with pytest.raises(errors.AccessDenied):
            await call(conn, actor(capi, acme, SCHEDULE_VIEW))
        for permission in (CHANNEL_VIEW, INCIDENT_MANAGE):
            reader = actor(capi, acme, permission)
            await call(conn, reader)
            assert reader.audit_entries == []
