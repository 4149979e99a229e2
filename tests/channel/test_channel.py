"""/channel/* through the HTTP API, and the settings alert ingestion reads."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.api.actor import Actor
from dutyline.channel.service import load_settings
from dutyline.config import Settings
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio


async def _create(api: Api, who: Person, name: str = "Payments", **extra: Any) -> int:
    reply = await api.call("/channel/create", {"channel_name": name, **extra}, key=who.key)
    assert reply.status == 200, reply.body
    channel_id: int = reply.data["channel_id"]
    return channel_id


async def _team(api: Api, who: Person, name: str, person_ids: list[int] | None = None) -> int:
    reply = await api.call("/team/upsert", {"team_name": name, "person_ids": person_ids or []},
                           key=who.key)
    assert reply.status == 200, reply.body
    team_id: int = reply.data["team_id"]
    return team_id


async def _info(api: Api, who: Person, channel_id: int) -> dict[str, Any]:
    reply = await api.call("/channel/info", {"channel_id": channel_id}, key=who.key)
    assert reply.status == 200, reply.body
    data: dict[str, Any] = reply.data
    return data


async def _post(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    return await api.raw("POST", path, params={"app_key": key}, json=body)


async def test_pattern_grouping_without_equals_is_accepted(api: Api, owner: Person) -> None:
    """The reference's own example: `group {method: "p"}` and no `equals`."""
    created = check("/channel/create", await _post(api, "/channel/create", {
        "channel_name": "All together", "group": {"method": "p", "time_window": 5}},
        owner.key))
    info = await _info(api, owner, created["data"]["channel_id"])
    assert info["group"]["method"] == "p" and info["group"].get("equals", []) == []


async def test_create_and_info_match_the_reference(api: Api, owner: Person) -> None:
    team_id = await _team(api, owner, "SRE")
    helper = await _team(api, owner, "DBA")
    body = {
        "channel_name": " Payments ", "team_id": team_id, "managing_team_ids": [helper],
        "description": "Card flows",
        "group": {"method": "p", "equals": [[" labels.host ", "title"], ["labels.svc"]],
                  "time_window": 30, "window_type": "sliding", "all_equals_required": True},
        "flapping": {"is_disabled": False, "max_changes": 5, "in_mins": 10, "mute_mins": 30},
        "auto_resolve_timeout": 3600, "auto_resolve_mode": "update", "is_private": True,
        "disable_auto_close": True, "disable_outlier_detection": True,
        "escalate_rule": {"template_id": "0" * 24, "target": {}},  # not ours: ignored
    }
    created = check("/channel/create", await _post(api, "/channel/create", body, owner.key))
    channel_id = created["data"]["channel_id"]
    assert created["data"] == {"channel_id": channel_id, "channel_name": "Payments"}

    info = check("/channel/info", await _post(api, "/channel/info",
                                              {"channel_id": channel_id}, owner.key))["data"]
    assert info["channel_id"] == channel_id
    assert info["account_id"] == owner.account_id
    assert info["team_id"] == team_id
    assert info["managing_team_ids"] == [helper]
    assert info["creator_id"] == owner.person_id
    assert info["channel_name"] == "Payments"
    assert info["description"] == "Card flows"
    assert info["status"] == "enabled"
    assert info["deleted_at"] == 0
    assert info["created_at"] == info["updated_at"] > 1_600_000_000
    assert (info["auto_resolve_timeout"], info["auto_resolve_mode"]) == (3600, "update")
    assert (info["is_private"], info["disable_auto_close"],
            info["disable_outlier_detection"], info["is_external_report_enabled"]) == (
        True, True, True, False)
    assert info["group"] == {"method": "p", "equals": [["labels.host", "title"], ["labels.svc"]],
                             "time_window": 30, "window_type": "sliding",
                             "all_equals_required": True}
    assert info["flapping"] == {"is_disabled": False, "max_changes": 5, "in_mins": 10,
                                "mute_mins": 30}
    assert info["is_starred"] is False

    listed = check("/channel/list", await _post(api, "/channel/list", {}, owner.key))
    assert listed["data"]["total"] == 1
    infos = check("/channel/infos", await _post(api, "/channel/infos",
                                                {"channel_ids": [channel_id]}, owner.key))
    # team_id and creator_id too: clients of the live service read them.
    assert infos["data"]["items"] == [{"channel_id": channel_id, "channel_name": "Payments",
                                       "status": "enabled", "team_id": team_id,
                                       "creator_id": owner.person_id}]
    updated = check("/channel/update", await _post(api, "/channel/update",
                                                   {"channel_id": channel_id}, owner.key))
    assert updated["data"] == {"external_report_token": ""}  # set only when reports turn on
    for path in ("/channel/disable", "/channel/enable", "/channel/delete"):
        assert check(path, await _post(api, path, {"channel_id": channel_id},
                                       owner.key))["data"] == {}


