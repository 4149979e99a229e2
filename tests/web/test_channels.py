"""The Channels pages: the list (search, sort, paging, open incidents, owning teams), a
channel's page, creating, editing, archiving, enabling and deleting a channel."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.channel import channel
from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import PRESET_TEMPLATE, ok, push, seed

pytestmark = pytest.mark.anyio

HOSTILE = '<img src=x onerror="alert(1)">'
ZH = {"accept-language": "zh-CN"}
BY = {"critical": ["email"]}


async def _writes(api: Api, account_id: int) -> list[tuple[str, str, str]]:
    """(operation, credential, outcome) of the account's audited writes, oldest first."""
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential,
                                         audit_log.c.outcome)
                                  .where(audit_log.c.account_id == account_id,
                                         audit_log.c.is_write)
                                  .order_by(audit_log.c.id))
        return [(r.operation, r.credential, r.outcome) for r in rows]


async def _stored(api: Api, account_id: int) -> dict[str, Any]:
    """{channel name: its row} of the account's channels, deleted ones too."""
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(channel).where(channel.c.account_id == account_id))
        return {r.channel_name: r for r in rows}


async def _create(console: Browser, name: str, **fields: Any) -> str:
    done = await console.post("/console/channels/new", {"channel_name": name, **fields})
    assert done.status_code == 303, done.text
    return str(done.headers["location"])


async def _team(api: Api, owner: Person, name: str) -> int:
    return int((await ok(api, "/team/upsert", {"team_name": name}, owner))["team_id"])


def _field_error(page: str, field: str) -> str:
    found = re.search(rf'id="e-{re.escape(field)}">([^<]*)<', page)
    assert found, f"no error at {field}"
    return found[1]


async def test_an_empty_account_is_told_to_create_its_first_channel(
        console: Browser) -> None:
    page = await console.get("/console/channels")
    assert page.status_code == 200
    assert "No channels yet" in page.text
    assert '<a class="button primary" href="/console/channels/new">Create your first channel' \
        in page.text
    assert 'id="f-q"' not in page.text  # nothing to search yet
    zh = await console.get("/console/channels", headers=ZH)
    assert "创建第一个协作空间" in zh.text


async def test_creating_a_channel_and_its_page(api: Api, owner: Person,
                                               console: Browser) -> None:
    sre = await _team(api, owner, "SRE")
    dba = await _team(api, owner, "DBA")
    form = await console.get("/console/channels/new")
    assert form.status_code == 200
    assert f'<option value="{sre}">SRE</option>' in form.text
    path = await _create(console, "Payments API", description="Card payments",
                         team_id=str(sre), managing_team_ids=[str(dba)], is_private="on",
                         auto_resolve_timeout="14400", auto_resolve_mode="update")
    assert re.fullmatch(r"/console/channels/\d+", path)
    stored = (await _stored(api, owner.account_id))["Payments API"]
    assert (stored.description, stored.team_id, stored.managing_team_ids, stored.is_private,
            stored.auto_resolve_timeout, stored.auto_resolve_mode) == (
        "Card payments", sre, f"[{dba}]", True, 14400, "update")
    page = await console.get(path)
    assert page.status_code == 200
    assert "The channel Payments API is saved." in page.text
    assert "<h1>Payments API</h1>" in page.text and "Card payments" in page.text
    assert f'<a href="/console/teams/{sre}">SRE</a>' in page.text and "DBA" in page.text
    assert "After 4 hours, counted from its last alert" in page.text
    # Its integrations and escalation rules are offered, each with its first one to add.
    assert f'href="{path}/integrations/new">Add an integration' in page.text
    assert f'href="{path}/escalation-rules/new">Add an escalation rule' in page.text
    assert "No incident in the last 31 days." in page.text
    assert await _writes(api, owner.account_id) == [
        ("team.upsert", "app_key", "OK"), ("team.upsert", "app_key", "OK"),
        ("channel.create", "session", "OK")]
    listed = await console.get("/console/channels")
    row = re.search(r'href="' + path + r'">Payments API</a>.*?</tr>', listed.text, re.DOTALL)
    assert row and "SRE, DBA" in row[0] and "private" in row[0]
    assert "1 channel" in listed.text


