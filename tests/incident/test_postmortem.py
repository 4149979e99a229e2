"""Post-mortems without a model: drafted from a closed incident's timeline, notes and alerts
into the template's sections; refused for an open incident; stored, edited, published,
listed by channel, team, status and time (by page and by cursor), deleted. Permissions,
other accounts' ids and private channels answer as the rest of the incident reads do."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.config import Settings
from dutyline.db.tables.incident_postmortem import post_mortem
from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.work import job
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.incident.conftest import Wired, wire
from tests.incident.ingest_support import all_rows
from tests.incident.postmortem_support import NOTE, closed_incident, create, info
from tests.incident.test_private_channels import _responder, _team

pytestmark = pytest.mark.anyio
START = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings, clock=clock) as client:
        yield client


@dataclass
class World:
    api: Api
    clock: FakeClock
    owner: Person
    prod: Wired


@pytest.fixture
async def w(api: Api, clock: FakeClock) -> World:
    owner = await new_account(api, "Acme")
    return World(api, clock, owner, await wire(api, owner, name="Prod"))


async def closed(w: World, title: str = "checkout errors", key: str = "k1",
                 wired: Wired | None = None) -> str:
    return await closed_incident(w.api, w.clock, w.owner,
                                 integration_key=(wired or w.prod).key, title=title,
                                 alert_key=key)


async def test_a_closed_incident_s_report_is_drafted_from_its_timeline_notes_and_alerts(
    w: World
) -> None:
    incident_id = await closed(w)
    made = await create(w.api, w.owner, [incident_id.upper()])
    assert made.status == 200, made.body
    item = made.data
    meta = item["meta"]
    expected_id = hashlib.md5(f"{w.owner.account_id}:{incident_id}".encode()).hexdigest()
    assert meta == {
        "account_id": w.owner.account_id, "title": "Post-mortem: checkout errors",
        "status": "drafting", "post_mortem_id": expected_id,
        "template_id": "post_mortem_default_tmpl_en-us", "incident_ids": [incident_id],
        "media_count": 0, "author_ids": [w.owner.person_id], "team_id": 0,
        "channel_id": w.prod.channel_id, "is_private": False, "channel_name": "Prod",
        "created_at_seconds": int(START) + 480, "updated_at_seconds": int(START) + 480,
    }
    assert item["basics"] == {
        "incidents_highest_severity": "Critical",
        "incidents_earliest_start_seconds": int(START),
        "incidents_latest_close_seconds": int(START) + 480,
        "incidents_total_duration_seconds": 480,
        # Acknowledging made the owner a responder.
        "responders": [{"person_id": w.owner.person_id, "assigned_at": int(START) + 60,
                        "acknowledged_at": int(START) + 60, "person_name": "Acme Owner",
                        "email": "owner@acme.example"}],
    }
    assert item["drafting"] == {"drafted_by": "template", "model_draft": "none",
                                "model": "", "error": ""}
    content = item["content"]["content"]
    assert item["content"]["format"] == "markdown"
    headings = [line for line in content.splitlines() if line.startswith("## ")]
    assert headings == ["## Summary", "## Timeline", "## Impact", "## Contributing factors",
                        "## Action items"]
    assert "checkout errors (Critical) in Prod: started 2023-11-14 22:13:20 UTC, closed " \
           "2023-11-14 22:21:20 UTC, 8 min 0 s" in content
    assert "- 2023-11-14 22:14:20 UTC — Acknowledged by Acme Owner" in content
    assert f"- 2023-11-14 22:16:20 UTC — Note by Acme Owner: {NOTE}" in content
    assert "- 2023-11-14 22:21:20 UTC — Closed by Acme Owner" in content
    assert "A bad release leaked connections." in content  # the root cause noted
    assert "- [Critical] checkout errors — 1 event(s)" in content  # its alert
    assert "- Resolution: Rolled back." in content
    # Stored as answered, and no drafting job without a model.
    assert (await info(w.api, w.owner, expected_id)).data == item
    assert await all_rows(w.api, job, job.c.kind == "incident.post_mortem.draft") == []
    (audited,) = await all_rows(w.api, audit_log,
                                audit_log.c.operation == "incident.post-mortem.create")
    assert expected_id in audited.target_ids and incident_id in audited.target_ids


async def test_info_answers_get_with_a_query_parameter_as_the_reference_does(w: World) -> None:
    made = (await create(w.api, w.owner, [await closed(w)])).data
    pm_id = made["meta"]["post_mortem_id"]
    got = await w.api.raw("GET", "/incident/post-mortem/info",
                          params={"app_key": w.owner.key, "post_mortem_id": pm_id})
    assert got.status_code == 200, got.text
    assert got.json()["data"] == made


async def test_an_open_incident_is_refused_and_nothing_is_stored(w: World) -> None:
    opened = await w.api.call("/incident/create", {
        "incident_severity": "Warning", "title": "slow", "channel_id": w.prod.channel_id},
        key=w.owner.key)
    incident_id = opened.data["incident_id"]
    refused = await create(w.api, w.owner, [incident_id])
    assert (refused.status, refused.code) == (400, "BadRequest")
    assert refused.message == ("A post-mortem is written for closed incidents; close "
                               f"{incident_id} first")
    # One closed and one open: refused too.
    both = await create(w.api, w.owner, [await closed(w), incident_id])
    assert (both.status, both.code) == (400, "BadRequest")
    assert await all_rows(w.api, post_mortem) == []


async def test_one_report_per_set_of_incidents_and_of_one_channel(w: World) -> None:
    first, second = await closed(w, "a", "k1"), await closed(w, "b", "k2")
    made = await create(w.api, w.owner, [second, first], title="Two outages")
    assert made.status == 200, made.body
    assert made.data["meta"]["incident_ids"] == sorted([first, second])
    assert made.data["meta"]["title"] == "Two outages"
    again = await create(w.api, w.owner, [first, second])
    assert (again.status, again.code) == (400, "BadRequest")
    assert made.data["meta"]["post_mortem_id"] in again.message
    # Each incident alone is another set.
    assert (await create(w.api, w.owner, [first])).status == 200
    other = await wire(w.api, w.owner, name="Other")
    elsewhere = await closed(w, "c", "k3", wired=other)
    mixed = await create(w.api, w.owner, [first, elsewhere])
    assert (mixed.status, mixed.code) == (400, "InvalidParameter")
    assert "incident_ids" in mixed.message
    for body in ({"incident_ids": []}, {"incident_ids": ["nothex"]},
                 {"incident_ids": [first] * 11}, {"incident_ids": [first], "title": "x" * 256}):
        bad = await w.api.call("/incident/post-mortem/create", body, key=w.owner.key)
        assert (bad.status, bad.code) == (400, "InvalidParameter"), body
    unknown = await create(w.api, w.owner, ["0123456789abcdef01234567"])
    assert (unknown.status, unknown.code) == (400, "ResourceNotFound")


async def test_editing_and_publishing(w: World, api: Api) -> None:
    pm_id = (await create(api, w.owner, [await closed(w)])).data["meta"]["post_mortem_id"]
    editor = await new_member(api, w.owner, name="Eve", builtin="admin")
    w.clock.advance(100)
    edited = await api.call("/incident/post-mortem/update", {
        "post_mortem_id": pm_id, "title": "Checkout outage", "content": "## Summary\n\nOurs.",
        "follow_ups": "- [ ] Add a canary stage"}, key=editor.key)
    assert edited.status == 200, edited.body
    meta = edited.data["meta"]
    assert (meta["title"], meta["status"]) == ("Checkout outage", "drafting")
    assert meta["author_ids"] == [w.owner.person_id, editor.person_id]
    assert meta["updated_at_seconds"] == int(START) + 580
    assert edited.data["content"]["content"] == "## Summary\n\nOurs."
    assert edited.data["follow_ups"] == "- [ ] Add a canary stage"
    published = await api.call("/incident/post-mortem/update",
                                {"post_mortem_id": pm_id, "status": "published"},
                                key=w.owner.key)
    assert published.data["meta"]["status"] == "published"
    assert published.data["content"]["content"] == "## Summary\n\nOurs."  # left as it was
    assert (await info(api, w.owner, pm_id)).data == published.data
    (row,) = await all_rows(api, post_mortem)
    assert (row.published_at, row.revision) == (int(START) + 580, 3)
    for body in ({"title": "  "}, {"status": "done"}, {"content": "x" * 200_001}):
        bad = await api.call("/incident/post-mortem/update",
                             {"post_mortem_id": pm_id, **body}, key=w.owner.key)
        assert (bad.status, bad.code) == (400, "InvalidParameter"), body
    assert (await info(api, w.owner, pm_id)).data == published.data


async def test_delete(w: World, api: Api) -> None:
    incident_id = await closed(w)
    pm_id = (await create(api, w.owner, [incident_id])).data["meta"]["post_mortem_id"]
    deleted = await api.call("/incident/post-mortem/delete", {"post_mortem_id": pm_id},
                             key=w.owner.key)
    assert (deleted.status, deleted.data) == (200, {})
    gone = await info(api, w.owner, pm_id)
    assert (gone.status, gone.code) == (400, "ResourceNotFound")
    again = await api.call("/incident/post-mortem/delete", {"post_mortem_id": pm_id},
                           key=w.owner.key)
    assert (again.status, again.code) == (400, "ResourceNotFound")
    # The same incidents may have a report again.
    assert (await create(api, w.owner, [incident_id])).data["meta"]["post_mortem_id"] == pm_id


async def _list(api: Api, who: Person, **body: Any) -> dict[str, Any]:
    reply = await api.call("/incident/post-mortem/list", body, key=who.key)
    assert reply.status == 200, reply.body
    return dict(reply.data)


def _ids(page: dict[str, Any]) -> list[str]:
    return [m["post_mortem_id"] for m in page["items"]]


async def test_list_by_status_channel_team_and_creation_time_by_page_and_cursor(
    w: World, api: Api
) -> None:
    team = await _team(api, w.owner, "Payments", [w.owner])
    payments = await wire(api, w.owner, name="Payments", team_id=team)
    made = []
    for n, wired in enumerate((w.prod, payments, w.prod)):
        incident_id = await closed(w, f"outage {n}", f"k{n}", wired=wired)
        made.append((await create(api, w.owner, [incident_id])).data["meta"])
        w.clock.advance(1000)
    a, b, c = (m["post_mortem_id"] for m in made)
    # Published is what the reference lists when no status is given.
    assert await _list(api, w.owner) == {"items": [], "total": 0, "has_next_page": False,
                                         "search_after_ctx": ""}
    drafting = await _list(api, w.owner, status="drafting")
    assert (_ids(drafting), drafting["total"]) == ([c, b, a], 3)
    assert drafting["items"][1] == made[1] and made[1]["channel_name"] == "Payments"
    assert made[1]["team_id"] == team
    assert _ids(await _list(api, w.owner, status="drafting", asc=True)) == [a, b, c]
    assert _ids(await _list(api, w.owner, status="drafting",
                            channel_ids=[w.prod.channel_id])) == [c, a]
    assert _ids(await _list(api, w.owner, status="drafting", team_ids=[team])) == [b]
    window = await _list(api, w.owner, status="drafting",
                         created_at_start_seconds=made[1]["created_at_seconds"],
                         created_at_end_seconds=made[2]["created_at_seconds"] - 1)
    assert (_ids(window), window["total"]) == ([b], 1)
    # Ordered by update time: an edit moves a report first.
    await api.call("/incident/post-mortem/update", {"post_mortem_id": a, "title": "A"},
                   key=w.owner.key)
    assert _ids(await _list(api, w.owner, status="drafting",
                            order_by="updated_at_seconds")) == [a, c, b]
    # Pages: by number, and by the cursor of the previous page.
    first = await _list(api, w.owner, status="drafting", limit=2)
    assert (_ids(first), first["total"], first["has_next_page"]) == ([c, b], 3, True)
    second = await _list(api, w.owner, status="drafting", limit=2,
                         search_after_ctx=first["search_after_ctx"])
    assert (_ids(second), second["has_next_page"], second["search_after_ctx"]) == \
        ([a], False, "")
    assert _ids(await _list(api, w.owner, status="drafting", limit=2, p=2)) == [a]
    assert _ids(await _list(api, w.owner, status="drafting", limit=0, p=0)) == [c, b, a]
    # Publishing moves it to the default list.
    await api.call("/incident/post-mortem/update", {"post_mortem_id": b,
                                                    "status": "published"}, key=w.owner.key)
    assert _ids(await _list(api, w.owner)) == [b]
    for body in ({"search_after_ctx": "junk!"}, {"status": "drafting", "asc": True,
                                                 "search_after_ctx": first["search_after_ctx"]},
                 {"created_at_start_seconds": 10, "created_at_end_seconds": 5},
                 {"order_by": "title"}, {"status": "done"}, {"limit": 101}):
        bad = await api.call("/incident/post-mortem/list", body, key=w.owner.key)
        assert (bad.status, bad.code) == (400, "InvalidParameter"), body


async def test_members_without_incident_manage_read_but_cannot_write(
    w: World, api: Api
) -> None:
    incident_id = await closed(w)
    pm = (await create(api, w.owner, [incident_id])).data
    pm_id = pm["meta"]["post_mortem_id"]
    reader = await new_member(api, w.owner, name="Rita")  # built-in member: channel_view
    assert (await info(api, reader, pm_id)).data == pm
    assert _ids(await _list(api, reader, status="drafting")) == [pm_id]
    before = await all_rows(api, post_mortem)
    for path, body in (
        ("/incident/post-mortem/create", {"incident_ids": [incident_id]}),
        ("/incident/post-mortem/update", {"post_mortem_id": pm_id, "title": "mine"}),
        ("/incident/post-mortem/delete", {"post_mortem_id": pm_id}),
    ):
        refused = await api.call(path, body, key=reader.key)
        assert (refused.status, refused.code) == (403, "AccessDenied"), path
    assert await all_rows(api, post_mortem) == before
    nobody = await new_member(api, w.owner, name="Ned", builtin=None)
    refused = await info(api, nobody, pm_id)
    assert (refused.status, refused.code) == (403, "AccessDenied")


async def test_another_account_s_ids_answer_as_unknown(w: World, api: Api) -> None:
    incident_id = await closed(w)
    pm_id = (await create(api, w.owner, [incident_id])).data["meta"]["post_mortem_id"]
    stranger = await new_account(api, "Globex")
    for path, body in (
        ("/incident/post-mortem/info", {"post_mortem_id": pm_id}),
        ("/incident/post-mortem/update", {"post_mortem_id": pm_id, "title": "ours"}),
        ("/incident/post-mortem/delete", {"post_mortem_id": pm_id}),
        ("/incident/post-mortem/create", {"incident_ids": [incident_id]}),
    ):
        refused = await api.call(path, body, key=stranger.key)
        assert (refused.status, refused.code) == (400, "ResourceNotFound"), path
    assert _ids(await _list(api, stranger, status="drafting",
                            channel_ids=[w.prod.channel_id])) == []
    (row,) = await all_rows(api, post_mortem)
    assert (row.title, row.account_id) == ("Post-mortem: checkout errors", w.owner.account_id)


async def test_a_private_channel_s_reports_are_hidden_from_members_outside_it(
    w: World, api: Api
) -> None:
    insider = await _responder(api, w.owner, "Ines")
    outsider = await _responder(api, w.owner, "Otto")
    team = await _team(api, w.owner, "Payments team", [insider])
    secret = await wire(api, w.owner, name="Secret", team_id=team, is_private=True)
    incident_id = await closed(w, "secret outage", "s1", wired=secret)
    made = await create(api, insider, [incident_id])
    assert made.status == 200, made.body
    meta = made.data["meta"]
    assert (meta["is_private"], meta["team_id"]) == (True, team)
    pm_id = meta["post_mortem_id"]
    assert (await info(api, insider, pm_id)).status == 200
    hidden = await info(api, outsider, pm_id)
    assert (hidden.status, hidden.code) == (400, "ResourceNotFound")
    assert (await _list(api, outsider, status="drafting"))["total"] == 0
    refused = await api.call("/incident/post-mortem/delete", {"post_mortem_id": pm_id},
                             key=outsider.key)
    assert (refused.status, refused.code) == (400, "ResourceNotFound")
    assert len(await all_rows(api, post_mortem)) == 1
    assert (await _list(api, w.owner, status="drafting"))["total"] == 1


async def test_stored_row(w: World, api: Api) -> None:
    pm_id = (await create(api, w.owner, [await closed(w)])).data["meta"]["post_mortem_id"]
    async with api.runtime.db.transaction(write=False) as conn:
        row = (await conn.execute(select(post_mortem).where(
            post_mortem.c.post_mortem_id == pm_id))).one()
    assert (row.status, row.model_draft, row.drafted_by, row.revision) == (
        "drafting", "none", "template", 1)


async def test_a_report_made_meanwhile_by_another_request_is_not_overwritten(
    w: World, api: Api
) -> None:
    """The existence check and the insert are apart: the insert itself refuses a second row
    of the same id (two requests for the same incidents at once)."""
    from dutyline.incident.postmortem import repository

    pm_id = (await create(api, w.owner, [await closed(w)])).data["meta"]["post_mortem_id"]
    (row,) = await all_rows(api, post_mortem)
    async with api.runtime.db.transaction() as conn:
        assert await repository.insert_post_mortem(
            conn, {**row._mapping, "title": "second"}) is False
    (kept,) = await all_rows(api, post_mortem)
    assert (kept.post_mortem_id, kept.title) == (pm_id, row.title)


async def test_refusals_are_translated(w: World, api: Api) -> None:
    opened = await api.call("/incident/create", {
        "incident_severity": "Warning", "title": "slow", "channel_id": w.prod.channel_id},
        key=w.owner.key)
    incident_id = opened.data["incident_id"]
    reply = await api.call("/incident/post-mortem/create", {"incident_ids": [incident_id]},
                           key=w.owner.key, headers={"Accept-Language": "zh-CN"})
    assert reply.body["error"]["message"] == \
        f"复盘报告只能为已关闭的故障撰写\uff0c请先关闭 {incident_id}"


def test_the_model_s_material_is_bounded() -> None:
    from dutyline.incident.postmortem import material

    long = material.Material(incidents=[], timeline=[
        material.TimelineEntry(int(START) + n, "1", "x" * 200) for n in range(1000)])
    text = material.as_prompt(long)
    assert len(text) <= material.MAX_PROMPT_CHARS + 20 and text.endswith("…[truncated]")
    assert text.startswith("Incidents:")


async def test_a_report_of_an_incident_without_a_channel_belongs_to_the_account(
    w: World, api: Api
) -> None:
    opened = await api.call("/incident/create", {"incident_severity": "Info",
                                                 "title": "manual"}, key=w.owner.key)
    incident_id = opened.data["incident_id"]
    assert (await api.call("/incident/resolve", {"incident_ids": [incident_id]},
                           key=w.owner.key)).status == 200
    meta = (await create(api, w.owner, [incident_id])).data["meta"]
    assert (meta["channel_id"], meta["channel_name"], meta["team_id"], meta["is_private"]) == (
        0, "", 0, False)
    outsider = await _responder(api, w.owner, "Otto")
    assert _ids(await _list(api, outsider, status="drafting", channel_ids=[0])) == \
        [meta["post_mortem_id"]]


async def test_redraft_without_a_model_says_how_to_configure_one(w: World, api: Api) -> None:
    pm_id = (await create(api, w.owner, [await closed(w)])).data["meta"]["post_mortem_id"]
    refused = await api.call("/incident/post-mortem/redraft", {"post_mortem_id": pm_id},
                             key=w.owner.key)
    assert (refused.status, refused.code) == (400, "BadRequest")
    assert "DUTYLINE_LLM_BASE_URL" in refused.message
    assert await all_rows(api, job, job.c.kind == "incident.post_mortem.draft") == []


async def test_the_changes_just_before_the_incident_are_in_its_report(w: World) -> None:
    from tests.incident.change_support import change, change_integration, push_change

    deploys = await change_integration(w.api, w.owner, w.prod.channel_id)
    pushed = await push_change(w.api, deploys.key, change(
        title="Deploy checkout v42", description="connection pool resized",
        start_time=int(START) - 600, type="deployment"))
    assert pushed.status == 200, pushed.body
    incident_id = await closed(w)
    made = await create(w.api, w.owner, [incident_id])
    assert made.status == 200, made.body
    content = made.data["content"]["content"]
    assert ("- 2023-11-14 22:03:20 UTC [deployment, Processing] Deploy checkout v42 — "
            "connection pool resized") in content
    assert "Changes just before:" in content
