"""/template/* through the API, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dutyline.api.actor import Actor
from dutyline.notify.template import service
from dutyline.notify.template.defaults import CHANNELS, DEFAULT_BODIES, PRESET_TEMPLATE_ID
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def create(api: Api, who: Person, name: str, **body: Any) -> str:
    reply = await api.call("/template/create", {"template_name": name, **body}, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["template_id"])


async def new_incident(api: Api, who: Person, **body: Any) -> str:
    reply = await api.call("/incident/create", {
        "incident_severity": "Warning", "title": "disk <full> on db-1",
        "description": "95% used", **body}, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["incident_id"])


async def test_create_info_update_delete_round_trip(api: Api, owner: Person) -> None:
    raw = await api.raw("POST", "/template/create", params={"app_key": owner.key}, json={
        "template_name": "Prod", "description": "d", "sms": "[{{.IncidentSeverity}}] {{.Title}}",
        "email": "<b>{{.Title}}</b>"})
    template_id = check("/template/create", raw)["data"]["template_id"]
    info = await api.raw("POST", "/template/info", params={"app_key": owner.key},
                         json={"template_id": template_id})
    item = check("/template/info", info)["data"]
    assert item["sms"] == "[{{.IncidentSeverity}}] {{.Title}}"
    assert item["creator_id"] == owner.person_id and item["status"] == "enabled"
    assert all(item[c] == "" for c in CHANNELS if c not in ("sms", "email"))
    by_id = await api.call("/template/info", {"id": template_id}, key=owner.key)
    assert by_id.data["template_id"] == template_id

    up = await api.raw("POST", "/template/update", params={"app_key": owner.key}, json={
        "template_id": template_id, "template_name": "Prod2", "slack": "*{{.Title}}*"})
    check("/template/update", up)
    item = (await api.call("/template/info", {"template_id": template_id}, key=owner.key)).data
    assert (item["template_name"], item["slack"], item["sms"]) == ("Prod2", "*{{.Title}}*", "")

    gone = await api.raw("POST", "/template/delete", params={"app_key": owner.key},
                         json={"template_id": template_id})
    check("/template/delete", gone)
    missing = await api.call("/template/info", {"template_id": template_id}, key=owner.key)
    assert (missing.status, missing.code) == (400, "ResourceNotFound")
    # the name is free again once deleted
    await create(api, owner, "Prod2")


async def test_bad_bodies_are_400_naming_the_channel(api: Api, owner: Person) -> None:
    for field, body in [("sms", "{{.Title"), ("slack", "{{nosuchfunc .Title}}"),
                        ("email", "{{if .Title}}x"), ("voice", "{{$undefined}}"),
                        ("zoom", "{{range 100000000}}{{.}}{{end}}")]:
        reply = await api.call("/template/create", {"template_name": "T", field: body},
                               key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), (field, reply.body)
        assert field in reply.body["error"]["message"]
    listed = await api.call("/template/list", {}, key=owner.key)
    assert [i["template_id"] for i in listed.data["items"]] == [PRESET_TEMPLATE_ID]  # only


async def test_names_are_unique_per_account_and_bounded(api: Api, owner: Person,
                                                       other_owner: Person) -> None:
    await create(api, owner, "Ops")
    dup = await api.call("/template/create", {"template_name": "ops"}, key=owner.key)
    assert (dup.status, dup.code) == (400, "InvalidParameter")
    await create(api, other_owner, "Ops")  # another account may use it
    long = await api.call("/template/create", {"template_name": "x" * 40}, key=owner.key)
    assert long.status == 400


async def test_the_preset_is_readable_by_its_fixed_ids(api: Api, owner: Person) -> None:
    for preset in (PRESET_TEMPLATE_ID, "000000000000000000000001"):
        raw = await api.raw("POST", "/template/info", params={"app_key": owner.key},
                            json={"template_id": preset})
        item = check("/template/info", raw)["data"]
        assert all(item[c] == DEFAULT_BODIES[c] for c in CHANNELS)
        assert item["account_id"] == owner.account_id
    refused = await api.call("/template/update", {"template_id": PRESET_TEMPLATE_ID,
                                                  "template_name": "x"}, key=owner.key)
    assert refused.status == 400
    assert (await api.call("/template/info", {}, key=owner.key)).status == 400


async def test_the_preset_is_listed_marked_and_cannot_be_changed_or_deleted(
        api: Api, owner: Person) -> None:
    mine = await create(api, owner, "Mine", sms="{{.Title}}")
    raw = await api.raw("POST", "/template/list", params={"app_key": owner.key}, json={})
    items = check("/template/list", raw)["data"]["items"]
    assert [(i["template_id"], i["preset"]) for i in items] == [
        (PRESET_TEMPLATE_ID, True), (mine, False)]
    preset = items[0]
    assert preset["template_name"] == "Default" and preset["team_id"] == 0
    assert all(preset[c] == DEFAULT_BODIES[c] for c in CHANNELS)
    info = await api.call("/template/info", {"template_id": PRESET_TEMPLATE_ID}, key=owner.key)
    assert info.data["preset"] is True
    # Filters that leave it out: another team, a creator, a name it does not match.
    for body in ({"team_ids": [7]}, {"is_my_team": True}, {"creator_id": owner.person_id},
                 {"query": "Mine"}):
        listed = (await api.call("/template/list", body, key=owner.key)).data
        assert PRESET_TEMPLATE_ID not in [i["template_id"] for i in listed["items"]], body
    assert (await api.call("/template/list", {"query": "default"}, key=owner.key)
            ).data["items"][0]["template_id"] == PRESET_TEMPLATE_ID

    # Read-only, by either of its ids: a clear 400 naming the field, and nothing changes.
    for preset_id in (PRESET_TEMPLATE_ID, "000000000000000000000001"):
        gone = await api.call("/template/delete", {"template_id": preset_id}, key=owner.key)
        assert (gone.status, gone.code) == (400, "InvalidParameter")
        assert gone.message == ("Invalid parameter template_id: is the built-in preset "
                                "template, which cannot be deleted: create a template of "
                                "your own")
        changed = await api.call("/template/update", {
            "template_id": preset_id, "template_name": "Mine too", "sms": "x"}, key=owner.key)
        assert (changed.status, changed.code) == (400, "InvalidParameter")
        assert "cannot be updated" in changed.message
    again = await api.call("/template/info", {"template_id": PRESET_TEMPLATE_ID},
                           key=owner.key)
    assert again.data == info.data


async def test_list_paging_order_and_filters(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate", builtin="admin")
    team = await api.call("/team/upsert", {"team_name": "SRE", "person_ids": [owner.person_id]},
                          key=owner.key)
    team_id = team.data["team_id"]
    ids = [await create(api, owner, f"alpha-{i}") for i in range(3)]
    ids.append(await create(api, mate, "beta", team_id=team_id))
    raw = await api.raw("POST", "/template/list", params={"app_key": owner.key},
                        json={"p": 1, "limit": 2, "orderby": "created_at", "asc": True})
    page = check("/template/list", raw)["data"]
    # The preset heads the list, then the account's own in order.
    assert (page["total"], page["has_next_page"], len(page["items"])) == (5, True, 2)
    assert page["items"][0]["template_id"] == PRESET_TEMPLATE_ID
    assert all(set(CHANNELS) <= set(i) for i in page["items"])
    second = (await api.call("/template/list", {"p": 2, "limit": 2, "asc": True},
                             key=owner.key)).data
    assert second["has_next_page"] is True and len(second["items"]) == 2
    last = (await api.call("/template/list", {"p": 3, "limit": 2, "asc": True},
                           key=owner.key)).data
    assert last["has_next_page"] is False and len(last["items"]) == 1
    seen = [i["template_id"] for d in (page, second, last) for i in d["items"]]
    assert sorted(seen) == sorted([PRESET_TEMPLATE_ID, *ids])
    names = lambda d: sorted(i["template_name"] for i in d["items"])  # noqa: E731
    assert names((await api.call("/template/list", {"query": "^alpha-[12]$"},
                                 key=owner.key)).data) == ["alpha-1", "alpha-2"]
    assert names((await api.call("/template/list", {"query": "ETA"}, key=owner.key)).data) \
        == ["beta"]
    assert names((await api.call("/template/list", {"query": "alpha-("}, key=owner.key)).data) \
        == []
    assert names((await api.call("/template/list", {"creator_id": mate.person_id},
                                 key=owner.key)).data) == ["beta"]
    assert names((await api.call("/template/list", {"team_ids": [team_id]}, key=owner.key)
                  ).data) == ["beta"]
    mine = await api.call("/template/list", {"is_my_team": True, "team_ids": [999]},
                          key=owner.key)
    assert names(mine.data) == ["beta"]  # team_ids ignored
    for bad in ({"p": 0}, {"limit": 0}, {"limit": 101}, {"orderby": "template_name"}):
        reply = await api.call("/template/list", bad, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), bad


async def test_a_list_query_never_backtracks(api: Api, owner: Person) -> None:
    # `(a+)+$` against 27 a's and a `!` backtracks 2^27 times in Python's `re` (seconds,
    # holding the interpreter); RE2 answers it in linear time. A substring still matches.
    await create(api, owner, "a" * 27 + "!")
    await create(api, owner, "Disk (a+)+$ alerts")
    started = time.perf_counter()
    reply = await api.call("/template/list", {"query": "(a+)+$"}, key=owner.key)
    elapsed = time.perf_counter() - started
    assert reply.status == 200, reply.body
    assert sorted(i["template_name"] for i in reply.data["items"]) == ["Disk (a+)+$ alerts"]
    assert elapsed < 1.0, elapsed
    upper = await api.call("/template/list", {"query": "DISK (A+)"}, key=owner.key)
    assert [i["template_name"] for i in upper.data["items"]] == ["Disk (a+)+$ alerts"]


async def test_permissions_and_other_accounts(api: Api, owner: Person,
                                              other_owner: Person) -> None:
    template_id = await create(api, owner, "Mine")
    viewer = await new_member(api, owner, name="Viewer", builtin="member")
    assert (await api.call("/template/list", {}, key=viewer.key)).status == 200
    assert (await api.call("/template/info", {"template_id": template_id},
                           key=viewer.key)).status == 200
    for path, body in [("/template/create", {"template_name": "x"}),
                       ("/template/update", {"template_id": template_id, "template_name": "y"}),
                       ("/template/delete", {"template_id": template_id})]:
        reply = await api.call(path, body, key=viewer.key)
        assert (reply.status, reply.code) == (403, "AccessDenied"), path
    for path, body in [("/template/info", {"template_id": template_id}),
                       ("/template/update", {"template_id": template_id, "template_name": "y"}),
                       ("/template/delete", {"template_id": template_id})]:
        reply = await api.call(path, body, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound"), path
    theirs = (await api.call("/template/list", {}, key=other_owner.key)).data["items"]
    assert [(i["template_id"], i["account_id"]) for i in theirs] == [
        (PRESET_TEMPLATE_ID, other_owner.account_id)]  # only their own preset
    foreign_team = await api.call("/team/upsert", {"team_name": "Them"}, key=other_owner.key)
    reply = await api.call("/template/create", {"template_name": "z",
                                                "team_id": foreign_team.data["team_id"]},
                           key=owner.key)
    assert (reply.status, reply.code) == (400, "ResourceNotFound")


async def test_preview_sample_real_incident_errors_and_size_warning(api: Api, owner: Person,
                                                                   other_owner: Person) -> None:
    sample = await api.call("/template/preview", {"type": "sms", "content": "{{.Title}}|"
                                                  "{{.Labels.host}}"}, key=owner.key)
    assert sample.data == {"success": True, "content": "CPU usage above 90% on db-01|db-01",
                           "message": ""}
    incident_id = await new_incident(api, owner)
    real = await api.call("/template/preview", {
        "type": "email", "content": "<p>{{.Title}}</p>{{.IncidentSeverity}}",
        "incident_id": incident_id}, key=owner.key)
    assert real.data["content"] == "<p>disk &lt;full&gt; on db-1</p>Warning"
    bad = await api.call("/template/preview", {"type": "sms", "content": "{{index .Alerts 9}}"},
                         key=owner.key)
    assert bad.status == 200 and bad.data["success"] is False
    assert "index out of range" in bad.data["message"]
    unknown = await api.call("/template/preview", {"type": "sms", "content": "{{nope}}"},
                             key=owner.key)
    assert unknown.data["success"] is False and "not defined" in unknown.data["message"]
    big = await api.call("/template/preview", {"type": "dingtalk",
                                               "content": "{{range 500}}0123456789{{end}}"},
                         key=owner.key)
    assert big.data["success"] is True and "4000" in big.data["message"]
    hidden = await api.call("/template/preview", {"type": "sms", "content": "x",
                                                  "incident_id": incident_id},
                            key=other_owner.key)
    assert (hidden.status, hidden.code) == (400, "ResourceNotFound")
    runaway = await api.call("/template/preview", {
        "type": "sms",
        "content": '{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}'},
        key=owner.key)
    assert (runaway.status, runaway.code) == (400, "InvalidParameter")
    assert "content" in runaway.message and "depth" in runaway.message


async def test_render_for_incident_falls_back_and_records(api: Api, owner: Person) -> None:
    incident_id = await new_incident(api, owner)
    good = await create(api, owner, "Good", sms="{{.Title}} is {{.IncidentSeverity}}")
    broken = await create(api, owner, "Broken", sms="{{index .Alerts 42}}")
    actor = Actor.system(owner.account_id, api.runtime.clock)
    before = service.RENDER_FAILURES["sms"]
    async with api.runtime.db.transaction() as conn:
        ok = await service.render_for_incident(conn, actor, template_id=good, channel="sms",
                                               incident_id=incident_id,
                                               deps=api.runtime.deps)
        fell = await service.render_for_incident(conn, actor, template_id=broken,
                                                 channel="sms", incident_id=incident_id,
                                                 deps=api.runtime.deps)
        default = await service.render_for_incident(conn, actor, template_id=None,
                                                    channel="sms", incident_id=incident_id,
                                                    deps=api.runtime.deps)
        empty = await service.render_for_incident(conn, actor, template_id=good,
                                                  channel="voice", incident_id=incident_id,
                                                  deps=api.runtime.deps)
    assert (ok.text, ok.fell_back, ok.error) == ("disk <full> on db-1 is Warning", False, "")
    assert fell.fell_back and "index out of range" in fell.error
    assert fell.text == default.text == "[Warning] disk <full> on db-1"
    assert not empty.fell_back and "disk <full> on db-1" in empty.text  # no body: default
    assert service.RENDER_FAILURES["sms"] == before + 1


@pytest.mark.parametrize("channel", CHANNELS)
def test_every_default_body_compiles_and_renders_the_sample(channel: str) -> None:
    from dutyline.notify.template import engine
    from dutyline.notify.template.data import sample_data

    text = engine.render(engine.compile_for(channel, DEFAULT_BODIES[channel]),
                         sample_data(1_700_000_000, "http://x"))
    assert "CPU usage above 90% on db-01" in text
    assert "<no value>" not in text


async def test_ago_uses_the_server_clock_and_delivery_truncates(api: Api, owner: Person) -> None:
    ago = await api.call("/template/preview", {"type": "sms", "content": "{{ago .StartTime}}"},
                         key=owner.key)
    assert ago.data["content"] == "5m"  # the sample incident started 300 s before now
    incident_id = await new_incident(api, owner)
    long = await create(api, owner, "Long", dingtalk="{{range 600}}0123456789{{end}}",
                        telegram="é{{range 600}}0123456789{{end}}")
    actor = Actor.system(owner.account_id, api.runtime.clock)
    async with api.runtime.db.transaction() as conn:
        ding = await service.render_for_incident(conn, actor, template_id=long,
                                                 channel="dingtalk", incident_id=incident_id,
                                                 deps=api.runtime.deps)
        tele = await service.render_for_incident(conn, actor, template_id=long,
                                                 channel="telegram", incident_id=incident_id,
                                                 deps=api.runtime.deps)
        gone = await service.render_for_incident(conn, actor, template_id="ab" * 12,
                                                 channel="sms", incident_id=incident_id,
                                                 deps=api.runtime.deps)
    assert len(ding.text.encode()) == 4000 and not ding.fell_back
    assert len(tele.text.encode()) <= 4096 and tele.text.startswith("é")
    assert gone.fell_back and "not found" in gone.error
    assert gone.text == "[Warning] disk <full> on db-1"


async def test_email_bodies_style_by_severity_in_css(api: Api, owner: Person) -> None:
    """Actions in style attributes and <style> render as Go's html/template renders them:
    a colour passes, a value that could break out of the declaration becomes ZgotmplZ."""
    incident_id = await new_incident(api, owner)
    body = ("<style>h1{color:{{serverityToColor .IncidentSeverity}}}</style>"
            '<h1 style="color:{{serverityToColor .IncidentSeverity}};x:{{.Title}}">'
            "{{.Title}}</h1>")
    real = await api.call("/template/preview", {"type": "email", "content": body,
                                                "incident_id": incident_id}, key=owner.key)
    assert real.data == {"success": True, "message": "", "content": (
        '<style>h1{color:#FA7D00}</style><h1 style="color:#FA7D00;x:ZgotmplZ">'
        "disk &lt;full&gt; on db-1</h1>")}
    template_id = await create(api, owner, "Coloured", email=body)
    info = await api.call("/template/info", {"template_id": template_id}, key=owner.key)
    assert info.data["email"] == body
    script = await api.call("/template/create", {
        "template_name": "Script", "email": "<script>var s = {{.Title}};</script>"},
        key=owner.key)
    assert (script.status, script.code) == (400, "InvalidParameter")
    assert "email" in script.message


async def test_every_preset_column_says_recovered_once_the_incident_closed(
        api: Api, owner: Person) -> None:
    """Closed is the incident's progress (its status is Ok by then): each channel's preset
    body heads a closed incident's message as a recovery, and an open one's not."""
    open_id, closed_id = await new_incident(api, owner), await new_incident(api, owner)
    resolved = await api.call("/incident/resolve", {"incident_ids": [closed_id]}, key=owner.key)
    assert resolved.status == 200, resolved.body
    actor = Actor.system(owner.account_id, api.runtime.clock)
    async with api.runtime.db.transaction() as conn:
        for channel in CHANNELS:
            texts = {}
            for incident_id in (open_id, closed_id):
                rendered = await service.render_for_incident(
                    conn, actor, template_id=PRESET_TEMPLATE_ID, channel=channel,
                    incident_id=incident_id, deps=api.runtime.deps)
                assert not rendered.fell_back, rendered.error
                texts[incident_id] = rendered.text
            assert "Recovered" in texts[closed_id], (channel, texts[closed_id])
            assert "Recovered" not in texts[open_id], (channel, texts[open_id])
