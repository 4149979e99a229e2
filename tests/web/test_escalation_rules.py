"""A channel's escalation rules in the console: the list in priority order, the form that
writes a rule of layers without JSON (what it stores is what the API stores), editing, errors
at their field, the default template, whom each layer pages now, enabling, disabling and
deleting, permissions, and other accounts' ids."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.dispatch import escalate_rule
from dutyline.db.tables.platform import audit_log
from tests.dispatch.support import PRESET_TEMPLATE, create_rule, layer, make_channel, rule_body
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in

pytestmark = pytest.mark.anyio


def _base(channel_id: int) -> str:
    return f"/console/channels/{channel_id}/escalation-rules"


async def _stored(api: Api, rule_id: str) -> dict[str, Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        row = (await conn.execute(select(escalate_rule).where(
            escalate_rule.c.rule_id == rule_id))).one()
    keep = ("rule_name", "description", "priority", "aggr_window", "template_id", "layers",
            "time_filters", "filters", "status")
    return {k: getattr(row, k) for k in keep}


async def _make_team(api: Api, owner: Person, name: str, *people: Person) -> int:
    made = await api.call("/team/upsert", {"team_name": name,
                                           "person_ids": [p.person_id for p in people]},
                          key=owner.key)
    assert made.status == 200, made.body
    return int(made.data["team_id"])


def _two_layer_form(ada: Person, bob: Person, team_id: int) -> dict[str, Any]:
    return {
        "rule_name": "Checkout paging", "description": "primary then the team",
        "priority": "3", "aggr_window": "60", "template_id": "",
        "layers[0].target.person_ids": [str(ada.person_id)],
        "layers[0].how": "preference",
        "layers[0].notify_step": "5", "layers[0].max_times": "2",
        "layers[0].escalate_window": "15",
        "layers[1].target.team_ids": [str(team_id)],
        "layers[1].emails": "boss@example.com\nlead@example.com",
        "layers[1].how": "channels",
        "layers[1].target.by.critical": ["sms", "email"],
        "layers[1].target.by.warning": ["email"],
        "layers[1].notify_step": "10", "layers[1].max_times": "0",
        "layers[1].escalate_window": "30", "layers[1].force_escalate": "on",
        "time_filters[0].start": "09:00", "time_filters[0].end": "18:00",
        "time_filters[0].repeat": ["1", "2", "3", "4", "5"],
        "time_filters[1].start": "", "time_filters[1].end": "",
        "filters[0][0].key": "severity", "filters[0][0].oper": "IN",
        "filters[0][0].vals": "Critical, Warning",
        "filters[0][1].key": "", "filters[0][1].vals": "",
        "filters[1][0].key": "labels.env", "filters[1][0].oper": "NOTIN",
        "filters[1][0].vals": "dev",
    }


async def test_a_two_layer_rule_made_by_form_is_stored_as_the_api_stores_it(
        api: Api, owner: Person, console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    bob = await new_member(api, owner, name="Bob")
    team_id = await _make_team(api, owner, "SRE", bob)
    channel_id = await make_channel(api, owner)
    base = _base(channel_id)
    form = await console.get(base + "/new")
    assert form.status_code == 200, form.text
    assert f'name="layers[0].target.person_ids" value="{ada.person_id}"' in form.text
    done = await console.post(base + "/new", _two_layer_form(ada, bob, team_id))
    assert done.status_code == 303, done.text
    rule_id = done.headers["location"].rsplit("/", 1)[1]
    assert done.headers["location"] == f"{base}/{rule_id}"
    by_form = await _stored(api, rule_id)

    body = rule_body(channel_id, [
        {"target": {"person_ids": [ada.person_id], "by": {"follow_preference": True}},
         "notify_step": 5, "max_times": 2, "escalate_window": 15},
        {"target": {"team_ids": [team_id], "emails": ["boss@example.com", "lead@example.com"],
                    "by": {"critical": ["sms", "email"], "warning": ["email"]}},
         "notify_step": 10, "max_times": 0, "escalate_window": 30, "force_escalate": True}],
        rule_name="Checkout paging", description="primary then the team", priority=3,
        aggr_window=60,
        time_filters=[{"start": "09:00", "end": "18:00", "repeat": [1, 2, 3, 4, 5]}],
        filters=[[{"key": "severity", "oper": "IN", "vals": ["Critical", "Warning"]}],
                 [{"key": "labels.env", "oper": "NOTIN", "vals": ["dev"]}]])
    by_api = await _stored(api, await create_rule(api, owner, body))
    assert by_form == by_api
    # No template chosen: the account's default, the preset.
    assert by_form["template_id"] == PRESET_TEMPLATE
    async with api.runtime.db.transaction(write=False) as conn:
        audited = [(r.operation, r.credential) for r in await conn.execute(
            select(audit_log.c.operation, audit_log.c.credential).where(
                audit_log.c.account_id == owner.account_id, audit_log.c.is_write))]
    assert ("channel.escalate.rule.create", "session") in audited

    page = await console.get(done.headers["location"])
    assert page.status_code == 200
    assert "<h1>Checkout paging</h1>" in page.text
    assert "Layer 1" in page.text and "Layer 2" in page.text
    listed = await console.get(base)
    assert listed.status_code == 200 and "Checkout paging" in listed.text


async def test_the_service_uses_the_default_template_when_none_is_given(
        api: Api, owner: Person) -> None:
    """The console's form names no template by default; the API's request names one (the
    reference requires it), so the default is the service's, reached from the form."""
    channel_id = await make_channel(api, owner)
    body = rule_body(channel_id, [layer(person_ids=[owner.person_id])])
    del body["template_id"]
    refused = await api.call("/channel/escalate/rule/create", body, key=owner.key)
    assert refused.status == 400 and "template_id" in str(refused.body)
    console = await signed_in(api, owner)
    done = await console.post(_base(channel_id) + "/new", {
        "rule_name": "Defaulted", "layers[0].target.person_ids": [str(owner.person_id)],
        "layers[0].how": "preference"})
    assert done.status_code == 303, done.text
    rule_id = done.headers["location"].rsplit("/", 1)[1]
    assert (await _stored(api, rule_id))["template_id"] == PRESET_TEMPLATE
    # Edited back to "the default" from another template, it is the preset again.
    made = await api.call("/template/create", {"template_name": "Mine", "sms": "x"},
                          key=owner.key)
    mine = made.data["template_id"]
    form = await console.get(f"{_base(channel_id)}/{rule_id}/edit")
    assert f'<option value="{mine}">Mine</option>' in form.text
    await console.post(f"{_base(channel_id)}/{rule_id}/edit", {
        "rule_name": "Defaulted", "template_id": mine,
        "layers[0].target.person_ids": [str(owner.person_id)]})
    assert (await _stored(api, rule_id))["template_id"] == mine
    await console.post(f"{_base(channel_id)}/{rule_id}/edit", {
        "rule_name": "Defaulted", "template_id": "",
        "layers[0].target.person_ids": [str(owner.person_id)]})
    assert (await _stored(api, rule_id))["template_id"] == PRESET_TEMPLATE
    await console.aclose()


