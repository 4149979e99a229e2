"""Many new alert keys in a row: every insert must find the partial unique index, also after
PostgreSQL switches the prepared statement to a generic plan (from the sixth execution on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.fixtures.api import Api
from tests.incident.conftest import Wired, event, push

pytestmark = pytest.mark.anyio


async def test_thirty_new_keys_each_open_their_alert(
    capi: Api, channel_with_integration: Callable[..., Awaitable[Wired]]
) -> None:
    wired = await channel_with_integration(group={"method": "p", "equals": [["labels.svc"]],
                                                  "time_window": 60})
    for i in range(30):
        reply = await push(capi, wired.key, event(
            title="$svc latency high", status="Warning", key=f"seed-{i}",
            labels={"host": f"h{i}", "svc": f"svc-{i % 5}"},
        ))
        assert reply.status == 200, reply.body
    alerts = await capi.call("/alert/list", {
        "start_time": 1_699_990_000, "end_time": 1_700_010_000, "limit": 100,
    }, key=wired.account.key)
    assert alerts.data["total"] == 30