async def test_the_page_lists_integrations_rules_and_recent_incidents(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner, title="disk full on db-7", channel_name="Storage")
    await ok(api, "/channel/escalate/rule/create", {
        "channel_id": seeded.channel_id, "template_id": PRESET_TEMPLATE,
        "rule_name": "Night shift", "priority": 10,
        "layers": [{"target": {"person_ids": [owner.person_id], "by": BY}},
                   {"target": {"person_ids": [owner.person_id], "by": BY}}]}, owner)
    await ok(api, "/channel/escalate/rule/create", {
        "channel_id": seeded.channel_id, "template_id": PRESET_TEMPLATE,
        "rule_name": "Day shift", "priority": 20,
        "layers": [{"target": {"person_ids": [owner.person_id], "by": BY}}]}, owner)
    base = f"/console/channels/{seeded.channel_id}"
    page = await console.get(base)
    assert page.status_code == 200
    integration = re.search(rf'href="{base}/integrations/(\d+)">std</a>', page.text)
    assert integration and "key ending in" in page.text
    rules = re.findall(rf'href="{base}/escalation-rules/([0-9a-f]+)">([^<]+)</a>', page.text)
    names = [n for _, n in rules]
    assert sorted(names) == ["Day shift", "Night shift"]
    assert "2 layers" in page.text and "1 layer" in page.text
    assert f'href="/console/incidents/{seeded.incident_id}">disk full on db-7</a>' in page.text
    assert f'href="/console/incidents?channel={seeded.channel_id}">1</a>' in page.text
    listed = await console.get("/console/channels")
    assert f'href="/console/incidents?channel={seeded.channel_id}">1</a>' in listed.text


async def test_search_sort_and_paging(api: Api, owner: Person, console: Browser,
                                      clock: FakeClock) -> None:
    for i in range(23):
        clock.advance(1)
        await ok(api, "/channel/create", {"channel_name": f"svc-{i:02}",
                                          "description": "blue" if i % 2 else "green"}, owner)
    first = await console.get("/console/channels")
    assert "23 channels" in first.text
    names = re.findall(r'href="/console/channels/\d+">(svc-\d\d)</a>', first.text)
    assert names == [f"svc-{i:02}" for i in range(20)]
    assert 'href="/console/channels?p=2"' in first.text and "Page 1 of 2" in first.text
    second = await console.get("/console/channels?p=2")
    assert re.findall(r'>(svc-\d\d)</a>', second.text) == ["svc-20", "svc-21", "svc-22"]
    newest = await console.get("/console/channels?sort=newest")
    assert re.findall(r'>(svc-\d\d)</a>', newest.text)[0] == "svc-22"
    assert '<option value="newest" selected>' in newest.text
    assert 'href="/console/channels?sort=newest&amp;p=2"' in newest.text
    found = await console.get("/console/channels?q=svc-1")
    assert "10 channels found" in found.text
    by_description = await console.get("/console/channels?q=blue")
    assert "11 channels found" in by_description.text
    none = await console.get("/console/channels?q=nothing-like-it")
    assert "0 channels found" in none.text and "No channel matches this search." in none.text
    assert "Create your first channel" not in none.text
    odd = await console.get("/console/channels?sort=sideways&p=x")
    assert odd.status_code == 200 and "svc-00" in odd.text


async def test_editing_a_channel(api: Api, owner: Person, console: Browser) -> None:
    sre = await _team(api, owner, "SRE")
    path = await _create(console, "Payments", team_id=str(sre), is_private="on")
    form = await console.get(path + "/edit")
    assert 'value="Payments"' in form.text and f'<option value="{sre}" selected>' in form.text
    assert 'id="f-is_private" name="is_private" type="checkbox" checked' in form.text
    done = await console.post(path + "/edit", {"channel_name": "Billing", "description": "",
                                               "team_id": "0", "auto_resolve_timeout": "0",
                                               "auto_resolve_mode": "trigger"})
    assert done.status_code == 303 and done.headers["location"] == path
    stored = (await _stored(api, owner.account_id))["Billing"]
    assert (stored.team_id, stored.is_private) == (0, False)  # the unticked box is off
    assert "The channel Billing is saved." in (await console.get(path)).text
    assert [w[0] for w in await _writes(api, owner.account_id)][-2:] == [
        "channel.create", "channel.update"]


