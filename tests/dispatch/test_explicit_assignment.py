"""An explicit assignment wins over the channel's escalation rule: an incident created with
people named keeps them (the rule applies only when no one is named), and people assigned
by hand while a rule escalates stay assigned (the escalation stops)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.dispatch.support import create_rule, layer, make_channel, rule_body, run_jobs
from tests.dispatch.test_paging import deliveries, feed
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio


async def _channel_with_rule(api: Api, who: Person) -> tuple[int, str]:
    channel_id = await make_channel(api, who)
    rule_id = await create_rule(api, who, rule_body(channel_id, [
        layer(emails=["first@example.com"], escalate_window=10),
        layer(emails=["second@example.com"])]))
    return channel_id, rule_id


async def _create(api: Api, who: Person, channel_id: int, **extra: Any) -> str:
    reply = await api.call("/incident/create", {
        "title": "payments down", "incident_severity": "Critical", "channel_id": channel_id,
        **extra}, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["incident_id"])


async def _assigned_to(api: Api, who: Person, incident_id: str) -> dict[str, Any]:
    info = await api.call("/incident/info", {"incident_id": incident_id}, key=who.key)
    assigned: dict[str, Any] = info.data["assigned_to"]
    return assigned


async def test_people_named_at_creation_stay_assigned(papi: Api, owner: Person,
                                                     clock: FakeClock) -> None:
    channel_id, _ = await _channel_with_rule(papi, owner)
    ann = await new_member(papi, owner, name="Ann", builtin="admin")
    incident_id = await _create(papi, owner, channel_id,
                                assigned_to={"person_ids": [ann.person_id]})
    await run_jobs(papi)
    clock.advance(60 * 30)  # past every escalation window
    await run_jobs(papi)
    assigned = await _assigned_to(papi, owner, incident_id)
    assert assigned["person_ids"] == [ann.person_id] and assigned["type"] == "assign"
    assert "escalate_rule_id" not in assigned
    assert await deliveries(papi, incident_id) == []
    assigns = [e["detail"] for e in await feed(papi, owner, incident_id)
               if e["type"] == "i_assign"]
    assert [a["to"] for a in assigns] == [[ann.person_id]]


@pytest.mark.parametrize("given", [None, {}, {"notify": {}}])
async def test_no_one_named_the_rule_assigns(papi: Api, owner: Person,
                                             given: dict[str, Any] | None) -> None:
    # `{"notify": {}}` (what some clients send) names no one, like no assignment at all.
    channel_id, rule_id = await _channel_with_rule(papi, owner)
    extra = {} if given is None else {"assigned_to": given}
    incident_id = await _create(papi, owner, channel_id, **extra)
    await run_jobs(papi)
    assigned = await _assigned_to(papi, owner, incident_id)
    assert assigned["escalate_rule_id"] == rule_id and assigned["layer_idx"] == 0
    assert [d.address for d in await deliveries(papi, incident_id)] == ["first@example.com"]


async def test_a_rule_named_at_creation_runs(papi: Api, owner: Person) -> None:
    channel_id, _ = await _channel_with_rule(papi, owner)
    other = await create_rule(papi, owner, rule_body(
        channel_id, [layer(emails=["named@example.com"])], rule_name="Named", priority=5))
    incident_id = await _create(papi, owner, channel_id,
                                assigned_to={"escalate_rule_id": other})
    await run_jobs(papi)
    assert (await _assigned_to(papi, owner, incident_id))["escalate_rule_id"] == other
    assert [d.address for d in await deliveries(papi, incident_id)] == ["named@example.com"]


async def test_people_assigned_by_hand_stop_the_escalation(papi: Api, owner: Person,
                                                          clock: FakeClock) -> None:
    channel_id, _ = await _channel_with_rule(papi, owner)
    incident_id = await _create(papi, owner, channel_id)
    await run_jobs(papi)
    ann = await new_member(papi, owner, name="Ann", builtin="admin")
    reply = await papi.call("/incident/assign", {
        "incident_id": incident_id, "assigned_to": {"person_ids": [ann.person_id]}},
        key=owner.key)
    assert reply.status == 200, reply.body
    await run_jobs(papi)
    clock.advance(60 * 30)  # past the first layer's escalation window
    await run_jobs(papi)
    assigned = await _assigned_to(papi, owner, incident_id)
    assert assigned["person_ids"] == [ann.person_id] and assigned["type"] == "reassign"
    assert [d.address for d in await deliveries(papi, incident_id)] == ["first@example.com"]
