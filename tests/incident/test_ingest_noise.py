"""Inhibit, silence and drop rules at ingest, through the API: an inhibited alert opens no
incident and names its rule and live source (or is discarded and counted), a silence window
holds alerts back, a drop rule stores nothing, disabled rules are skipped and kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import select, update

from dutyline.db.tables.channel import channel
from dutyline.db.tables.channel_noise import noise_rule
from dutyline.db.tables.incident_noise import inhibit_source
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, event, push, wire
from tests.incident.ingest_support import alert, alerts_of, all_rows, events_of, incidents_of

pytestmark = pytest.mark.anyio

Make = Callable[..., Awaitable[Wired]]
GROUP = {"method": "p", "equals": [["labels.host", "labels.alertname"]]}


def cond(key: str, *vals: str, oper: str = "IN") -> dict[str, Any]:
    return {"key": key, "oper": oper, "vals": list(vals)}


def alert_event(name: str, host: str, status: str = "Critical", key: str | None = None,
                **labels: str) -> dict[str, Any]:
    return event(f"{name} on {host}", status, key or f"{name}-{host}",
                 labels={"alertname": name, "host": host, **labels})


async def inhibit_rule(api: Api, w: Wired, **extra: Any) -> str:
    body = {
        "channel_id": w.channel_id, "rule_name": "node down hides services",
        "source_filters": [[cond("labels.alertname", "NodeDown")]],
        "target_filters": [[cond("labels.alertname", "ServiceDown")]],
        "equals": ["labels.host"], **extra,
    }
    reply = await api.call("/channel/inhibit/rule/create", body, key=w.account.key)
    assert reply.status == 200, reply.body
    return str(reply.data["rule_id"])


async def ok(api: Api, w: Wired, body: dict[str, Any]) -> None:
    reply = await push(api, w.key, body)
    assert reply.status == 200, reply.body


async def by_key(api: Api, w: Wired, alert_key: str) -> Any:
    rows = [r for r in await alerts_of(api, w.integration_id) if r.alert_key == alert_key]
    return rows[-1] if rows else None


async def rule_row(api: Api, rule_id: str) -> Any:
    (row,) = await all_rows(api, noise_rule, noise_rule.c.rule_id == rule_id)
    return row


async def test_inhibited_alert_opens_no_incident_and_names_rule_and_source(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group=GROUP)
    rule_id = await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "db-1"))
    source = await by_key(capi, w, "NodeDown-db-1")
    await ok(capi, w, alert_event("ServiceDown", "db-1"))
    target = await by_key(capi, w, "ServiceDown-db-1")
    assert target.inhibited and target.incident_id is None
    assert (target.inhibit_rule_id, target.inhibited_by) == (rule_id, source.alert_id)
    assert len(await incidents_of(capi, w.channel_id)) == 1  # the source's only

    record = await capi.call("/alert/info", {"alert_id": target.alert_id}, key=w.account.key)
    assert record.data["inhibited"] is True and record.data["ever_muted"] is True
    assert record.data["inhibit_rule_id"] == rule_id
    assert record.data["inhibited_by"] == source.alert_id
    assert "incident" not in record.data

    # another host: no source agrees on labels.host
    await ok(capi, w, alert_event("ServiceDown", "db-2"))
    other = await by_key(capi, w, "ServiceDown-db-2")
    assert not other.inhibited and other.incident_id is not None
    # an alert the target filters do not match
    await ok(capi, w, alert_event("DiskFull", "db-1"))
    assert (await by_key(capi, w, "DiskFull-db-1")).incident_id is not None
    # the held alert's own updates keep it held
    await ok(capi, w, alert_event("ServiceDown", "db-1", "Warning"))
    assert (await by_key(capi, w, "ServiceDown-db-1")).incident_id is None


async def test_source_recovery_groups_what_it_inhibited(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group=GROUP)
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "db-1"))
    await ok(capi, w, alert_event("ServiceDown", "db-1"))
    await ok(capi, w, alert_event("ServiceDown", "db-1", key="svc-2"))
    assert len(await incidents_of(capi, w.channel_id)) == 1
    await ok(capi, w, alert_event("NodeDown", "db-1", "Ok"))
    for key in ("ServiceDown-db-1", "svc-2"):
        target = await by_key(capi, w, key)
        assert not target.inhibited and target.inhibited_by == ""
        assert target.incident_id is not None and target.ever_muted
    incidents = await incidents_of(capi, w.channel_id)
    assert len(incidents) == 2  # both targets share host and alertname: one incident
    target = await by_key(capi, w, "svc-2")
    assert [i.alert_cnt for i in incidents if i.incident_id == target.incident_id] == [2]
    assert await all_rows(capi, inhibit_source) == []


async def test_stale_acknowledged_and_recovered_sources_inhibit_nothing(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "a"))
    clock.advance(601)  # not seen for more than 10 minutes
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).incident_id is not None

    await ok(capi, w, alert_event("NodeDown", "b"))
    source = await by_key(capi, w, "NodeDown-b")
    acked = await capi.call("/incident/ack", {"incident_ids": [source.incident_id]},
                            key=w.account.key)
    assert acked.status == 200, acked.body
    await ok(capi, w, alert_event("ServiceDown", "b"))
    assert (await by_key(capi, w, "ServiceDown-b")).incident_id is not None

    await ok(capi, w, alert_event("NodeDown", "c"))
    await ok(capi, w, alert_event("NodeDown", "c", "Ok"))
    await ok(capi, w, alert_event("ServiceDown", "c"))
    assert (await by_key(capi, w, "ServiceDown-c")).incident_id is not None


async def test_stale_source_releases_its_target_at_the_targets_next_event(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "a"))
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).inhibited
    clock.advance(601)
    await ok(capi, w, alert_event("ServiceDown", "a"))
    target = await by_key(capi, w, "ServiceDown-a")
    assert not target.inhibited and target.incident_id is not None


async def test_discard_drops_and_counts_per_rule(capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration(group={"method": "n"})
    rule_id = await inhibit_rule(capi, w, is_directly_discard=True)
    await ok(capi, w, alert_event("NodeDown", "a"))
    await ok(capi, w, alert_event("ServiceDown", "a"))
    await ok(capi, w, alert_event("ServiceDown", "a", key="x2"))
    assert await by_key(capi, w, "ServiceDown-a") is None
    assert len(await events_of(capi, w.integration_id)) == 1  # the source's only
    assert (await rule_row(capi, rule_id)).dropped_cnt == 2
    listed = await capi.call("/channel/inhibit/rule/list", {"channel_id": w.channel_id},
                             key=w.account.key)
    assert listed.data["items"][0]["dropped_cnt"] == 2


async def test_disabled_rule_is_skipped_and_kept(capi: Api, channel_with_integration: Make) -> None:
    w = await channel_with_integration(group={"method": "n"})
    rule_id = await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "a"))
    ids = {"channel_id": w.channel_id, "rule_id": rule_id}
    await capi.call("/channel/inhibit/rule/disable", ids, key=w.account.key)
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).incident_id is not None
    # enabled again: the existing source is indexed again for it
    await capi.call("/channel/inhibit/rule/enable", ids, key=w.account.key)
    await ok(capi, w, alert_event("ServiceDown", "a", key="t2"))
    assert (await by_key(capi, w, "t2")).inhibited


async def test_rule_written_after_its_source_arrived_finds_it(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await ok(capi, w, alert_event("NodeDown", "a"))
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).inhibited


async def test_a_label_change_makes_an_alert_a_source(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("Other", "a", key="k"))
    await ok(capi, w, alert_event("NodeDown", "a", key="k"))  # same key, labels now a source
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).inhibited


async def test_deleted_rule_releases_held_alerts_at_their_next_event(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    rule_id = await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "a"))
    await ok(capi, w, alert_event("ServiceDown", "a"))
    await capi.call("/channel/inhibit/rule/delete", {"channel_id": w.channel_id,
                                                     "rule_id": rule_id}, key=w.account.key)
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).incident_id is not None


async def test_rules_written_by_another_process_are_picked_up(
    capi: Api, channel_with_integration: Make
) -> None:
    """Another process writing a rule only changes rows and the channel's noise_version;
    this process's cached rules follow at its next push."""
    w = await channel_with_integration(group={"method": "n"})
    created = await capi.call("/channel/unsubscribe/rule/create", {
        "channel_id": w.channel_id, "rule_name": "drop test",
        "filters": [[cond("labels.env", "test")]]}, key=w.account.key)
    rule_id = created.data["rule_id"]
    await ok(capi, w, alert_event("X", "a", env="test"))  # dropped, rules now cached
    assert await by_key(capi, w, "X-a") is None
    async with capi.runtime.db.transaction() as conn:
        await conn.execute(update(noise_rule).where(noise_rule.c.rule_id == rule_id)
                           .values(status="disabled"))
        await conn.execute(update(channel).where(channel.c.channel_id == w.channel_id)
                           .values(noise_version=channel.c.noise_version + 1))
    await ok(capi, w, alert_event("X", "a", env="test"))
    assert await by_key(capi, w, "X-a") is not None