async def test_errors_are_shown_at_their_field_in_words(
        api: Api, owner: Person, console: Browser) -> None:
    await _create(console, "Payments")
    taken = await console.post("/console/channels/new", {"channel_name": "payments",
                                                         "description": "Second"})
    assert taken.status_code == 400
    assert "already exists" in _field_error(taken.text, "channel_name")
    assert "The channel is not saved: correct the field marked below." in taken.text
    assert "Invalid parameter" not in taken.text
    assert 'value="payments"' in taken.text and ">Second</textarea>" in taken.text
    too_long = await console.post("/console/channels/new", {"channel_name": "x" * 60})
    assert too_long.status_code == 400
    assert _field_error(too_long.text, "channel_name") == "must be at most 59 characters"
    empty = await console.post("/console/channels/new", {"channel_name": "  "})
    assert empty.status_code == 400
    assert _field_error(empty.text, "channel_name") == "is required"
    long_text = await console.post("/console/channels/new", {"channel_name": "Ok",
                                                             "description": "d" * 501})
    assert _field_error(long_text.text, "description") == "must be at most 500 characters"
    teams = [str(await _team(api, owner, f"T{i}")) for i in range(4)]
    crowded = await console.post("/console/channels/new", {"channel_name": "Ok",
                                                           "managing_team_ids": teams})
    assert _field_error(crowded.text, "managing_team_ids") == "choose at most 3"
    assert all(f'value="{t}" checked' in crowded.text for t in teams)
    timeout = await console.post("/console/channels/new", {"channel_name": "Ok",
                                                           "auto_resolve_timeout": "soon"})
    assert _field_error(timeout.text, "auto_resolve_timeout") == "must be a whole number"
    assert set(await _stored(api, owner.account_id)) == {"Payments"}
    zh = await console.post("/console/channels/new", {"channel_name": "x" * 60}, headers=ZH)
    assert "新建协作空间" in zh.text


async def test_archiving_enabling_and_deleting(api: Api, owner: Person,
                                              console: Browser) -> None:
    path = await _create(console, "Payments")
    page = await console.get(path)
    assert f'action="{path}/disable"' in page.text and f'action="{path}/enable"' not in page.text
    archived = await console.post(path + "/disable")
    assert archived.status_code == 303 and archived.headers["location"] == path
    assert (await _stored(api, owner.account_id))["Payments"].status == "disabled"
    page = await console.get(path)
    assert "This channel is archived" in page.text and f'action="{path}/enable"' in page.text
    listed = await console.get("/console/channels")
    assert "Archived" in listed.text
    enabled = await console.post(path + "/enable")
    assert enabled.status_code == 303
    assert (await _stored(api, owner.account_id))["Payments"].status == "enabled"
    confirm = await console.get(path + "/delete")
    assert confirm.status_code == 200 and "Delete the channel Payments?" in confirm.text
    gone = await console.post(path + "/delete")
    assert gone.status_code == 303 and gone.headers["location"] == "/console/channels"
    assert "The channel Payments is deleted." in (await console.get("/console/channels")).text
    assert (await _stored(api, owner.account_id))["Payments"].status == "deleted"
    # A deleted channel's page still explains it, without any control; its forms are gone.
    page = await console.get(path)
    assert page.status_code == 200 and "This channel was deleted" in page.text
    assert "/edit" not in page.text and "/integrations/new" not in page.text
    assert (await console.get(path + "/edit")).status_code == 400
    assert [(op, cred) for op, cred, _ in await _writes(api, owner.account_id)] == [
        ("channel.create", "session"), ("channel.disable", "session"),
        ("channel.enable", "session"), ("channel.delete", "session")]


