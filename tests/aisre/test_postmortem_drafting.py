"""The model's draft of a post-mortem, with a fake OpenAI-compatible LLM on loopback: a
durable job asks it over the incident's timeline, notes and alerts (and lets it read more
through the incident tools), and writes its summary, impact and contributing factors into
the report, marked as the model's. An edit made before the answer wins; an unreadable answer
or a dead job leaves the template's draft and says why."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.work import job
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.fake_llm import Answer, Call, FakeLlm, fake_llm
from tests.incident.conftest import Wired, wire
from tests.incident.ingest_support import all_rows
from tests.incident.postmortem_support import NOTE, closed_incident, create, info

pytestmark = pytest.mark.anyio
START = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
DRAFT = {"summary": "Checkout failed for 8 minutes after release 4.2.",
         "impact": "About 3% of orders failed.",
         "contributing_factors": "A connection leak in release 4.2."}


@pytest.fixture
def llm() -> Iterator[FakeLlm]:
    with fake_llm() as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def api(settings: Settings, llm: FakeLlm, clock: FakeClock) -> AsyncIterator[Api]:
    configured = settings.with_(llm_base_url=llm.base_url, llm_api_key=llm.api_key,
                                llm_model="fake-model")
    async with make_api(configured, clock=clock) as client:
        yield client


@pytest.fixture
async def owner(api: Api) -> Person:
    return await new_account(api, "Acme")


@pytest.fixture
async def prod(api: Api, owner: Person) -> Wired:
    return await wire(api, owner, name="Prod")


async def run_jobs(api: Api) -> list[str]:
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while claimed := await worker.claim(10):
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


async def _report(api: Api, clock: FakeClock, owner: Person, prod: Wired) -> dict[str, Any]:
    incident_id = await closed_incident(api, clock, owner, integration_key=prod.key)
    await run_jobs(api)  # the incident's own jobs (events, notifications) first
    made = await create(api, owner, [incident_id])
    assert made.status == 200, made.body
    return dict(made.data)


async def test_the_model_drafts_summary_impact_and_factors_from_the_timeline(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    made = await _report(api, clock, owner, prod)
    pm_id, incident_id = made["meta"]["post_mortem_id"], made["meta"]["incident_ids"][0]
    assert made["drafting"] == {"drafted_by": "template", "model_draft": "pending",
                                "model": "fake-model", "error": ""}
    template = made["content"]["content"]
    (queued,) = await all_rows(api, job, job.c.kind == "incident.post_mortem.draft")
    assert queued.status == "pending"
    llm.script = [Call("dutyline_get_incident", {"incident_id": incident_id}),
                  Answer("```json\n" + json.dumps(DRAFT) + "\n```")]
    clock.advance(30)
    assert await run_jobs(api) == ["done"]

    # What the model was asked: the incident's timeline, its note, its alert.
    first = llm.requests[0]
    assert first["model"] == "fake-model"
    prompt = first["messages"][1]["content"]
    assert first["messages"][1]["role"] == "user"
    assert "Timeline (UTC):" in prompt
    assert "- 2023-11-14 22:14:20 UTC — Acknowledged by Acme Owner" in prompt
    assert f"- 2023-11-14 22:16:20 UTC — Note by Acme Owner: {NOTE}" in prompt
    assert "- 2023-11-14 22:21:20 UTC — Closed by Acme Owner" in prompt
    assert "[Critical] checkout errors — 1 event(s)" in prompt
    assert "Root cause noted" in prompt and "A bad release leaked connections." in prompt
    assert "dutyline_get_incident" in llm.offered(0)
    # The tool it called read the incident, fed back in the next request.
    tool_reply = llm.requests[1]["messages"][-1]
    assert tool_reply["role"] == "tool" and incident_id in tool_reply["content"]

    got = (await info(api, owner, pm_id)).data
    assert got["drafting"] == {"drafted_by": "model", "model_draft": "done",
                               "model": "fake-model", "error": ""}
    content = got["content"]["content"]
    mark = "_Drafted by the model fake-model: review before publishing._"
    for heading, key in (("Summary", "summary"), ("Impact", "impact"),
                         ("Contributing factors", "contributing_factors")):
        assert f"## {heading}\n\n{mark}\n\n{DRAFT[key]}\n" in content
    # The template's timeline and action items stay as they were.
    timeline = template[template.index("## Timeline"):template.index("## Impact")]
    assert timeline in content
    assert template[template.index("## Action items"):] in content
    assert got["meta"]["updated_at_seconds"] == made["meta"]["created_at_seconds"] + 30
    (audited,) = await all_rows(api, audit_log,
                                audit_log.c.operation == "incident.post-mortem.draft")
    assert audited.credential == "system" and pm_id in audited.target_ids


async def test_an_edit_before_the_model_answers_wins(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    made = await _report(api, clock, owner, prod)
    pm_id = made["meta"]["post_mortem_id"]
    edited = await api.call("/incident/post-mortem/update",
                            {"post_mortem_id": pm_id, "content": "## Summary\n\nMine."},
                            key=owner.key)
    assert edited.status == 200, edited.body
    llm.script = [Answer(json.dumps(DRAFT))]
    assert await run_jobs(api) == ["done"]
    assert llm.requests == []  # the job saw the edit and did not ask
    got = (await info(api, owner, pm_id)).data
    assert got["content"]["content"] == "## Summary\n\nMine."
    assert got["drafting"]["model_draft"] == "skipped"
    assert "edited" in got["drafting"]["error"]


async def test_an_answer_that_arrives_after_an_edit_is_not_applied(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    from dutyline.api.actor import Actor
    from dutyline.incident.service import postmortem

    made = await _report(api, clock, owner, prod)
    pm_id = made["meta"]["post_mortem_id"]
    await api.call("/incident/post-mortem/update",
                   {"post_mortem_id": pm_id, "title": "Renamed"}, key=owner.key)
    # The job read revision 1, then the edit landed: what it writes is recorded as skipped.
    async with api.runtime.db.transaction() as conn:
        await postmortem.record_model_draft(
            conn, Actor.system(owner.account_id, api.runtime.clock), post_mortem_id=pm_id,
            revision=1, sections={"Summary": "s", "Impact": "i", "Contributing factors": "c"},
            model="fake-model")
    got = (await info(api, owner, pm_id)).data
    assert got["content"]["content"] == made["content"]["content"]
    assert got["drafting"]["model_draft"] == "skipped"
    assert got["drafting"]["drafted_by"] == "template"
    assert "edited" in got["drafting"]["error"]


async def test_an_answer_that_is_not_the_json_asked_for_fails_the_draft_and_keeps_the_template(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    made = await _report(api, clock, owner, prod)
    llm.script = [Answer("I think it was the database.")]
    assert await run_jobs(api) == ["done"]
    got = (await info(api, owner, made["meta"]["post_mortem_id"])).data
    assert got["content"] == made["content"]
    assert got["drafting"] == {"drafted_by": "template", "model_draft": "failed",
                               "model": "fake-model",
                               "error": "the model did not answer the JSON object asked for"}


async def test_a_missing_section_fails_the_draft(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    made = await _report(api, clock, owner, prod)
    llm.script = [Answer(json.dumps({"summary": "s", "impact": ""}))]
    assert await run_jobs(api) == ["done"]
    got = (await info(api, owner, made["meta"]["post_mortem_id"])).data
    assert got["drafting"]["model_draft"] == "failed"
    assert got["drafting"]["error"] == "the model's answer has no text for impact"


async def test_a_deleted_report_is_not_drafted(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    made = await _report(api, clock, owner, prod)
    await api.call("/incident/post-mortem/delete",
                   {"post_mortem_id": made["meta"]["post_mortem_id"]}, key=owner.key)
    assert await run_jobs(api) == ["done"]
    assert llm.requests == []


async def test_a_dead_drafting_job_leaves_the_draft_failed_not_pending(
    api: Api, clock: FakeClock, owner: Person, prod: Wired
) -> None:
    """The hook runs as the worker runs it, in the unit of work that buries the job: the
    audited service it calls keeps its entry (it was dropped before)."""
    from sqlalchemy import select

    from dutyline.db.tables.platform import audit_log
    from dutyline.incident.service import postmortem
    from dutyline.work.queue import DeadJob
    from dutyline.work.worker import Worker

    made = await _report(api, clock, owner, prod)
    pm_id = made["meta"]["post_mortem_id"]
    worker = Worker(api.runtime, worker_id="test")
    async with api.runtime.db.transaction() as conn:
        await worker._on_dead(conn, DeadJob(
            id=41, kind=postmortem.DRAFT_JOB, attempts=3, error="lease expired",
            lease_expired=True,
            payload={"post_mortem_id": pm_id, "account_id": owner.account_id,
                     "revision": 1}))
    got = (await info(api, owner, pm_id)).data
    assert got["drafting"]["model_draft"] == "failed"
    assert got["drafting"]["error"] == ("The model's draft did not finish: its worker "
                                        "stopped while it ran")
    assert got["content"] == made["content"]
    async with api.runtime.db.transaction(write=False) as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.request_id == "job-41"))).all()
    assert [(r.credential, r.member_id, r.outcome) for r in rows] == [("system", 0, "OK")]
    assert pm_id in rows[0].target_ids


async def test_redraft_asks_the_model_again_over_the_current_body(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    from tests.fixtures.accounts import new_member

    made = await _report(api, clock, owner, prod)
    pm_id = made["meta"]["post_mortem_id"]
    pending = await api.call("/incident/post-mortem/redraft", {"post_mortem_id": pm_id},
                             key=owner.key)
    assert (pending.status, pending.code) == (400, "BadRequest")  # the first is queued
    llm.script = [Answer("no idea")]
    assert await run_jobs(api) == ["done"]
    assert (await info(api, owner, pm_id)).data["drafting"]["model_draft"] == "failed"
    # Someone edits the body meanwhile; the redraft keeps their timeline.
    edited = await api.call("/incident/post-mortem/update", {
        "post_mortem_id": pm_id,
        "content": "## Summary\n\nTBD\n\n## Timeline\n\n- ours\n"}, key=owner.key)
    assert edited.status == 200, edited.body
    reader = await new_member(api, owner, name="Rita")
    refused = await api.call("/incident/post-mortem/redraft", {"post_mortem_id": pm_id},
                             key=reader.key)
    assert (refused.status, refused.code) == (403, "AccessDenied")
    again = await api.call("/incident/post-mortem/redraft", {"post_mortem_id": pm_id},
                           key=owner.key)
    assert again.status == 200, again.body
    assert again.data["drafting"] == {"drafted_by": "template", "model_draft": "pending",
                                      "model": "fake-model", "error": ""}
    llm.script = [Answer(json.dumps(DRAFT))]
    assert await run_jobs(api) == ["done"]
    got = (await info(api, owner, pm_id)).data
    assert got["drafting"]["model_draft"] == "done"
    content = got["content"]["content"]
    assert "## Timeline\n\n- ours\n" in content and DRAFT["summary"] in content
    assert content.index("## Summary") < content.index("## Timeline") < content.index(
        "## Impact") < content.index("## Contributing factors")
    # A published report is not redrafted.
    await api.call("/incident/post-mortem/update", {"post_mortem_id": pm_id,
                                                    "status": "published"}, key=owner.key)
    published = await api.call("/incident/post-mortem/redraft", {"post_mortem_id": pm_id},
                               key=owner.key)
    assert (published.status, published.code) == (400, "BadRequest")


async def test_another_account_cannot_redraft(
    api: Api, clock: FakeClock, owner: Person, prod: Wired, llm: FakeLlm
) -> None:
    from dutyline.db.tables.incident_postmortem import post_mortem

    made = await _report(api, clock, owner, prod)
    llm.script = [Answer("no idea")]
    await run_jobs(api)
    before = await all_rows(api, post_mortem)
    stranger = await new_account(api, "Globex")
    refused = await api.call("/incident/post-mortem/redraft",
                             {"post_mortem_id": made["meta"]["post_mortem_id"]},
                             key=stranger.key)
    assert (refused.status, refused.code) == (400, "ResourceNotFound")
    assert await all_rows(api, post_mortem) == before
    assert await run_jobs(api) == []