async def test_drop_rule_stores_nothing_and_counts(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    created = await capi.call("/channel/unsubscribe/rule/create", {
        "channel_id": w.channel_id, "rule_name": "drop",
        "filters": [[cond("labels.env", "test", "dev*")], [cond("severity", "Info")]]},
        key=w.account.key)
    rule_id = created.data["rule_id"]
    await ok(capi, w, alert_event("X", "a", env="development"))
    await ok(capi, w, alert_event("X", "b", "Info"))
    await ok(capi, w, alert_event("X", "c", env="prod"))
    assert [r.alert_key for r in await alerts_of(capi, w.integration_id)] == ["X-c"]
    assert len(await events_of(capi, w.integration_id)) == 1
    assert (await rule_row(capi, rule_id)).dropped_cnt == 2


async def test_silence_window_holds_alerts_then_lets_them_through(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    now = int(clock.now())
    created = await capi.call("/channel/silence/rule/create", {
        "channel_id": w.channel_id, "rule_name": "maintenance",
        "time_filter": {"start_time": now, "end_time": now + 3600},
        "filters": [[cond("labels.env", "staging")]]}, key=w.account.key)
    rule_id = created.data["rule_id"]
    await ok(capi, w, alert_event("X", "a", env="staging"))
    held = await by_key(capi, w, "X-a")
    assert held.silence_rule_id == rule_id and held.incident_id is None and held.ever_muted
    assert not held.inhibited
    await ok(capi, w, alert_event("X", "b", env="prod"))
    assert (await by_key(capi, w, "X-b")).incident_id is not None
    clock.advance(3600)
    await ok(capi, w, alert_event("X", "a", env="staging"))
    released = await by_key(capi, w, "X-a")
    assert released.incident_id is not None and released.silence_rule_id == ""
    info = await capi.call("/channel/silence/rule/info",
                           {"channel_id": w.channel_id, "rule_id": rule_id},
                           key=w.account.key)
    assert info.data["is_effective"] is False


async def test_recurring_silence_and_discard(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    clock.set(1_763_719_200)  # Friday 2025-11-21 10:00 UTC
    created = await capi.call("/channel/silence/rule/create", {
        "channel_id": w.channel_id, "rule_name": "weekday nights",
        "time_filters": [{"start": "22:00", "end": "06:00", "repeat": [1, 2, 3, 4, 5]}],
        "filters": [[cond("labels.team", "batch")]], "is_directly_discard": True},
        key=w.account.key)
    rule_id = created.data["rule_id"]
    await ok(capi, w, alert_event("X", "day", team="batch"))
    assert (await by_key(capi, w, "X-day")).incident_id is not None
    clock.set(1_763_769_600)  # Saturday 00:00 UTC: Friday night's window
    await ok(capi, w, alert_event("X", "night", team="batch"))
    assert await by_key(capi, w, "X-night") is None
    assert (await rule_row(capi, rule_id)).dropped_cnt == 1


async def test_quick_silence_from_an_incident(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await ok(capi, w, alert_event("X", "a", env="prod"))
    incident_id = (await by_key(capi, w, "X-a")).incident_id
    reply = await capi.call("/incident/silence/quick", {"incident_id": incident_id,
                                                       "minutes": 30}, key=w.account.key)
    assert reply.status == 200, reply.body
    rule_id = reply.data["rule_id"]
    info = await capi.call("/channel/silence/rule/info",
                           {"channel_id": w.channel_id, "rule_id": rule_id}, key=w.account.key)
    assert info.data["from_incident_id"] == incident_id
    assert info.data["time_filter"]["end_time"] - info.data["time_filter"]["start_time"] == 1800
    await ok(capi, w, alert_event("X", "a", key="again", env="prod"))
    assert (await by_key(capi, w, "again")).silence_rule_id == rule_id
    await ok(capi, w, alert_event("X", "a", key="unlike", env="dev"))
    assert (await by_key(capi, w, "unlike")).silence_rule_id == ""

    stranger = await new_account(capi, "Globex")
    theirs = await capi.call("/incident/silence/quick", {"incident_id": incident_id},
                             key=stranger.key)
    assert theirs.status == 400 and theirs.code == "ResourceNotFound"


async def test_a_silence_rule_names_an_incident_of_its_account(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    await ok(capi, w, alert_event("X", "a"))
    incident_id = (await by_key(capi, w, "X-a")).incident_id
    stranger = await new_account(capi, "Globex")
    body = {"channel_id": w.channel_id, "rule_name": "s", "filters": [[cond("title", "X")]],
            "time_filter": {"start_time": 1, "end_time": 4_000_000_000}}
    made = await capi.call("/channel/create", {"channel_name": "Theirs"}, key=stranger.key)
    theirs = await capi.call("/channel/silence/rule/create", {
        **body, "channel_id": made.data["channel_id"], "from_incident_id": incident_id},
        key=stranger.key)
    assert (theirs.status, theirs.code) == (400, "ResourceNotFound"), theirs.body
    assert incident_id in theirs.message
    assert await all_rows(capi, noise_rule) == []
    # The incident the record names, and the 24 zeros a record shows for none, save.
    for named in (incident_id.upper(), "0" * 24):
        created = await capi.call("/channel/silence/rule/create",
                                  {**body, "from_incident_id": named}, key=w.account.key)
        assert created.status == 200, created.body
        info = await capi.call("/channel/silence/rule/info", {
            "channel_id": w.channel_id, "rule_id": created.data["rule_id"]}, key=w.account.key)
        assert info.data["from_incident_id"] == named.lower()


async def test_rules_of_one_channel_leave_another_alone(
    capi: Api, acme: Person
) -> None:
    a = await wire(capi, acme, name="A", group={"method": "n"})
    b = await wire(capi, acme, name="B", group={"method": "n"})
    await inhibit_rule(capi, a)
    await ok(capi, b, alert_event("NodeDown", "h"))
    await ok(capi, a, alert_event("ServiceDown", "h"))
    assert (await by_key(capi, a, "ServiceDown-h")).incident_id is not None
    rows = await all_rows(capi, alert, alert.c.inhibited.is_(True))
    assert rows == []
    async with capi.runtime.db.connect() as conn:
        assert (await conn.execute(select(inhibit_source))).all() == []


async def test_several_rules_first_by_priority_with_a_live_source_wins(
    capi: Api, channel_with_integration: Make
) -> None:
    w = await channel_with_integration(group={"method": "n"})
    by_rack = await inhibit_rule(capi, w, priority=1, rule_name="rack", equals=["labels.rack"],
                                 source_filters=[[cond("labels.alertname", "RackDown")]])
    by_host = await inhibit_rule(capi, w, priority=2, rule_name="host")
    await ok(capi, w, alert_event("NodeDown", "a"))
    await ok(capi, w, alert_event("ServiceDown", "a", rack="r1"))
    first = await by_key(capi, w, "ServiceDown-a")
    assert first.inhibit_rule_id == by_host  # the rack rule has no source
    await ok(capi, w, alert_event("RackDown", "x", rack="r1"))
    await ok(capi, w, alert_event("ServiceDown", "a", key="second", rack="r1"))
    second = await by_key(capi, w, "second")
    assert second.inhibit_rule_id == by_rack
    assert second.inhibited_by == (await by_key(capi, w, "RackDown-x")).alert_id


async def test_an_auto_resolved_source_leaves_the_index(
    capi: Api, clock: FakeClock, channel_with_integration: Make
) -> None:
    import dutyline.incident.ingest.tasks  # noqa: F401  (registers the job kind)
    from tests.incident.test_ingest_grouping import _run_due_jobs

    w = await channel_with_integration(group={"method": "n"}, auto_resolve_timeout=300)
    await inhibit_rule(capi, w)
    await ok(capi, w, alert_event("NodeDown", "a"))
    assert len(await all_rows(capi, inhibit_source)) == 1
    clock.advance(300)
    # The auto-resolve job, and the incident-event subscribers it fans out to: all done.
    outcomes = await _run_due_jobs(capi)
    assert outcomes and set(outcomes) == {"done"}
    assert await all_rows(capi, inhibit_source) == []
    await ok(capi, w, alert_event("ServiceDown", "a"))
    assert (await by_key(capi, w, "ServiceDown-a")).incident_id is not None