async def test_a_plain_member_reads_without_controls_and_forged_posts_are_refused(
        api: Api, owner: Person, console: Browser) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    path = await _create(console, "Payments")
    b = await signed_in(api, plain)
    listed = await b.get("/console/channels")
    assert listed.status_code == 200 and "Payments" in listed.text
    assert 'href="/console/channels"' in listed.text  # offered in the navigation
    assert "/console/channels/new" not in listed.text
    page = await b.get(path)
    assert page.status_code == 200
    for control in ("/edit", "/delete", "/disable", "/integrations/new",
                    "/escalation-rules/new"):
        assert path + control not in page.text, control
    for form in ("/console/channels/new", path + "/edit", path + "/delete"):
        answer = await b.get(form)
        assert answer.status_code == 403 and "Not allowed" in answer.text
    refused = [
        await b.post("/console/channels/new", {"channel_name": "Rogue"}),
        await b.post(path + "/edit", {"channel_name": "Renamed"}),
        await b.post(path + "/disable"),
        await b.post(path + "/delete"),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    assert set(await _stored(api, owner.account_id)) == {"Payments"}
    assert [(op, out) for op, _, out in await _writes(api, owner.account_id)] == [
        ("channel.create", "OK"), ("channel.create", "AccessDenied"),
        ("channel.update", "AccessDenied"), ("channel.disable", "AccessDenied"),
        ("channel.delete", "AccessDenied")]
    await b.aclose()


async def test_a_private_channel_is_hidden_from_those_outside_its_teams(
        api: Api, owner: Person, console: Browser) -> None:
    plain = await new_member(api, owner, name="Plain", builtin="member")
    sre = await _team(api, owner, "SRE")
    path = await _create(console, "Secret ops", team_id=str(sre), is_private="on")
    b = await signed_in(api, plain)
    assert "Secret ops" not in (await b.get("/console/channels")).text
    assert (await b.get(path)).status_code == 400
    await b.aclose()


async def test_another_account_s_channel_is_not_found(
        api: Api, owner: Person, other_owner: Person, console: Browser) -> None:
    await _create(console, "Acme Ops")
    theirs = await signed_in(api, other_owner)
    foreign = await _create(theirs, "Globex Ops")
    assert "Globex Ops" not in (await console.get("/console/channels")).text
    for method, suffix in (("get", ""), ("get", "/edit"), ("get", "/delete"),
                           ("post", "/edit"), ("post", "/disable"), ("post", "/enable"),
                           ("post", "/delete")):
        answer = await (console.get(foreign + suffix) if method == "get" else
                        console.post(foreign + suffix, {"channel_name": "Taken over"}))
        assert answer.status_code == 400, (method, suffix)
        assert "Globex Ops" not in answer.text
    assert (await console.get("/console/channels/not-a-number")).status_code == 400
    stored = (await _stored(api, other_owner.account_id))["Globex Ops"]
    assert stored.status == "enabled"
    await theirs.aclose()


async def test_a_post_without_the_csrf_token_is_refused(
        api: Api, owner: Person, console: Browser) -> None:
    path = await _create(console, "Payments")
    forged = [
        await console.post("/console/channels/new", {"channel_name": "Forged"}, csrf=False),
        await console.post(path + "/edit", {"channel_name": "Forged"}, csrf=False),
        await console.post(path + "/disable", csrf=False),
        await console.post(path + "/delete", csrf=False),
    ]
    assert [r.status_code for r in forged] == [403, 403, 403, 403]
    assert (await _stored(api, owner.account_id))["Payments"].status == "enabled"


async def test_hostile_names_are_escaped(api: Api, owner: Person, console: Browser) -> None:
    team_id = await _team(api, owner, HOSTILE[:39])
    path = await _create(console, HOSTILE, description=HOSTILE, team_id=str(team_id))
    seeded = await ok(api, "/integration/create", {
        "channel_id": int(path.rsplit("/", 1)[1]), "integration_name": HOSTILE[:39]}, owner)
    await push(api, seeded["integration_key"], title=HOSTILE)
    for page_path in ("/console/channels", path, path + "/edit", path + "/delete"):
        page = await console.get(page_path)
        assert page.status_code == 200, page_path
        assert "<img" not in page.text, page_path
        assert "&lt;img" in page.text, page_path
