"""The migration operations: validation naming the field, permissions, account scoping of
jobs, the status record, cancel, and the third-party key kept out of every answer, row, log
line and audit entry."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from dutyline.db.tables.status_page import status_migration_job
from dutyline.db.tables.work import job
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.fake_statuspage import FakeStatuspage
from tests.status_page.admin_helpers import check_reference_schema
from tests.status_page.migration_support import (
    KEY,
    PAGE,
    SMALL,
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
__all__ = ["fake", "settings"]

STRUCTURE = "/status-page/migrate-structure"
SUBSCRIBERS = "/status-page/migrate-email-subscribers"
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


async def _page_of(api: Api, person: Person) -> int:
    job_id = await start_structure(api, person.key)
    await run_jobs(api)
    return int((await status(api, person.key, job_id)).data["target_page_id"])


@pytest.mark.parametrize(("body", "field"), [
    ({"source_page_id": PAGE}, "api_key"),
    ({"api_key": "", "source_page_id": PAGE}, "api_key"),
    ({"api_key": "short", "source_page_id": PAGE}, "api_key"),
    ({"api_key": "has a space in it", "source_page_id": PAGE}, "api_key"),
    ({"api_key": "clé-non-ascii-1234", "source_page_id": PAGE}, "api_key"),
    ({"api_key": "line\nbreak-12345", "source_page_id": PAGE}, "api_key"),
    ({"api_key": "k" * 257, "source_page_id": PAGE}, "api_key"),
    ({"api_key": 12345678, "source_page_id": PAGE}, "api_key"),
    ({"api_key": KEY}, "source_page_id"),
    ({"api_key": KEY, "source_page_id": "../../admin"}, "source_page_id"),
    ({"api_key": KEY, "source_page_id": ""}, "source_page_id"),
])
async def test_structure_validation_names_the_field(
    api: Api, owner: Person, body: dict[str, Any], field: str
) -> None:
    reply = await api.call(STRUCTURE, body, key=owner.key)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert field in reply.message
    assert await rows(api, select(status_migration_job)) == []


async def test_subscriber_validation_and_target_page_scoping(
    api: Api, owner: Person, other_owner: Person
) -> None:
    for body, field in [
        ({"api_key": KEY, "source_page_id": PAGE}, "target_page_id"),
        ({"api_key": KEY, "source_page_id": PAGE, "target_page_id": "x"}, "target_page_id"),
        ({"api_key": KEY, "source_page_id": PAGE, "target_page_id": 0}, "target_page_id"),
        ({"api_key": KEY, "source_page_id": PAGE, "target_page_id": 987654321},
         "target_page_id"),
        ({"source_page_id": PAGE, "target_page_id": 1}, "api_key"),
    ]:
        reply = await api.call(SUBSCRIBERS, body, key=owner.key)
        assert (reply.status, reply.code) == (400, "InvalidParameter"), body
        assert field in reply.message
    # Another account's page behaves as a missing one, and nothing is started.
    theirs = await _page_of(api, other_owner)
    reply = await api.call(SUBSCRIBERS, {"api_key": KEY, "source_page_id": PAGE,
                                         "target_page_id": theirs}, key=owner.key)
    assert (reply.code, "target_page_id" in reply.message) == ("InvalidParameter", True)
    started = await rows(api, select(status_migration_job.c.account_id))
    assert {r.account_id for r in started} == {other_owner.account_id}


async def test_messages_are_localized(api: Api, owner: Person) -> None:
    reply = await api.call(STRUCTURE, {"api_key": "has space 123", "source_page_id": PAGE},
                           key=owner.key, headers={"Accept-Language": "zh-CN"})
    assert reply.code == "InvalidParameter"
    assert "api_key" in reply.message and "ASCII" in reply.message
    assert "must be" not in reply.message


async def test_permissions(api: Api, owner: Person) -> None:
    member = await new_member(api, owner)  # read-only built-in role
    job_id = await start_structure(api, owner.key)
    for path, body in [(STRUCTURE, {"api_key": KEY, "source_page_id": PAGE}),
                       (SUBSCRIBERS, {"api_key": KEY, "source_page_id": PAGE,
                                      "target_page_id": 1}),
                       ("/status-page/migration/cancel", {"job_id": job_id})]:
        reply = await api.call(path, body, key=member.key)
        assert (reply.status, reply.code) == (403, "AccessDenied")
    # Reading a job of one's account needs no permission (reference: any valid key).
    assert (await status(api, member.key, job_id)).data["job_id"] == job_id
    assert (await api.call(STRUCTURE, {}, key=None)).status == 401


async def test_start_answers_at_once_with_a_pending_job(api: Api, owner: Person) -> None:
    job_id = await start_structure(api, owner.key)
    assert ULID.match(job_id)
    record = (await status(api, owner.key, job_id)).data
    check_reference_schema("StatusPageMigrationJob", record)
    assert record == {
        "job_id": job_id, "account_id": owner.account_id, "source_page_id": PAGE,
        "target_page_id": 0, "phase": "structure", "status": "pending",
        "progress": {"total_steps": 5, "completed_steps": 0, "components_imported": 0,
                     "sections_imported": 0, "incidents_imported": 0,
                     "maintenances_imported": 0, "subscribers_imported": 0,
                     "templates_imported": 0, "subscribers_skipped": 0, "warnings": []},
        "created_at": record["created_at"], "updated_at": record["created_at"],
    }
    queued = await rows(api, select(job).where(job.c.kind == "status_page.migrate"))
    assert len(queued) == 1 and job_id in queued[0].payload
    row = await job_row(api, job_id)
    assert row.api_key_sealed and KEY not in row.api_key_sealed
    assert api.runtime.secrets.open(row.api_key_sealed) == KEY


async def test_status_by_get_with_a_query_parameter(api: Api, owner: Person) -> None:
    job_id = await start_structure(api, owner.key)
    response = await api.raw("GET", "/status-page/migration/status",
                              params={"app_key": owner.key, "job_id": job_id})
    assert response.status_code == 200
    assert response.json()["data"]["job_id"] == job_id
    missing = await api.raw("GET", "/status-page/migration/status",
                            params={"app_key": owner.key})
    assert missing.json()["error"]["code"] == "InvalidParameter"
    assert "job_id" in missing.json()["error"]["message"]


async def test_jobs_of_another_account_behave_as_not_found(
    api: Api, owner: Person, other_owner: Person
) -> None:
    job_id = await start_structure(api, owner.key)
    for path in ("/status-page/migration/status", "/status-page/migration/cancel"):
        reply = await api.call(path, {"job_id": job_id}, key=other_owner.key)
        assert (reply.status, reply.code) == (400, "ResourceNotFound")
        assert job_id in reply.message
    assert (await status(api, owner.key, job_id)).data["status"] == "pending"
    reply = await api.call("/status-page/migration/status", {"job_id": "01NOSUCHJOB"},
                           key=owner.key)
    assert reply.code == "ResourceNotFound"


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_cancel_a_pending_job_and_an_ended_one(
    api: Api, owner: Person, fake: FakeStatuspage
) -> None:
    job_id = await start_structure(api, owner.key)
    reply = await api.call("/status-page/migration/cancel", {"job_id": job_id}, key=owner.key)
    assert reply.data == {}
    assert (await job_row(api, job_id)).api_key_sealed == ""
    await run_jobs(api)
    assert fake.requests == 0  # the queued step saw the cancel and asked nothing
    assert (await status(api, owner.key, job_id)).data["status"] == "cancelled"
    again = await api.call("/status-page/migration/cancel", {"job_id": job_id}, key=owner.key)
    assert (again.code, "job_id" in again.message) == ("InvalidParameter", True)


@pytest.mark.parametrize("fake", [SMALL], indirect=True)
async def test_the_api_key_never_leaves_the_sealed_column(
    api: Api, owner: Person, capfd: pytest.CaptureFixture[str]
) -> None:
    ok = await start_structure(api, owner.key)
    refused_key = "wrong-key-0123456789"
    refused = await start_structure(api, owner.key, api_key=refused_key)
    await run_jobs(api)
    page_id = (await status(api, owner.key, ok)).data["target_page_id"]
    subs = await start_subscribers(api, owner.key, page_id)
    await api.call(STRUCTURE, {"api_key": "bad key with spaces", "source_page_id": PAGE},
                   key=owner.key)
    await run_jobs(api)
    secrets = (KEY, refused_key, "bad key with spaces")
    for job_id in (ok, refused, subs):
        reply = await status(api, owner.key, job_id)
        assert reply.data["status"] in ("completed", "failed")
        text = str(reply.body)
        row = await job_row(api, job_id)
        assert row.api_key_sealed == ""
        assert not any(s in text or s in str(tuple(row)) for s in secrets)
    audit = await rows(api, select(audit_log))
    assert {a.operation for a in audit} >= {"status-page.migrate-structure",
                                            "status-page.migrate-email-subscribers"}
    assert not any(s in str(tuple(a)) for a in audit for s in secrets)
    queued = await rows(api, select(job))
    assert not any(s in str(tuple(j)) for j in queued for s in secrets)
    out, err = capfd.readouterr()
    assert not any(s in out or s in err for s in secrets)