async def test_editing_keeps_what_the_form_does_not_show_and_changes_the_rest(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [
        layer(person_ids=[owner.person_id], max_times=1, notify_step=0.5),
        layer(emails=["x@example.com"], by={"info": ["email"]},
              webhooks=[{"type": "slack", "settings": {
                  "url": "https://hooks.example.com/services/T0/B0/XXXXSECRET",
                  "secret": "s3cret"}}])],
        time_filters=[{"start": "22:00", "end": "06:00", "repeat": [0, 6]}]))
    before = await _stored(api, rule_id)
    base = _base(channel_id)
    form = await console.get(f"{base}/{rule_id}/edit")
    assert form.status_code == 200
    assert 'value="0.5"' in form.text
    assert 'name="layers[1].target.webhooks[0].settings.url"' in form.text
    assert "s3cret" not in form.text
    # The form as shown, posted back, stores the same rule (the sealed secret kept).
    posted = _fields(form.text)
    same = await console.post(f"{base}/{rule_id}/edit", posted)
    assert same.status_code == 303, same.text
    assert await _stored(api, rule_id) == before
    # A change: a new name, the first layer removed.
    posted["rule_name"] = "Renamed"
    shown = await console.post(f"{base}/{rule_id}/edit", {**posted, "remove_layer": "0"})
    assert shown.status_code == 200 and "Layer 2" not in shown.text
    saved = await console.post(f"{base}/{rule_id}/edit", _fields(shown.text))
    assert saved.status_code == 303
    after = await _stored(api, rule_id)
    assert after["rule_name"] == "Renamed"
    assert '"emails":["x@example.com"]' in after["layers"]
    assert "person_ids" not in after["layers"]
    # The webhook's layer moved up: its sealed secret and its URL's token went with it.
    assert "s3cret" not in after["layers"] and '"secret":' in after["layers"]
    assert "XXXXSECRET" in after["layers"]
    # The audit log's copy of the form keeps the webhook's token out of its URL.
    async with api.runtime.db.transaction(write=False) as conn:
        bodies = [r.body for r in await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id, audit_log.c.credential == "session"))]
    assert bodies and all("XXXXSECRET" not in str(b) for b in bodies)
    # Typed anew, the address is kept out of the audit log's copy too.
    posted = _fields((await console.get(f"{base}/{rule_id}/edit")).text)
    posted["layers[0].target.webhooks[0].settings.url"] = [
        "https://hooks.example.com/services/T1/B1/YYYYSECRET"]
    assert (await console.post(f"{base}/{rule_id}/edit", posted)).status_code == 303
    async with api.runtime.db.transaction(write=False) as conn:
        bodies = [r.body for r in await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id, audit_log.c.credential == "session"))]
    assert "YYYYSECRET" in (await _stored(api, rule_id))["layers"]
    assert all("YYYYSECRET" not in str(b) for b in bodies)


