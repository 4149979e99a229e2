"""/alert/list-by-ids, /alert/feed, /alert-event/list and /alert/merge: status codes,
permissions, other accounts' and hidden ids, state changes, what is stored, and the
reference's response schemas."""

from __future__ import annotations

import pytest

from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import event, push, wire
from tests.incident.ingest_support import incident_row
from tests.incident.lifecycle_support import assert_invalid, events_of, feed_items, info
from tests.incident.neighbours_support import audited, incident_of_push, private_channel

pytestmark = pytest.mark.anyio
UNKNOWN = "0123456789abcdef01234567"


# --- /alert/list-by-ids -----------------------------------------------------------------

async def test_list_by_ids_answers_every_id_in_order_or_fails(capi: Api, acme: Person) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    _, first = await incident_of_push(capi, w, key="a")
    _, second = await incident_of_push(capi, w, key="b")
    reply = await capi.raw("POST", "/alert/list-by-ids", params={"app_key": acme.key},
                           json={"alert_ids": [second, first.upper(), second]})
    data = check("/alert/list-by-ids", reply)["data"]
    assert [i["alert_id"] for i in data["items"]] == [second, first]
    assert (data["total"], data["has_next_page"]) == (2, False)
    assert data["items"][0]["incident"]["incident_id"]

    missing = await capi.call("/alert/list-by-ids", {"alert_ids": [first, UNKNOWN]},
                              key=acme.key)
    assert_invalid(missing, "ResourceNotFound", "alert_ids", UNKNOWN)
    chinese = await capi.call("/alert/list-by-ids", {"alert_ids": [UNKNOWN]}, key=acme.key,
                              headers={"Accept-Language": "zh-CN"})
    assert "以下告警不存在" in chinese.message and UNKNOWN in chinese.message
    assert (await capi.call("/alert/list-by-ids", {"alert_ids": []}, key=acme.key)).status == 400
    other = await new_account(capi, "Other")
    assert_invalid(await capi.call("/alert/list-by-ids", {"alert_ids": [first]}, key=other.key),
                   "ResourceNotFound", first)
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    assert (await capi.call("/alert/list-by-ids", {"alert_ids": [first]},
                            key=nobody.key)).status == 403


async def test_list_by_ids_hides_alerts_of_private_channels(capi: Api, acme: Person) -> None:
    p = await private_channel(capi, acme)
    _, hidden = await incident_of_push(capi, p.wired)
    assert (await capi.call("/alert/list-by-ids", {"alert_ids": [hidden]},
                            key=p.insider.key)).status == 200
    assert_invalid(await capi.call("/alert/list-by-ids", {"alert_ids": [hidden]},
                                   key=p.outsider.key), "ResourceNotFound", hidden)


# --- /alert/feed ------------------------------------------------------------------------

