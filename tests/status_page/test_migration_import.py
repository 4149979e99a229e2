"""Migrations from the fake Statuspage on loopback, run step by step by an in-process worker,
on SQLite and PostgreSQL: the realistic page completely and correctly, reruns without
duplicates, source failures, rate limits, unknown statuses and cancellation."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sqlalchemy import select, update

from dutyline.config import Settings
from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_import_ref,
    status_page,
    status_section,
    status_subscriber,
    status_template,
)
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.fake_statuspage import FakeStatuspage
from tests.status_page.admin_helpers import check_reference_schema
from tests.status_page.migration_support import (
    SMALL,
    count,
    fake,
    job_row,
    rows,
    run_jobs,
    settings,
    start_structure,
    start_subscribers,
    status,
)

pytestmark = pytest.mark.anyio
__all__ = ["fake", "settings"]  # fixtures, used by name


async def test_the_realistic_page_imports_completely_and_correctly(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    exp = fake.expected
    job_id = await start_structure(api, owner.key)
    assert set(await run_jobs(api)) == {"done"}
    job = (await status(api, owner.key, job_id)).data
    check_reference_schema("StatusPageMigrationJob", job)
    check_reference_schema("StatusPageMigrationStartResponse", {"job_id": job_id})
    assert (job["status"], job["phase"], job["source_page_id"]) == (
        "completed", "history", fake.config.page_id)
    assert "error" not in job
    page_id = job["target_page_id"]
    assert job["progress"] == {
        "total_steps": 5, "completed_steps": 5, "components_imported": exp.components,
        "sections_imported": exp.sections, "incidents_imported": exp.incidents,
        "maintenances_imported": exp.maintenances, "subscribers_imported": 0,
        "templates_imported": exp.templates, "subscribers_skipped": 0, "warnings": [],
    }
    (page,) = await rows(api, select(status_page).where(status_page.c.page_id == page_id))
    assert (page.account_id, page.page_name, page.url_name) == (
        owner.account_id, "Acme Cloud", "acmecloud")

    # Sections in the groups' order, each component in its group's section, status mapped.
    sections = await rows(api, select(status_section).where(status_section.c.page_id == page_id)
                          .order_by(status_section.c.order_id))
    assert [s.name for s in sections] == [f"Region {i + 1}" for i in range(exp.sections)]
    section_names = {s.section_id: s.name for s in sections}
    components = await rows(api, select(status_component).where(
        status_component.c.page_id == page_id))
    assert {c.name: c.status for c in components} == exp.component_status
    group_of = {g["id"]: g["name"] for g in fake.groups}
    source_group = {c["name"]: group_of[c["group_id"]] for c in fake.components}
    assert all(section_names[c.section_id] == source_group[c.name] for c in components)

    templates = await rows(api, select(status_template).where(
        status_template.c.page_id == page_id))
    assert sorted(t.update_status for t in templates)[:3] == ["identified"] * 3
    assert {t.name for t in templates} == {t["name"] for t in fake.templates}

    # Every change with its timeline, oldest entry first, statuses mapped; the change's
    # status is its latest entry's.
    changes = await rows(api, select(status_change).where(status_change.c.page_id == page_id))
    assert Counter(c.type for c in changes) == {"incident": exp.incidents,
                                                "maintenance": exp.maintenances}
    assert all(not c.notify_subscribers for c in changes)
    refs = {r.target_id: r.source_id for r in await rows(api, select(status_import_ref).where(
        status_import_ref.c.page_id == page_id, status_import_ref.c.kind == "change"))}
    updates = await rows(api, select(status_change_update).where(
        status_change_update.c.page_id == page_id).order_by(
        status_change_update.c.change_id, status_change_update.c.at_seconds,
        status_change_update.c.seq))
    assert len(updates) == exp.updates
    timeline: dict[int, list[str]] = {}
    for u in updates:
        timeline.setdefault(u.change_id, []).append(u.status)
    for c in changes:
        assert timeline[c.change_id] == exp.timelines[refs[str(c.change_id)]]
        assert c.status == timeline[c.change_id][-1]
        affected = {a["status"] for a in json.loads(c.affected_components)}
        if c.status in ("resolved", "completed"):
            assert affected <= {"operational"} and c.close_at_seconds > 0
        elif c.type == "incident":
            assert affected == {"partial_outage"} and c.close_at_seconds == 0
        if c.type == "maintenance":  # the scheduled end is the close time, as the rules say
            assert c.close_at_seconds == c.scheduled_close_at_seconds > c.start_at_seconds
    assert Counter(c.status for c in changes if c.type == "incident")["monitoring"] == 2
    first = next(u for u in updates if u.component_changes != "[]")
    assert {x["status"] for x in json.loads(first.component_changes)} <= {
        "partial_outage", "under_maintenance", "operational"}

    # Then the e-mail subscribers into that page: email mode only, confirmed, repeats skipped.
    sub_job = await start_subscribers(api, owner.key, page_id)
    assert set(await run_jobs(api)) == {"done"}
    sub = (await status(api, owner.key, sub_job)).data
    check_reference_schema("StatusPageMigrationJob", sub)
    assert (sub["status"], sub["phase"], sub["target_page_id"]) == (
        "completed", "subscribers", page_id)
    assert (sub["progress"]["subscribers_imported"], sub["progress"]["subscribers_skipped"]) == (
        exp.email_subscribers, exp.email_duplicates)
    subscribers = await rows(api, select(status_subscriber).where(
        status_subscriber.c.page_id == page_id))
    emails = {s["email"].lower() for s in fake.subscribers if s["mode"] == "email"}
    assert {s.email for s in subscribers} == emails
    assert {(s.status, s.source) for s in subscribers} == {("confirmed", "migration")}
    assert all(s.unsubscribe_token_hash for s in subscribers)

    # No more requests than the page sizes need, and the keys are gone.
    assert fake.requests == fake.minimum_requests()
    for done in (job_id, sub_job):
        assert (await job_row(api, done)).api_key_sealed == ""


async def test_a_rerun_imports_nothing_twice(api: Api, owner: Person) -> None:
    first = await start_structure(api, owner.key)
    await run_jobs(api)
    page_id = (await status(api, owner.key, first)).data["target_page_id"]
    await start_subscribers(api, owner.key, page_id)
    await run_jobs(api)
    before = {t.name: await count(api, t) for t in (
        status_page, status_section, status_component, status_template, status_change,
        status_change_update, status_subscriber, status_import_ref)}

    again = await start_structure(api, owner.key)
    sub_again = await start_subscribers(api, owner.key, page_id)
    await run_jobs(api)
    job = (await status(api, owner.key, again)).data
    assert (job["status"], job["target_page_id"]) == ("completed", page_id)
    assert {k: v for k, v in job["progress"].items() if k.endswith("_imported")} == dict.fromkeys(
        ["components_imported", "sections_imported", "incidents_imported",
         "maintenances_imported", "subscribers_imported", "templates_imported"], 0)
    sub = (await status(api, owner.key, sub_again)).data["progress"]
    assert sub["subscribers_imported"] == 0
    assert sub["subscribers_skipped"] == before["status_subscriber"] + 40
    after = {t.name: await count(api, t) for t in (
        status_page, status_section, status_component, status_template, status_change,
        status_change_update, status_subscriber, status_import_ref)}
    assert after == before


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_a_refused_key_fails_the_job_clearly_and_erases_the_key(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    job_id = await start_structure(api, owner.key, api_key="not-the-right-key")
    assert await run_jobs(api) == ["done"]  # a permanent refusal is not retried
    job = (await status(api, owner.key, job_id)).data
    check_reference_schema("StatusPageMigrationJob", job)
    assert job["status"] == "failed"
    assert "401" in job["error"] and "api_key" in job["error"]
    assert (await job_row(api, job_id)).api_key_sealed == ""
    assert fake.status_counts() == {401: 1}


@pytest.mark.parametrize("fake", [{**SMALL, "page_id": "otherpage001"}], indirect=True)
async def test_an_unknown_source_page_fails_the_job(api: Api, owner: Person) -> None:
    job_id = await start_structure(api, owner.key)
    await run_jobs(api)
    job = (await status(api, owner.key, job_id)).data
    assert job["status"] == "failed" and "404" in job["error"]


@pytest.mark.parametrize("fake", [{**SMALL, "error_rate": 0.3, "seed": 11}], indirect=True)
async def test_server_errors_are_retried(api: Api, owner: Person, fake: FakeStatuspage) -> None:
    job_id = await start_structure(api, owner.key)
    await run_jobs(api)
    job = (await status(api, owner.key, job_id)).data
    assert job["status"] == "completed", job
    assert job["progress"]["incidents_imported"] == 30
    assert job["progress"]["maintenances_imported"] == 4
    assert fake.status_counts()[500] >= 1
    assert fake.status_counts()[200] == fake.minimum_requests(subscribers=False)


@pytest.mark.parametrize("fake", [{**SMALL, "rate_per_second": 3.0}], indirect=True)
async def test_rate_limit_answers_are_waited_out(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    """Our pacing is lifted in these settings, so the source's own limit answers 420 and
    429; the client honours Retry-After and the job completes with nothing lost."""
    job_id = await start_structure(api, owner.key)
    await run_jobs(api)
    job = (await status(api, owner.key, job_id)).data
    assert job["status"] == "completed", job
    assert job["progress"]["components_imported"] == 12
    counts = fake.status_counts()
    assert counts.get(420, 0) + counts.get(429, 0) >= 1
    assert counts[200] == fake.minimum_requests(subscribers=False)


@pytest.mark.parametrize("fake", [{**SMALL, "unknown_statuses": True}], indirect=True)
async def test_unknown_statuses_become_warnings_not_guesses(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    job_id = await start_structure(api, owner.key)
    await run_jobs(api)
    job = (await status(api, owner.key, job_id)).data
    warnings = job["progress"]["warnings"]
    assert job["status"] == "completed"
    assert any("'mystery_outage'" in w and "component" in w for w in warnings)
    assert any("'escalated'" in w for w in warnings)
    assert any("'pondering'" in w for w in warnings)
    assert job["progress"]["components_imported"] == 11  # the odd one is left out
    page_id = job["target_page_id"]
    statuses = {u.status for u in await rows(api, select(status_change_update).where(
        status_change_update.c.page_id == page_id))}
    assert "escalated" not in statuses
    assert await count(api, status_change_update, status_change_update.c.page_id == page_id) \
        == fake.expected.updates


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_cancel_stops_a_running_job_at_its_next_step(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    import dutyline.status_page.migration.tasks  # noqa: F401
    from dutyline.work.registry import registry
    from dutyline.work.worker import Worker

    job_id = await start_structure(api, owner.key)
    worker = Worker(api.runtime, registry=registry, worker_id="w")
    for _ in range(2):  # page, then component groups
        (claimed,) = await worker.claim(1)
        assert await worker.execute(claimed) == "done"
    assert (await status(api, owner.key, job_id)).data["status"] == "running"
    reply = await api.call("/status-page/migration/cancel", {"job_id": job_id}, key=owner.key)
    assert reply.status == 200 and reply.data == {}
    requests = fake.requests
    await run_jobs(api)
    job = (await status(api, owner.key, job_id)).data
    assert job["status"] == "cancelled"
    assert job["progress"]["sections_imported"] == 3
    assert job["progress"]["components_imported"] == 0
    # The step that ran after the cancel asked the source at most once and wrote nothing.
    assert fake.requests - requests <= 1
    assert await count(api, status_component,
                       status_component.c.page_id == job["target_page_id"]) == 0
    assert (await job_row(api, job_id)).api_key_sealed == ""


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_the_source_address_goes_through_the_outbound_guard(
    settings: Settings, fake: FakeStatuspage
) -> None:
    """Without the operator's allow_private_network, a loopback source is refused before any
    request leaves: the job fails, saying why, and its key is erased."""
    async with make_api(settings.with_(allow_private_network=False)) as guarded:
        person = await new_account(guarded, "Guarded")
        job_id = await start_structure(guarded, person.key)
        assert await run_jobs(guarded) == ["done"]
        job = (await status(guarded, person.key, job_id)).data
        assert job["status"] == "failed"
        assert "refused" in job["error"] and "loopback" in job["error"]
        assert (await job_row(guarded, job_id)).api_key_sealed == ""
    assert fake.requests == 0


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_a_step_failing_on_its_last_attempt_ends_the_migration_as_failed(
    api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dutyline.db.tables.work import job
    from dutyline.status_page.migration import target

    async def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("disk on fire")

    job_id = await start_structure(api, owner.key)
    assert await run_jobs(api, limit=1) == ["done"]  # the page step
    monkeypatch.setattr(target, "import_sections", broken)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(job).where(job.c.status == "pending").values(max_attempts=1))
    assert await run_jobs(api) == ["dead"]  # the step's job died; its on_dead hook ended it
    record = (await status(api, owner.key, job_id)).data
    assert record["status"] == "failed"
    assert "RuntimeError: disk on fire" in record["error"]
    assert record["progress"]["sections_imported"] == 0
    assert (await job_row(api, job_id)).api_key_sealed == ""


async def test_the_job_s_writes_are_audited_as_the_system_named_after_the_job(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    """The member who started the migration is in the log (the API's row); what the job
    then writes through the status page services is there too, as the system's."""
    from sqlalchemy import select

    from dutyline.db.tables.platform import audit_log

    await start_structure(api, owner.key)
    await run_jobs(api)
    async with api.runtime.db.connect() as conn:
        rows = list(await conn.execute(select(audit_log).where(
            audit_log.c.account_id == owner.account_id).order_by(audit_log.c.id)))
    assert (rows[0].operation, rows[0].credential) == (
        "status-page.migrate-structure", "app_key")
    by_job = [r for r in rows[1:] if r.credential == "system"]
    assert by_job and all(r.request_id.startswith("job-") and r.member_id == 0
                          for r in by_job)
    assert "status-page.create" in {r.operation for r in by_job}
    # One row per job transaction at most.
    assert len({r.request_id for r in by_job}) == len(by_job)