async def test_add_a_layer_without_javascript_keeps_what_was_typed(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await make_channel(api, owner)
    shown = await console.post(_base(channel_id) + "/new", {
        "rule_name": "Typed", "layers[0].target.person_ids": [str(owner.person_id)],
        "layers[0].how": "preference", "layers[0].notify_step": "7", "add_layer": "1"})
    assert shown.status_code == 200
    assert 'value="Typed"' in shown.text and 'value="7"' in shown.text
    assert "Layer 2" in shown.text and "Remove layer 2" in shown.text
    assert re.search(rf'value="{owner.person_id}" checked', shown.text)


async def test_errors_show_at_their_field_in_words(api: Api, owner: Person,
                                                  console: Browser) -> None:
    channel_id = await make_channel(api, owner)
    base = _base(channel_id)
    nobody = await console.post(base + "/new", {
        "rule_name": "Half", "layers[0].target.person_ids": [str(owner.person_id)],
        "layers[1].how": "preference", "layers[1].notify_step": "10"})
    assert nobody.status_code == 400
    text = html.unescape(nobody.text)
    assert 'id="e-layers-1-target"' in nobody.text
    assert ("Layer 2: choose at least one person, team, schedule, e-mail address or webhook"
            in text)
    assert 'value="Half"' in nobody.text
    slow = await console.post(base + "/new", {
        "rule_name": "Slow", "layers[0].target.person_ids": [str(owner.person_id)],
        "layers[0].notify_step": "0.1"})
    assert slow.status_code == 400
    assert re.search(r'id="e-layers-0-notify_step">Layer 1: must be at least 0.5<', slow.text)
    window = await console.post(base + "/new", {
        "rule_name": "Late", "layers[0].target.person_ids": [str(owner.person_id)],
        "time_filters[0].start": "", "time_filters[0].end": "",
        "time_filters[1].start": "25:00", "time_filters[1].end": "06:00"})
    assert window.status_code == 400
    assert 'id="e-time_filters-1-start"' in window.text
    named = await console.post(base + "/new", {
        "rule_name": "", "layers[0].target.person_ids": [str(owner.person_id)]})
    assert named.status_code == 400 and 'id="e-rule_name">is required<' in named.text
    email = await console.post(base + "/new", {
        "rule_name": "Mail", "layers[0].emails": "not-an-address"})
    assert email.status_code == 400
    assert 'id="e-layers-0-target-emails">Layer 1: is not an e-mail address<' in email.text
    async with api.runtime.db.transaction(write=False) as conn:
        assert list(await conn.execute(select(escalate_rule.c.rule_id))) == []


async def test_who_would_be_paged_now_resolves_every_layer(api: Api, owner: Person,
                                                           console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    bob = await new_member(api, owner, name="Bob")
    cid = await new_member(api, owner, name="Cid")
    team_id = await _make_team(api, owner, "SRE", bob, cid)
    now = int(api.runtime.clock.now())
    made = await api.call("/schedule/create", {
        "schedule_name": "Primary", "layers": [{
            "layer_name": "L1", "mode": 0, "layer_start": now - 3600,
            "rotation_unit": "day", "rotation_value": 1,
            "groups": [{"group_name": "g", "members": [{"role_id": 0,
                                                        "person_ids": [ada.person_id]}]}]}]},
        key=owner.key)
    assert made.status == 200, made.body
    schedule_id = int(made.data["schedule_id"])
    channel_id = await make_channel(api, owner)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [
        layer(schedule_to_role_ids={str(schedule_id): []}),
        layer(team_ids=[team_id], person_ids=[owner.person_id])]))
    page = await console.get(f"{_base(channel_id)}/{rule_id}")
    assert page.status_code == 200, page.text
    first, second = page.text.split('id="layer-2"')
    now_1 = first.split("Who would be paged now")[1].split("Targets")[0]
    assert "Ada" in now_1 and "Bob" not in now_1
    assert "on call now: Ada" in first
    now_2 = second.split("Who would be paged now")[1].split("Targets")[0]
    assert all(n in now_2 for n in ("Bob", "Cid")) and "Ada" not in now_2
    # The same answer as the engine's own resolution of each layer.
    from dutyline.api.actor import Actor
    from dutyline.dispatch import service as rules
    async with api.runtime.db.transaction(write=False) as conn:
        actor = Actor(account_id=owner.account_id, person_id=owner.person_id,
                      clock=api.runtime.clock, is_admin=True)
        reach = await rules.paged_now(conn, actor, channel_id=channel_id, rule_id=rule_id)
    assert reach[0].person_ids == [ada.person_id]
    assert set(reach[1].person_ids) == {owner.person_id, bob.person_id, cid.person_id}