async def test_alert_feed_tells_trigger_and_close_in_milliseconds(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    w = await wire(capi, acme)
    _, alert_id = await incident_of_push(capi, w, key="a", status="Warning")
    started = int(clock.now())
    reply = await capi.raw("POST", "/alert/feed", params={"app_key": acme.key},
                           json={"alert_id": alert_id})
    (new,) = check("/alert/feed", reply)["data"]["items"]
    assert new == {"ref_id": alert_id, "type": "a_new",
                   "detail": {"severity": "Warning", "status": "Warning"},
                   "account_id": acme.account_id, "creator_id": 0,
                   "created_at": started * 1000, "updated_at": started * 1000}

    clock.advance(90)
    await push(capi, w.key, event(status="Critical", key="a"))
    await push(capi, w.key, event(status="Ok", key="a"))
    newest_first = await capi.raw("POST", "/alert/feed", params={"app_key": acme.key},
                                  json={"alert_id": alert_id})
    items = check("/alert/feed", newest_first)["data"]["items"]
    assert [(i["type"], i["created_at"]) for i in items] == [
        ("a_close", (started + 90) * 1000), ("a_new", started * 1000)]
    assert items[0]["detail"] == {}
    oldest_first = await capi.call("/alert/feed", {"alert_id": alert_id, "asc": True,
                                                   "limit": 1}, key=acme.key)
    assert [i["type"] for i in oldest_first.data["items"]] == ["a_new"]
    assert oldest_first.data["has_next_page"] is True
    page2 = await capi.call("/alert/feed", {"alert_id": alert_id, "asc": True, "limit": 1,
                                            "p": 2}, key=acme.key)
    assert [i["type"] for i in page2.data["items"]] == ["a_close"]
    assert page2.data["has_next_page"] is False
    only = await capi.call("/alert/feed", {"alert_id": alert_id, "types": ["a_close"]},
                           key=acme.key)
    assert [i["type"] for i in only.data["items"]] == ["a_close"]
    assert (await capi.call("/alert/feed", {"alert_id": alert_id, "types": ["nope"]},
                            key=acme.key)).status == 400


async def test_alert_feed_of_unknown_or_hidden_alerts_is_not_found(
    capi: Api, acme: Person
) -> None:
    p = await private_channel(capi, acme)
    _, hidden = await incident_of_push(capi, p.wired)
    assert_invalid(await capi.call("/alert/feed", {"alert_id": hidden}, key=p.outsider.key),
                   "ResourceNotFound", hidden)
    other = await new_account(capi, "Other")
    assert_invalid(await capi.call("/alert/feed", {"alert_id": hidden}, key=other.key),
                   "ResourceNotFound", hidden)
    assert (await capi.call("/alert/feed", {"alert_id": hidden}, key=p.insider.key)).status == 200


# --- /alert-event/list ------------------------------------------------------------------

async def test_alert_events_across_alerts_filtered_and_paged(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    second_channel = await wire(capi, acme, name="Second", group={"method": "n"})
    await incident_of_push(capi, w, key="a", status="Warning")
    clock.advance(10)
    await push(capi, w.key, event(status="Critical", key="a"))
    clock.advance(10)
    await incident_of_push(capi, second_channel, key="b", status="Info")
    clock.advance(10)
    other = await new_account(capi, "Other")
    theirs = await wire(capi, other, name="Theirs")
    await incident_of_push(capi, theirs, key="z")

    reply = await capi.raw("POST", "/alert-event/list", params={"app_key": acme.key},
                           json={})
    data = check("/alert-event/list", reply)["data"]
    assert data["total"] == 3 and data["has_next_page"] is False
    assert [(i["alert_key"], i["event_severity"]) for i in data["items"]] == [
        ("b", "Info"), ("a", "Critical"), ("a", "Warning")]
    assert {i["integration_type"] for i in data["items"]} == {"standard"}
    assert all(i["account_id"] == acme.account_id for i in data["items"])

    async def keys(**body: object) -> list[tuple[str, str]]:
        r = await capi.call("/alert-event/list", body, key=acme.key)
        assert r.status == 200, r.body
        return [(i["alert_key"], i["event_severity"]) for i in r.data["items"]]

    assert await keys(asc=True) == [("a", "Warning"), ("a", "Critical"), ("b", "Info")]
    assert await keys(severities="Critical,Info") == [("b", "Info"), ("a", "Critical")]
    assert await keys(channel_ids=[second_channel.channel_id]) == [("b", "Info")]
    assert await keys(integration_ids=[w.integration_id]) == [("a", "Critical"),
                                                              ("a", "Warning")]
    assert await keys(integration_types=["standard"],
                      integration_ids=[second_channel.integration_id]) == [("b", "Info")]
    assert await keys(integration_types=["prometheus"]) == []
    t = int(clock.now())
    assert await keys(start_time=t - 25, end_time=t - 15) == [("a", "Critical")]

    first = await capi.call("/alert-event/list", {"limit": 2}, key=acme.key)
    assert first.data["has_next_page"] is True and len(first.data["items"]) == 2
    rest = await capi.call("/alert-event/list", {
        "limit": 2, "search_after_ctx": first.data["search_after_ctx"]}, key=acme.key)
    assert [i["event_severity"] for i in rest.data["items"]] == ["Warning"]
    assert rest.data["has_next_page"] is False and rest.data["search_after_ctx"] == ""

    for bad in ({"severities": "Fatal"}, {"start_time": 10, "end_time": 5},
                {"start_time": 0, "end_time": 40 * 86_400}, {"search_after_ctx": "zz"},
                {"orderby": "title"}, {"limit": 101}):
        r = await capi.call("/alert-event/list", bad, key=acme.key)
        assert (r.status, r.code) == (400, "InvalidParameter"), (bad, r.body)


async def test_alert_events_of_private_channels_are_left_out(capi: Api, acme: Person) -> None:
    p = await private_channel(capi, acme)
    await incident_of_push(capi, p.wired, key="secret")
    public = await wire(capi, acme, name="Public")
    await incident_of_push(capi, public, key="open")

    async def keys(who: Person) -> list[str]:
        r = await capi.call("/alert-event/list", {}, key=who.key)
        assert r.status == 200, r.body
        return sorted(i["alert_key"] for i in r.data["items"])

    assert await keys(acme) == ["open", "secret"]
    assert await keys(p.insider) == ["open", "secret"]
    assert await keys(p.outsider) == ["open"]
    outsider_total = await capi.call("/alert-event/list", {}, key=p.outsider.key)
    assert outsider_total.data["total"] == 1
    nobody = await new_member(capi, acme, name="Nobody", builtin=None)
    assert (await capi.call("/alert-event/list", {}, key=nobody.key)).status == 403


# --- /alert/merge -----------------------------------------------------------------------

async def test_merge_moves_alerts_recounts_and_records(
    capi: Api, acme: Person, clock: FakeClock
) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    target, _ = await incident_of_push(capi, w, "db slow", key="t", status="Info")
    clock.advance(30)
    emptied, critical = await incident_of_push(capi, w, "db down", key="c")
    kept, warn = await incident_of_push(capi, w, "db lag", key="w", status="Warning")
    _, also = await incident_of_push(capi, w, "db lag 2", key="w2", status="Warning")
    # Put the second warning in `kept` too, so `kept` keeps one alert after the merge.
    assert (await capi.call("/alert/merge", {"alert_ids": [also], "incident_id": kept},
                            key=acme.key)).status == 200
    ann = await new_member(capi, acme, name="Ann")

    reply = await capi.raw("POST", "/alert/merge", params={"app_key": acme.key}, json={
        "alert_ids": [critical, warn], "incident_id": target, "comment": "same outage",
        "title": "database outage", "owner_id": ann.person_id})
    assert check("/alert/merge", reply)["data"] == {}

    t = await incident_row(capi, target)
    assert (t.alert_cnt, t.active_alert_cnt, t.alert_event_cnt) == (3, 3, 3)
    assert (t.incident_severity, t.incident_status) == ("Critical", "Critical")
    assert (t.title, t.owner_id, t.progress) == ("database outage", ann.person_id, "Triggered")
    assert t.last_time == int(clock.now())
    e = await incident_row(capi, emptied)
    assert (e.alert_cnt, e.active_alert_cnt, e.progress, e.incident_status) == (
        0, 0, "Closed", "Ok")
    assert (e.merged_into, e.closer_id) == (target, acme.person_id)
    k = await incident_row(capi, kept)
    assert (k.alert_cnt, k.progress, k.incident_severity) == (1, "Triggered", "Warning")
    listed = await capi.call("/incident/alert/list", {"incident_id": target}, key=acme.key)
    assert listed.data["total"] == 3

    (entry,) = [i for i in await feed_items(capi, acme, target) if i["type"] == "a_merge"]
    assert entry["detail"]["alert_ids"] == [critical, warn]
    assert entry["detail"]["comment"] == "same outage"
    assert {s["incident_id"] for s in entry["detail"]["source_incidents"]} == {emptied, kept}
    for source, moved in ((emptied, [critical]), (kept, [warn])):
        (left,) = [i for i in await feed_items(capi, acme, source) if i["type"] == "a_merge"
                   and i["detail"]["target_incident"]["incident_id"] == target]
        assert left["detail"]["alert_ids"] == moved
    kinds = [(x["kind"], x["payload"].get("role"), x["payload"].get("closed"))
             for x in await events_of(capi, emptied)]
    assert ("alerts_merged", "source", True) in kinds
    (ev,) = [x for x in await events_of(capi, target) if x["kind"] == "alerts_merged"]
    assert ev["payload"]["alert_ids"] == [critical, warn]
    assert sorted(ev["payload"]["source_incident_ids"]) == sorted([emptied, kept])
    (audit,) = [a for a in await audited(capi, "alert.merge")
                if target in a["targets"]]
    assert set(audit["targets"]) == {target, emptied, kept, critical, warn}

    # Each moved alert's own feed tells the merge's comment (`detail.comment`, which clients
    # read); an alert merged without a comment has no such entry.
    for moved in (critical, warn):
        reply = await capi.raw("POST", "/alert/feed", params={"app_key": acme.key},
                               json={"alert_id": moved, "asc": True})
        items = check("/alert/feed", reply)["data"]["items"]
        assert [i["type"] for i in items] == ["a_new", "a_comm"]
        assert items[1]["detail"] == {"comment": "same outage"}
        assert items[1]["creator_id"] == acme.person_id
        assert items[1]["created_at"] == int(clock.now()) * 1000
    quiet = await capi.call("/alert/feed", {"alert_id": also}, key=acme.key)
    assert [i["type"] for i in quiet.data["items"]] == ["a_new"]


async def test_merge_is_all_or_nothing(capi: Api, acme: Person) -> None:
    w = await wire(capi, acme, group={"method": "n"})
    target, _ = await incident_of_push(capi, w, key="t")
    source, moving = await incident_of_push(capi, w, key="m")
    before = await info(capi, acme, target)

    missing = await capi.call("/alert/merge", {"alert_ids": [moving, UNKNOWN],
                                               "incident_id": target}, key=acme.key)
    assert_invalid(missing, "ResourceNotFound", "alert_ids", UNKNOWN)
    no_target = await capi.call("/alert/merge", {"alert_ids": [moving],
                                                 "incident_id": UNKNOWN}, key=acme.key)
    assert_invalid(no_target, "ResourceNotFound", UNKNOWN)
    stranger = await new_member(capi, await new_account(capi, "Other"), name="S")
    bad_owner = await capi.call("/alert/merge", {"alert_ids": [moving], "incident_id": target,
                                                 "owner_id": stranger.person_id}, key=acme.key)
    assert_invalid(bad_owner, "InvalidParameter", "owner_id")
    for bad in ({"alert_ids": [], "incident_id": target},
                {"alert_ids": [moving], "incident_id": "x"}):
        assert (await capi.call("/alert/merge", bad, key=acme.key)).status == 400
    assert (await incident_row(capi, source)).alert_cnt == 1
    assert await info(capi, acme, target) == before

    await capi.call("/incident/resolve", {"incident_ids": [target]}, key=acme.key)
    closed = await capi.call("/alert/merge", {"alert_ids": [moving], "incident_id": target},
                             key=acme.key)
    assert_invalid(closed, "InvalidParameter", "incident_id", target)
    assert (await incident_row(capi, source)).alert_cnt == 1


async def test_merge_permissions_and_scope(capi: Api, acme: Person) -> None:
    p = await private_channel(capi, acme)
    hidden_incident, hidden_alert = await incident_of_push(capi, p.wired, key="h")
    public = await wire(capi, acme, name="Public", group={"method": "n"})
    target, _ = await incident_of_push(capi, public, key="t")
    _, visible_alert = await incident_of_push(capi, public, key="v")

    viewer = await new_member(capi, acme, name="Viewer", builtin="member")
    denied = await capi.call("/alert/merge", {"alert_ids": [visible_alert],
                                              "incident_id": target}, key=viewer.key)
    assert (denied.status, denied.code) == (403, "AccessDenied")
    hidden = await capi.call("/alert/merge", {"alert_ids": [hidden_alert],
                                              "incident_id": target}, key=p.outsider.key)
    assert_invalid(hidden, "ResourceNotFound", hidden_alert)
    into_hidden = await capi.call("/alert/merge", {"alert_ids": [visible_alert],
                                                   "incident_id": hidden_incident},
                                  key=p.outsider.key)
    assert_invalid(into_hidden, "ResourceNotFound", hidden_incident)
    other = await new_account(capi, "Other")
    theirs = await capi.call("/alert/merge", {"alert_ids": [visible_alert],
                                              "incident_id": target}, key=other.key)
    assert_invalid(theirs, "ResourceNotFound", target)
    assert (await incident_row(capi, hidden_incident)).alert_cnt == 1
    # The insider may: the private alert joins the public incident.
    assert (await capi.call("/alert/merge", {"alert_ids": [hidden_alert],
                                             "incident_id": target},
                            key=p.insider.key)).status == 200
    assert (await incident_row(capi, target)).alert_cnt == 2


async def test_alert_event_total_is_capped_like_the_reference_search(
    capi: Api, acme: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dutyline.incident.alert import repository as alert_repo

    w = await wire(capi, acme, group={"method": "n"})
    for key in ("a", "b", "c"):
        await incident_of_push(capi, w, key=key)
    monkeypatch.setattr(alert_repo, "EVENT_TOTAL_CAP", 2)
    first = await capi.call("/alert-event/list", {"limit": 1}, key=acme.key)
    assert (first.data["total"], first.data["has_next_page"]) == (2, True)
    second = await capi.call("/alert-event/list", {"limit": 1, "p": 2}, key=acme.key)
    assert (second.data["total"], second.data["has_next_page"]) == (2, False)
    assert len(second.data["items"]) == 1