async def test_defaults(api: Api, owner: Person) -> None:
    info = await _info(api, owner, await _create(api, owner))
    assert info["team_id"] == 0  # no owning team
    assert info["managing_team_ids"] == []
    assert info["description"] == ""
    assert info["group"] == {"method": "n"}
    assert info["flapping"] == {"is_disabled": True, "max_changes": 4, "in_mins": 60,
                                "mute_mins": 120}
    assert (info["auto_resolve_timeout"], info["auto_resolve_mode"]) == (0, "trigger")
    assert info["is_private"] is False and info["disable_auto_close"] is False


@pytest.mark.parametrize(("body", "field"), [
    ({}, "channel_name"),
    ({"channel_name": ""}, "channel_name"),
    ({"channel_name": "   "}, "channel_name"),
    ({"channel_name": "x" * 60}, "channel_name"),
    ({"channel_name": 5}, "channel_name"),
    ({"channel_name": "c", "team_id": "1"}, "team_id"),
    ({"channel_name": "c", "team_id": -1}, "team_id"),
    ({"channel_name": "c", "managing_team_ids": [1, 2, 3, 4]}, "managing_team_ids"),
    ({"channel_name": "c", "managing_team_ids": [0]}, "managing_team_ids"),
    ({"channel_name": "c", "description": "d" * 501}, "description"),
    ({"channel_name": "c", "group": {}}, "group.method"),
    ({"channel_name": "c", "group": {"method": "x"}}, "group.method"),
    ({"channel_name": "c", "group": {"method": "p", "equals": [[]]}}, "group.equals"),
    ({"channel_name": "c", "group": {"method": "p", "equals": [["a", " "]]}}, "group.equals"),
    ({"channel_name": "c", "group": {"method": "p", "equals": [["a"]] * 6}}, "group.equals"),
    ({"channel_name": "c", "group": {"method": "p", "equals": "a"}}, "group.equals"),
    ({"channel_name": "c", "group": {"method": "n", "time_window": 1441}}, "group.time_window"),
    ({"channel_name": "c", "group": {"method": "n", "time_window": -1}}, "group.time_window"),
    ({"channel_name": "c", "group": {"method": "n", "window_type": "x"}}, "group.window_type"),
    ({"channel_name": "c", "group": {"method": "i", "i_score_threshold": 0.1}},
     "group.i_score_threshold"),
    ({"channel_name": "c", "group": {"method": "i", "i_keys": [""]}}, "group.i_keys"),
    ({"channel_name": "c", "group": {"method": "i", "storm_threshold": 10001}},
     "group.storm_threshold"),
    ({"channel_name": "c", "flapping": {"max_changes": 1}}, "flapping.max_changes"),
    ({"channel_name": "c", "flapping": {"in_mins": 0}}, "flapping.in_mins"),
    ({"channel_name": "c", "flapping": {"mute_mins": 1441}}, "flapping.mute_mins"),
    ({"channel_name": "c", "auto_resolve_timeout": 2_592_001}, "auto_resolve_timeout"),
    ({"channel_name": "c", "auto_resolve_mode": "never"}, "auto_resolve_mode"),
    ({"channel_name": "c", "is_private": "yes"}, "is_private"),
])
async def test_create_validation_names_the_field(api: Api, owner: Person, body: dict[str, Any],
                                                 field: str) -> None:
    reply = await api.call("/channel/create", body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert field in reply.message
    assert (await api.call("/channel/list", {}, key=owner.key)).data["total"] == 0


async def test_teams_must_belong_to_the_account(api: Api, owner: Person,
                                                other_owner: Person) -> None:
    foreign = await _team(api, other_owner, "Theirs")
    for body in [{"team_id": foreign}, {"managing_team_ids": [foreign]}, {"team_id": 777}]:
        reply = await api.call("/channel/create", {"channel_name": "c", **body}, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), body
    assert (await api.call("/channel/list", {}, key=owner.key)).data["total"] == 0
    channel_id = await _create(api, owner)
    reply = await api.call("/channel/update", {"channel_id": channel_id, "team_id": foreign},
                           key=owner.key)
    assert reply.code == "ResourceNotFound"
    assert (await _info(api, owner, channel_id))["team_id"] == 0


async def test_names_unique_in_any_case_and_free_after_delete(api: Api, owner: Person,
                                                              other_owner: Person) -> None:
    first = await _create(api, owner, "Payments")
    for name in ["payments", "PAYMENTS", " Payments "]:
        dup = await api.call("/channel/create", {"channel_name": name}, key=owner.key)
        assert (dup.status, dup.code) == (400, "InvalidParameter")
        assert "channel_name" in dup.message
    await _create(api, other_owner, "Payments")  # another account: fine
    second = await _create(api, owner, "Billing")
    clash = await api.call("/channel/update", {"channel_id": second, "channel_name": "PAYments"},
                           key=owner.key)
    assert clash.code == "InvalidParameter" and "channel_name" in clash.message
    same = await api.call("/channel/update", {"channel_id": first, "channel_name": "PAYMENTS"},
                          key=owner.key)
    assert same.status == 200  # renaming a channel to its own name in another case
    assert (await _info(api, owner, first))["channel_name"] == "PAYMENTS"
    assert (await api.call("/channel/delete", {"channel_id": first}, key=owner.key)).status \
        == 200
    reborn = await _create(api, owner, "payments")
    assert reborn != first


async def test_update_changes_only_given_fields(api: Api, owner: Person) -> None:
    team_id = await _team(api, owner, "SRE")
    channel_id = await _create(api, owner, "Payments", description="Cards", team_id=team_id,
                               group={"method": "p", "equals": [["labels.host"]]},
                               auto_resolve_timeout=600)
    before = await _info(api, owner, channel_id)
    reply = await api.call("/channel/update", {
        "channel_id": channel_id, "description": "Cards and wallets",
        "group": {"method": "i", "i_keys": ["title"], "i_score_threshold": 0.8},
        "flapping": {"is_disabled": False}, "disable_auto_close": True,
    }, key=owner.key)
    assert (reply.status, reply.data) == (200, {"external_report_token": ""})
    after = await _info(api, owner, channel_id)
    assert after["description"] == "Cards and wallets"
    assert after["group"] == {"method": "i", "i_keys": ["title"], "i_score_threshold": 0.8}
    assert after["flapping"] == {"is_disabled": False, "max_changes": 4, "in_mins": 60,
                                 "mute_mins": 120}
    assert after["disable_auto_close"] is True
    for kept in ("channel_name", "team_id", "auto_resolve_timeout", "auto_resolve_mode",
                 "is_private", "created_at", "creator_id", "status"):
        assert after[kept] == before[kept], kept
    assert after["updated_at"] >= before["updated_at"]
    bad = await api.call("/channel/update", {"channel_id": channel_id,
                                             "group": {"method": "p", "equals": [[]]}},
                        key=owner.key)
    assert bad.code == "InvalidParameter" and "group.equals" in bad.message
    assert (await _info(api, owner, channel_id))["group"]["method"] == "i"
    unset_team = await api.call("/channel/update", {"channel_id": channel_id, "team_id": 0},
                                key=owner.key)
    assert unset_team.status == 200
    assert (await _info(api, owner, channel_id))["team_id"] == 0


async def test_delete_is_soft(api: Api, owner: Person) -> None:
    channel_id = await _create(api, owner)
    kept = await _create(api, owner, "Kept")
    assert (await api.call("/channel/delete", {"channel_id": channel_id}, key=owner.key)).data \
        == {}
    info = await _info(api, owner, channel_id)
    assert info["status"] == "deleted" and info["deleted_at"] > 0
    listed = await api.call("/channel/list", {}, key=owner.key)
    assert [c["channel_id"] for c in listed.data["items"]] == [kept]
    infos = await api.call("/channel/infos", {"channel_ids": [channel_id, kept]}, key=owner.key)
    assert [c["channel_id"] for c in infos.data["items"]] == [kept]
    for path, body in [("/channel/delete", {}), ("/channel/enable", {}),
                       ("/channel/disable", {}), ("/channel/update", {"description": "x"})]:
        reply = await api.call(path, {"channel_id": channel_id, **body}, key=owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    assert (await _info(api, owner, channel_id))["status"] == "deleted"


async def test_enable_and_disable(api: Api, owner: Person) -> None:
    channel_id = await _create(api, owner)
    for path, status in [("/channel/disable", "disabled"), ("/channel/disable", "disabled"),
                         ("/channel/enable", "enabled"), ("/channel/enable", "enabled")]:
        reply = await api.call(path, {"channel_id": channel_id}, key=owner.key)
        assert (reply.status, reply.data) == (200, {})
        assert (await _info(api, owner, channel_id))["status"] == status
    await api.call("/channel/disable", {"channel_id": channel_id}, key=owner.key)
    listed = await api.call("/channel/list", {}, key=owner.key)
    assert listed.data["items"][0]["status"] == "disabled"  # disabled channels stay listed


async def test_list_paging_order_and_filters(api: Api, owner: Person) -> None:
    mine = await _team(api, owner, "Mine", [owner.person_id])
    other = await _team(api, owner, "Other")
    ids = {}
    for name, extra in [("alpha", {"team_id": mine}), ("Bravo", {"team_id": other}),
                        ("charlie", {"team_id": other, "managing_team_ids": [mine]}),
                        ("delta", {"description": "the ALPHA backup"}), ("echo_1", {})]:
        ids[name] = await _create(api, owner, name, **extra)
    page = await api.call("/channel/list", {"orderby": "channel_name", "asc": True, "p": 2,
                                            "limit": 2}, key=owner.key)
    assert [c["channel_name"] for c in page.data["items"]] == ["charlie", "delta"]
    assert (page.data["total"], page.data["has_next_page"]) == (5, True)
    last = await api.call("/channel/list", {"orderby": "channel_name", "asc": True, "p": 3,
                                            "limit": 2}, key=owner.key)
    assert [c["channel_name"] for c in last.data["items"]] == ["echo_1"]
    assert last.data["has_next_page"] is False
    past = await api.call("/channel/list", {"p": 9, "limit": 2}, key=owner.key)
    assert (past.data["items"], past.data["total"]) == ([], 5)
    desc = await api.call("/channel/list", {"orderby": "channel_name"}, key=owner.key)
    assert desc.data["items"][0]["channel_name"] == "echo_1"

    async def names(body: dict[str, Any]) -> list[str]:
        reply = await api.call("/channel/list", {"orderby": "channel_name", "asc": True, **body},
                               key=owner.key)
        assert reply.status == 200, reply.body
        return [c["channel_name"] for c in reply.data["items"]]

    assert await names({"query": "alpha"}) == ["alpha", "delta"]  # name or description
    assert await names({"query": "O_1"}) == ["echo_1"]
    assert await names({"query": "%"}) == []
    assert await names({"channel_name": "BRAVO"}) == ["Bravo"]
    assert await names({"channel_name": "brav"}) == []
    assert await names({"team_ids": [other]}) == ["Bravo", "charlie"]
    assert await names({"channel_ids": [ids["alpha"], ids["echo_1"], 999]}) == ["alpha",
                                                                               "echo_1"]
    assert await names({"is_my_team": True}) == ["alpha"]
    assert await names({"is_my_managed": True}) == ["alpha", "charlie"]
    assert await names({"is_my_starred": True}) == []
    brief = await api.call("/channel/list", {"is_brief": True, "channel_name": "delta"},
                           key=owner.key)
    assert brief.data["items"] == [{"channel_id": ids["delta"], "channel_name": "delta",
                                    "description": "the ALPHA backup", "status": "enabled"}]
    both = await api.call("/channel/list", {"is_my_starred": True, "is_my_team": True},
                          key=owner.key)
    assert both.code == "InvalidParameter" and "is_my_starred" in both.message
    for body, field in [({"p": 0}, "p"), ({"limit": 101}, "limit"), ({"orderby": "x"}, "orderby"),
                        ({"p": 101, "limit": 100}, "p"), ({"team_ids": ["a"]}, "team_ids")]:
        reply = await api.call("/channel/list", body, key=owner.key)
        assert reply.code == "InvalidParameter" and field in reply.message, body
    default = await api.call("/channel/list", {}, key=owner.key)
    assert len(default.data["items"]) == 5  # the default page holds 100


async def test_infos_leave_out_unknown_ids(api: Api, owner: Person) -> None:
    a = await _create(api, owner, "A")
    b = await _create(api, owner, "B")
    reply = await api.call("/channel/infos", {"channel_ids": [b, 42, a, b]}, key=owner.key)
    assert sorted(c["channel_id"] for c in reply.data["items"]) == sorted([a, b])
    empty = await api.call("/channel/infos", {"channel_ids": []}, key=owner.key)
    assert empty.data["items"] == []
    too_many = await api.call("/channel/infos", {"channel_ids": list(range(1, 1002))},
                              key=owner.key)
    assert too_many.code == "InvalidParameter" and "channel_ids" in too_many.message


async def test_other_accounts_channels_are_not_found(api: Api, owner: Person,
                                                     other_owner: Person) -> None:
    channel_id = await _create(api, owner)
    for path, body in [("/channel/info", {}), ("/channel/update", {"channel_name": "Stolen"}),
                       ("/channel/delete", {}), ("/channel/enable", {}),
                       ("/channel/disable", {})]:
        reply = await api.call(path, {"channel_id": channel_id, **body}, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    assert (await api.call("/channel/list", {}, key=other_owner.key)).data["total"] == 0
    infos = await api.call("/channel/infos", {"channel_ids": [channel_id]}, key=other_owner.key)
    assert infos.data["items"] == []
    info = await _info(api, owner, channel_id)
    assert (info["channel_name"], info["status"]) == ("Payments", "enabled")


async def test_permissions(api: Api, owner: Person) -> None:
    channel_id = await _create(api, owner)
    member = await new_member(api, owner, builtin="member")
    nobody = await new_member(api, owner, name="Nobody", builtin=None)
    admin = await new_member(api, owner, name="Admin", builtin="admin")
    assert (await api.call("/channel/list", {}, key=member.key)).data["total"] == 1
    assert (await _info(api, member, channel_id))["channel_name"] == "Payments"
    for path, body in [("/channel/create", {"channel_name": "M"}),
                       ("/channel/update", {"channel_id": channel_id, "description": "m"}),
                       ("/channel/delete", {"channel_id": channel_id}),
                       ("/channel/enable", {"channel_id": channel_id}),
                       ("/channel/disable", {"channel_id": channel_id})]:
        reply = await api.call(path, body, key=member.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    for path in ("/channel/list", "/channel/info"):
        reply = await api.call(path, {"channel_id": channel_id}, key=nobody.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    await _create(api, admin, "By admin")
    reply = await api.call("/channel/update", {"channel_id": channel_id, "description": "a"},
                           key=admin.key)
    assert reply.status == 200
    assert (await _info(api, owner, channel_id))["description"] == "a"


def _system(api: Api, who: Person) -> Actor:
    return Actor.system(who.account_id, api.runtime.clock)


async def test_load_settings(api: Api, owner: Person, other_owner: Person) -> None:
    channel_id = await _create(
        api, owner, "Payments",
        group={"method": "p", "equals": [["labels.host"], ["title", "labels.svc"]],
               "time_window": 15},
        flapping={"is_disabled": False, "max_changes": 3, "in_mins": 5, "mute_mins": 10},
        auto_resolve_timeout=900, auto_resolve_mode="update", disable_auto_close=True)
    async with api.runtime.db.transaction() as conn:
        settings = await load_settings(conn, _system(api, owner), channel_id=channel_id)
        foreign = await load_settings(conn, _system(api, other_owner), channel_id=channel_id)
        unknown = await load_settings(conn, _system(api, owner), channel_id=12345)
    assert foreign is None and unknown is None
    assert settings is not None
    assert (settings.channel_id, settings.account_id, settings.channel_name, settings.status) \
        == (channel_id, owner.account_id, "Payments", "enabled")
    assert settings.group.method == "p"
    assert settings.group.equals == (("labels.host",), ("title", "labels.svc"))
    assert (settings.group.time_window, settings.group.time_window_mins) == (900, 15)
    assert settings.group.window_type == "tumbling"
    assert (settings.flapping.is_disabled, settings.flapping.max_changes,
            settings.flapping.in_mins, settings.flapping.mute_mins) == (False, 3, 5, 10)
    assert (settings.auto_resolve_timeout, settings.auto_resolve_mode) == (900, "update")
    assert settings.disable_auto_close is True

    await api.call("/channel/disable", {"channel_id": channel_id}, key=owner.key)
    async with api.runtime.db.transaction() as conn:
        disabled = await load_settings(conn, _system(api, owner), channel_id=channel_id)
    assert disabled is not None and disabled.status == "disabled"
    await api.call("/channel/delete", {"channel_id": channel_id}, key=owner.key)
    async with api.runtime.db.transaction() as conn:
        deleted = await load_settings(conn, _system(api, owner), channel_id=channel_id)
    assert deleted is not None and deleted.status == "deleted"

    plain = await _create(api, owner, "Plain")
    async with api.runtime.db.transaction() as conn:
        defaults = await load_settings(conn, _system(api, owner), channel_id=plain)
    assert defaults is not None
    assert (defaults.group.method, defaults.group.equals, defaults.group.time_window) == (
        "n", (), 0)
    assert defaults.flapping.is_disabled is True


async def test_opening_an_incident_stamps_last_incident_at_and_drives_ranking(
        settings: Settings) -> None:
    clock = FakeClock(1_700_000_000.0)
    async with make_api(settings, clock=clock) as api:
        await _stamps_last_incident_at_and_drives_ranking(api, clock)


async def _stamps_last_incident_at_and_drives_ranking(api: Api, clock: FakeClock) -> None:
    owner = await new_account(api, "Acme")
    quiet = await _create(api, owner, "Quiet")
    busy = await _create(api, owner, "Busy")
    other = await _create(api, owner, "Other")
    assert (await _info(api, owner, quiet))["last_incident_at"] == 0
    for channel_id in (quiet, busy):
        await api.call("/incident/create", {"title": "t", "incident_severity": "Info",
                                            "channel_id": channel_id}, key=owner.key)
        assert (await _info(api, owner, channel_id))["last_incident_at"] == int(clock.now())
        clock.advance(1)  # the next one a whole second later: a strict order
    ranked = await api.call("/channel/list", {}, key=owner.key)
    assert [c["channel_id"] for c in ranked.data["items"]][:2] == [busy, quiet]
    assert ranked.data["items"][2]["channel_id"] == other
    assert (await _info(api, owner, other))["last_incident_at"] == 0


async def _token_hash(api: Api, channel_id: int) -> str:
    from sqlalchemy import select

    from dutyline.db.tables.channel import channel

    async with api.runtime.db.transaction(write=False) as conn:
        return str((await conn.execute(select(channel.c.external_report_token_hash).where(
            channel.c.channel_id == channel_id))).scalar_one())


async def test_external_report_tokens_are_shown_once_and_kept_as_a_hash(
    api: Api, owner: Person
) -> None:
    from dutyline.api.auth import hash_app_key

    # Without external reports: no token, and none may be given.
    plain = check("/channel/create", await _post(api, "/channel/create", {
        "channel_name": "Plain"}, owner.key))["data"]
    assert "external_report_token" not in plain
    refused = await api.call("/channel/create", {"channel_name": "P2",
                                                 "external_report_token": "t" * 20},
                             key=owner.key)
    assert (refused.status, refused.code) == (400, "InvalidParameter")
    assert "external_report_token" in refused.body["error"]["message"]

    # Enabled on create: a fresh token, in that answer only.
    made = check("/channel/create", await _post(api, "/channel/create", {
        "channel_name": "Reported", "is_external_report_enabled": True}, owner.key))["data"]
    token = made["external_report_token"]
    assert token.startswith("ert_") and len(token) > 20
    assert await _token_hash(api, made["channel_id"]) == hash_app_key(token)
    info = await _info(api, owner, made["channel_id"])
    assert info["is_external_report_enabled"] is True
    assert token not in str(info)

    # /channel/update accepts a token (a channel moved from another server keeps its own)...
    moved = "moved-token-0123456789"
    updated = check("/channel/update", await _post(api, "/channel/update", {
        "channel_id": made["channel_id"], "external_report_token": moved}, owner.key))["data"]
    assert updated == {"external_report_token": moved}
    assert await _token_hash(api, made["channel_id"]) == hash_app_key(moved)
    # ...an update that does not touch external reports answers "" and keeps the token...
    other = check("/channel/update", await _post(api, "/channel/update", {
        "channel_id": made["channel_id"], "description": "x"}, owner.key))["data"]
    assert other == {"external_report_token": ""}
    assert await _token_hash(api, made["channel_id"]) == hash_app_key(moved)
    # ...turning them off drops it, turning them on makes a new one.
    await _post(api, "/channel/update", {"channel_id": made["channel_id"],
                                         "is_external_report_enabled": False}, owner.key)
    assert await _token_hash(api, made["channel_id"]) == ""
    again = check("/channel/update", await _post(api, "/channel/update", {
        "channel_id": plain["channel_id"], "is_external_report_enabled": True},
        owner.key))["data"]
    assert again["external_report_token"].startswith("ert_")
    assert await _token_hash(api, plain["channel_id"]) == hash_app_key(
        again["external_report_token"])
    bad = await api.call("/channel/update", {"channel_id": made["channel_id"],
                                             "external_report_token": "short"}, key=owner.key)
    assert (bad.status, bad.code) == (400, "InvalidParameter")