async def test_enable_disable_and_delete_with_confirmation(api: Api, owner: Person,
                                                          console: Browser) -> None:
    channel_id = await make_channel(api, owner)
    base = _base(channel_id)
    late = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])],
                                                   priority=9, rule_name="late"))
    early = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])],
                                                    priority=1, rule_name="early"))
    listed = (await console.get(base)).text
    assert listed.index(f"{base}/{early}") < listed.index(f"{base}/{late}")
    off = await console.post(f"{base}/{late}/disable", {"back": "list"})
    assert off.status_code == 303 and off.headers["location"] == base
    assert (await _stored(api, late))["status"] == "disabled"
    on = await console.post(f"{base}/{late}/enable")
    assert on.headers["location"] == f"{base}/{late}"
    assert (await _stored(api, late))["status"] == "enabled"
    confirm = await console.get(f"{base}/{late}/delete")
    assert confirm.status_code == 200 and "Delete the escalation rule late?" in confirm.text
    gone = await console.post(f"{base}/{late}/delete")
    assert gone.status_code == 303 and gone.headers["location"] == base
    missing = await console.get(f"{base}/{late}")
    assert missing.status_code == 400


async def test_a_member_reads_rules_but_may_not_change_them(api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    rule_id = await create_rule(api, owner, rule_body(channel_id, [layer(emails=["a@x.io"])]))
    member = await new_member(api, owner, name="Reader", builtin="member")
    reader = await signed_in(api, member)
    base = _base(channel_id)
    listed = await reader.get(base)
    assert listed.status_code == 200 and "New escalation rule" not in listed.text
    assert (await reader.get(f"{base}/{rule_id}")).status_code == 200
    for path in (base + "/new", f"{base}/{rule_id}/edit", f"{base}/{rule_id}/delete"):
        page = await reader.get(path)
        assert page.status_code == 403 and "Not allowed" in page.text, path
    for path in (base + "/new", f"{base}/{rule_id}/edit", f"{base}/{rule_id}/disable",
                 f"{base}/{rule_id}/delete"):
        refused = await reader.post(path, {"rule_name": "x",
                                           "layers[0].emails": "a@x.io"})
        assert refused.status_code == 403, path
    assert (await _stored(api, rule_id))["status"] == "enabled"
    await reader.aclose()


async def test_another_accounts_ids_are_not_found(api: Api, owner: Person,
                                                  other_owner: Person,
                                                  console: Browser) -> None:
    theirs = await make_channel(api, other_owner)
    their_rule = await create_rule(api, other_owner,
                                   rule_body(theirs, [layer(emails=["a@x.io"])]))
    mine = await make_channel(api, owner)
    for path in (_base(theirs), _base(theirs) + "/new", f"{_base(theirs)}/{their_rule}",
                 f"{_base(mine)}/{their_rule}", f"{_base(mine)}/{their_rule}/edit",
                 f"{_base(mine)}/nothex", "/console/channels/x/escalation-rules"):
        page = await console.get(path)
        assert page.status_code == 400 and "not found" in page.text, path
    moved = await console.post(f"{_base(mine)}/{their_rule}/delete")
    assert moved.status_code == 400
    other = await new_member(api, other_owner, name="Stranger")
    named = await console.post(_base(mine) + "/new", {
        "rule_name": "x", "layers[0].target.person_ids": [str(other.person_id)]})
    assert named.status_code == 400 and "not found" in named.text


# --- the form's fields as a browser posts them ---------------------------------------------------


def _attrs(text: str) -> dict[str, str]:
    bare = dict.fromkeys(re.findall(r"\s([\w-]+)(?=[\s>]|$)", text), "")
    return bare | {k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', text)}


def _fields(page: str) -> dict[str, Any]:
    """What a browser posts of the page's rule form as it is shown (no button pressed)."""
    form = page[page.index('class="rule-form"'):]
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"<input\b([^>]*)>|<textarea\b([^>]*)>(.*?)</textarea>|"
                         r"<select\b([^>]*)>(.*?)</select>", form, re.DOTALL):
        if m[1] is not None:
            a = _attrs(m[1])
            if "name" not in a or (a.get("type") == "hidden" and a["name"] == "csrf_token"):
                continue
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    out.setdefault(a["name"], []).append(a.get("value", "on"))
                continue
            out.setdefault(a["name"], []).append(a.get("value", ""))
        elif m[2] is not None:
            a = _attrs(m[2])
            out.setdefault(a["name"], []).append(html.unescape(m[3]))
        else:
            a = _attrs(m[4])
            picked = re.search(r'<option value="([^"]*)"[^>]*\sselected', m[5])
            first = re.search(r'<option value="([^"]*)"', m[5])
            chosen = picked or first
            out.setdefault(a["name"], []).append(html.unescape(chosen[1]) if chosen else "")
    return out


async def test_schedules_and_their_roles_are_chosen_by_box(api: Api, owner: Person,
                                                           console: Browser) -> None:
    ada = await new_member(api, owner, name="Ada")
    bob = await new_member(api, owner, name="Bob")
    now = int(api.runtime.clock.now())
    made = await api.call("/schedule/create", {
        "schedule_name": "Primary", "layers": [{
            "layer_name": "L1", "mode": 0, "layer_start": now - 3600,
            "rotation_unit": "day", "rotation_value": 1,
            "groups": [{"group_name": "g", "members": [
                {"role_id": 3, "person_ids": [ada.person_id]},
                {"role_id": 4, "person_ids": [bob.person_id]}]}]}]}, key=owner.key)
    assert made.status == 200, made.body
    sid = int(made.data["schedule_id"])
    channel_id = await make_channel(api, owner)
    base = _base(channel_id)
    form = await console.get(base + "/new")
    name = f"layers[0].target.schedule_to_role_ids[{sid}]"
    assert f'name="{name}" value=""' in form.text and f'name="{name}" value="3"' in form.text
    done = await console.post(base + "/new", {
        "rule_name": "By role", name: ["3"],
        f"layers[1].target.schedule_to_role_ids[{sid}]": [""]})
    assert done.status_code == 303, done.text
    rule_id = done.headers["location"].rsplit("/", 1)[1]
    stored = await _stored(api, rule_id)
    assert f'"schedule_to_role_ids":{{"{sid}":[3]}}' in stored["layers"]
    assert f'"schedule_to_role_ids":{{"{sid}":[]}}' in stored["layers"]
    page = (await console.get(done.headers["location"])).text
    first, second = page.split('id="layer-2"')
    assert "on call now: Ada<" in first and "Bob" not in first
    assert "on call now: Ada, Bob" in second
    edit = await console.get(f"{base}/{rule_id}/edit")
    assert f'name="{name}" value="3" checked' in edit.text


def test_a_form_names_keys_of_id_maps_and_settings_objects() -> None:
    """forms.decode reads `x[12]` as the key 12 of a mapping keyed by ids, and a settings
    object whose type carries marks of its own (the webhook's) as the mapping it is."""
    from dutyline.dispatch.schemas import EscalateTarget
    from dutyline.web import forms

    target = forms.decode({"schedule_to_role_ids[8159772200778293]": ["", "3"],
                           "schedule_to_role_ids[13]": [""],
                           "webhooks[0].type": ["slack"],
                           "webhooks[0].settings.url": ["https://hooks.example.com/x"]},
                          EscalateTarget)
    assert target.schedule_to_role_ids == {8159772200778293: [3], 13: []}
    assert target.webhooks is not None
    assert target.webhooks[0].settings == {"url": "https://hooks.example.com/x"}
