"""Actions of the incident page: each one calls the same lifecycle service as the API, so it
changes the incident as the API's operation would, leaves the same feed entry (by the
signed-in person) and one audit row with the credential "session". Refusals are the
service's: a member without incident_manage gets 403, a Closed incident cannot be
acknowledged, and the message shows by the form."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import audit_rows, feed, info, ok, seed

pytestmark = pytest.mark.anyio

Check = Callable[[dict[str, Any]], None]


@dataclass
class Case:
    action: str
    form: dict[str, Any]
    feed_type: str | None  # None: the change writes no feed entry of its own
    operation: str
    check: Check
    before: str = ""  # what the incident goes through first, through the API


def _progress(wanted: str) -> Check:
    def check(got: dict[str, Any]) -> None:
        assert got["progress"] == wanted

    return check


def _field(name: str, wanted: Any) -> Check:
    def check(got: dict[str, Any]) -> None:
        assert got[name] == wanted, got[name]

    return check


CASES = [
    Case("ack", {}, "i_ack", "incident.ack", _progress("Processing")),
    Case("unack", {}, "i_unack", "incident.unack", _progress("Triggered"), before="ack"),
    Case("resolve", {}, "i_rslv", "incident.resolve", _progress("Closed")),
    Case("reopen", {"reason": "it is back"}, "i_reopen", "incident.reopen",
         _progress("Triggered"), before="resolve"),
    Case("comment", {"comment": "looking into it"}, "i_comm", "incident.comment",
         _progress("Triggered")),
    Case("snooze", {"minutes": "30"}, "i_snooze", "incident.snooze",
         lambda got: None if got["snoozed_before"] > 0 else pytest.fail("not snoozed")),
    Case("severity", {"incident_severity": "Info"}, "i_r_severity", "incident.reset",
         _field("incident_severity", "Info")),
    Case("edit", {"title": "disk full on db-8", "description": "the big one"}, "i_r_title",
         "incident.reset", _field("title", "disk full on db-8")),
    Case("field", {"field_name": "service", "field_kind": "text",
                   "field_value": "checkout"}, "i_r_field", "incident.field.reset",
         _field("fields", {"service": "checkout"})),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.action)
async def test_an_action_changes_the_incident_as_the_api_would(
        api: Api, owner: Person, console: Browser, case: Case) -> None:
    await ok(api, "/field/create", {"field_name": "service", "field_type": "text"}, owner)
    seeded = await seed(api, owner)
    incident_id = seeded.incident_id
    if case.before:
        await ok(api, f"/incident/{case.before}", {"incident_ids": [incident_id]}, owner)
    entries_before = len(await feed(api, owner, incident_id))
    rows_before = len(await audit_rows(api, owner.account_id))

    done = await console.post(f"/console/incidents/{incident_id}/{case.action}", case.form)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"/console/incidents/{incident_id}"
    back = await console.get(done.headers["location"])
    assert back.status_code == 200 and 'class="flash' in back.text

    case.check(await info(api, owner, incident_id))
    entries = await feed(api, owner, incident_id)
    new = entries[: len(entries) - entries_before]  # newest first
    assert case.feed_type in [e["type"] for e in new]
    assert all(e["creator_id"] == owner.person_id for e in new)
    [row] = (await audit_rows(api, owner.account_id))[rows_before:]
    assert (row.operation, row.credential, row.member_id) == (
        case.operation, "session", owner.person_id)
    assert incident_id in json.loads(row.target_ids)


async def test_assign_add_responders_and_merge(api: Api, owner: Person,
                                               console: Browser) -> None:
    helper = await new_member(api, owner, name="Helper")
    other = await new_member(api, owner, name="Other")
    seeded = await seed(api, owner)
    incident_id = seeded.incident_id
    page = await console.get(f"/console/incidents/{incident_id}")
    assert f'<option value="{helper.person_id}">Helper</option>' in page.text

    rows_before = len(await audit_rows(api, owner.account_id))
    done = await console.post(f"/console/incidents/{incident_id}/assign",
                              {"person_ids": str(helper.person_id)})
    assert done.status_code == 303
    [row] = (await audit_rows(api, owner.account_id))[rows_before:]
    assert (row.operation, row.credential) == ("incident.assign", "session")
    got = await info(api, owner, incident_id)
    assert got["assigned_to"]["person_ids"] == [helper.person_id]
    assert helper.person_id in [r["person_id"] for r in got["responders"]]

    done = await console.client.post(
        f"/console/incidents/{incident_id}/responders",
        data={"responder_ids": [str(other.person_id)], "csrf_token": console.csrf_token})
    assert done.status_code == 303
    got = await info(api, owner, incident_id)
    assert other.person_id in [r["person_id"] for r in got["responders"]]
    added = [e for e in await feed(api, owner, incident_id) if e["type"] == "i_a_rspd"]
    assert added[0]["detail"]["to"] == [other.person_id]
    assert added[0]["creator_id"] == owner.person_id
    row = (await audit_rows(api, owner.account_id))[-1]
    assert (row.operation, row.credential) == ("incident.responder.add", "session")
    assert incident_id in json.loads(row.target_ids)

    target = (await ok(api, "/incident/create", {"title": "the main one",
                                                 "incident_severity": "Warning"}, owner))
    rows_before = len(await audit_rows(api, owner.account_id))
    done = await console.post(f"/console/incidents/{incident_id}/merge",
                              {"target_incident_id": target["incident_id"],
                               "merge_comment": "same cause"})
    assert done.status_code == 303
    merged = await info(api, owner, incident_id)
    assert merged["progress"] == "Closed" and merged["merged_into"] == target["incident_id"]
    [row] = (await audit_rows(api, owner.account_id))[rows_before:]
    assert (row.operation, row.credential) == ("incident.merge", "session")
    page = await console.get(f"/console/incidents/{incident_id}")
    assert f'href="/console/incidents/{target["incident_id"]}"' in page.text


async def test_htmx_gets_the_incident_region_back(api: Api, owner: Person,
                                                  console: Browser) -> None:
    seeded = await seed(api, owner)
    done = await console.client.post(
        f"/console/incidents/{seeded.incident_id}/ack",
        headers={"HX-Request": "true", "X-CSRF-Token": console.csrf_token})
    assert done.status_code == 200
    assert done.text.lstrip().startswith("<div id=\"incident\"")
    assert "<html" not in done.text  # a fragment, not the page
    assert "Incident acknowledged." in done.text and "Processing" in done.text
    assert "acknowledged" in done.text.split('id="timeline-h"', 1)[1]


async def test_a_refused_action_shows_the_service_s_message_in_place(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    incident_id = seeded.incident_id
    await ok(api, "/incident/resolve", {"incident_ids": [incident_id]}, owner)
    # The page offers no Acknowledge for a Closed incident; a stale page may still send it.
    refused = await console.post(f"/console/incidents/{incident_id}/ack")
    assert refused.status_code == 400
    assert "only Triggered incidents can be acknowledged" in refused.text
    assert 'role="alert"' in refused.text
    assert (await info(api, owner, incident_id))["progress"] == "Closed"
    # In place with htmx: the region, saying no.
    refused = await console.client.post(
        f"/console/incidents/{incident_id}/ack",
        headers={"HX-Request": "true", "X-CSRF-Token": console.csrf_token})
    assert refused.status_code == 200
    assert "only Triggered incidents can be acknowledged" in refused.text


async def test_the_message_is_localized(api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    await ok(api, "/incident/resolve", {"incident_ids": [seeded.incident_id]}, owner)
    english = await console.post(f"/console/incidents/{seeded.incident_id}/ack")
    chinese = await console.post(f"/console/incidents/{seeded.incident_id}/ack",
                                 headers={"Accept-Language": "zh-CN"})
    assert chinese.status_code == 400
    message = api.runtime.translator.render(
        "zh_CN", "Invalid parameter {field}: {reason}: {ids}",
        {"field": "incident_ids", "reason": "only Triggered incidents can be acknowledged",
         "ids": seeded.incident_id})
    assert message != "Invalid parameter" and message in chinese.text.replace("&#39;", "'")
    assert message not in english.text


async def test_a_form_error_is_shown_by_its_field_keeping_the_input(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    bad = await console.post(f"/console/incidents/{seeded.incident_id}/snooze",
                             {"minutes": "5000"})
    assert bad.status_code == 400
    assert 'id="e-snooze-minutes"' in bad.text and "must be at most 1440" in bad.text
    assert 'value="5000" aria-invalid="true"' in bad.text
    assert "<details open>" in bad.text  # the snooze form is open again
    bad = await console.post(f"/console/incidents/{seeded.incident_id}/reopen", {})
    assert bad.status_code == 400
    assert (await info(api, owner, seeded.incident_id))["snoozed_before"] == 0
    short = await console.post(f"/console/incidents/{seeded.incident_id}/edit",
                               {"title": "ab", "description": "kept text"})
    assert short.status_code == 400
    assert 'id="e-edit-title"' in short.text and ">kept text</textarea>" in short.text


async def test_a_member_without_incident_manage_is_refused_by_the_service(
        api: Api, owner: Person) -> None:
    seeded = await seed(api, owner)
    incident_id = seeded.incident_id
    reader = await signed_in(api, await new_member(api, owner, name="Reader"))
    rows_before = len(await audit_rows(api, owner.account_id))
    entries_before = await feed(api, owner, incident_id)
    for action, form in (("ack", {}), ("resolve", {}), ("comment", {"comment": "hi"}),
                         ("severity", {"incident_severity": "Info"})):
        forged = await reader.post(f"/console/incidents/{incident_id}/{action}", form)
        assert forged.status_code == 403, (action, forged.text)
    got = await info(api, owner, incident_id)
    assert got["progress"] == "Triggered" and got["incident_severity"] == "Critical"
    assert await feed(api, owner, incident_id) == entries_before
    # Each refusal is recorded with its outcome, as the API records a refused call.
    refused = (await audit_rows(api, owner.account_id))[rows_before:]
    assert [(r.operation, r.outcome, r.credential) for r in refused] == [
        (op, "AccessDenied", "session") for op in (
            "incident.ack", "incident.resolve", "incident.comment", "incident.reset")]
    await reader.aclose()


async def test_an_action_without_the_csrf_token_is_refused(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    forged = await console.post(f"/console/incidents/{seeded.incident_id}/ack", csrf=False)
    assert forged.status_code == 403
    assert (await info(api, owner, seeded.incident_id))["progress"] == "Triggered"


async def test_an_untouched_description_sent_with_crlf_is_not_a_change(
        api: Api, owner: Person, console: Browser) -> None:
    seeded = await seed(api, owner)
    await ok(api, "/incident/reset", {"incident_id": seeded.incident_id,
                                      "description": "line one\nline two"}, owner)
    done = await console.post(f"/console/incidents/{seeded.incident_id}/edit",
                              {"title": "disk full on db-7",
                               "description": "line one\r\nline two"})
    assert done.status_code == 303
    types = [e["type"] for e in await feed(api, owner, seeded.incident_id)]
    assert types.count("i_r_desc") == 1  # the API's edit only
