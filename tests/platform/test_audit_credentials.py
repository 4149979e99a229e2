"""The audit log says who acted and how, whatever called the service: an app key through the
API, a person through a signed link, or the service itself (a job flushing what it did)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api.actor import Actor
from dutyline.db.tables.platform import audit_log
from dutyline.dispatch import links
from dutyline.incident.lifecycle import service as incidents
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def rows_of(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def open_incident(api: Api, owner: Person) -> str:
    made = await api.call("/incident/create", {"title": "disk full",
                                               "incident_severity": "Critical"},
                          key=owner.key)
    assert made.status == 200, made.body
    return str(made.data["incident_id"])


async def test_an_api_write_is_one_row_naming_the_app_key_and_the_service_s_targets(
        api: Api, owner: Person) -> None:
    incident_id = await open_incident(api, owner)
    acked = await api.call("/incident/ack", {"incident_ids": [incident_id]}, key=owner.key)
    assert acked.status == 200
    rows = await rows_of(api, owner.account_id)
    assert [r.operation for r in rows] == ["incident.create", "incident.ack"]
    assert {r.credential for r in rows} == {"app_key"}
    assert rows[1].target_ids == f'["{incident_id}"]'
    found = await api.call("/audit/search", {"start_time": int(time.time()) - 60,
                                             "end_time": int(time.time()) + 60},
                           key=owner.key)
    assert {d["credential"] for d in found.data["docs"]} == {"app_key"}


async def test_a_signed_link_acknowledgement_is_audited_as_the_person_by_link(
        api: Api, owner: Person) -> None:
    incident_id = await open_incident(api, owner)
    runtime = api.runtime
    token = links.sign(await links.server_key(runtime.settings), links.Link(
        "ack", owner.account_id, owner.person_id, incident_id,
        int(runtime.clock.now()) + 600))
    answer = await api.raw("POST", links.PATH + token)
    assert answer.status_code == 200, answer.text
    rows = await rows_of(api, owner.account_id)
    last = rows[-1]
    assert (last.operation, last.credential) == ("incident.ack", "signed_link")
    assert last.member_id == owner.person_id
    assert last.target_ids == f'["{incident_id}"]'
    assert last.outcome == "OK" and last.is_write


async def test_a_refused_link_leaves_a_row_with_its_outcome(api: Api, owner: Person) -> None:
    """The link's unit of work records the refused write as the API records a refused call:
    the same operation, with the error's code as its outcome."""
    incident_id = await open_incident(api, owner)
    runtime = api.runtime
    key = await links.server_key(runtime.settings)
    for _ in range(2):  # the second acknowledgement is refused: already acknowledged
        token = links.sign(key, links.Link("ack", owner.account_id, owner.person_id,
                                           incident_id, int(runtime.clock.now()) + 600))
        await api.raw("POST", links.PATH + token)
    rows = [r for r in await rows_of(api, owner.account_id) if r.credential == "signed_link"]
    assert [(r.operation, r.member_id) for r in rows] == [
        ("incident.ack", owner.person_id)] * 2
    assert rows[0].outcome == "OK" and rows[1].outcome not in ("", "OK")


async def test_a_job_calling_a_service_flushes_one_row_as_the_system(
        api: Api, owner: Person) -> None:
    incident_id = await open_incident(api, owner)
    runtime = api.runtime
    system = Actor.system(owner.account_id, runtime.clock)
    async with runtime.db.transaction(write=True) as conn:
        await incidents.ack(conn, system, incident_ids=[incident_id])
        await incidents.comment(conn, system, incident_ids=[incident_id], comment="seen")
        assert await runtime.audit.flush(conn, system, request_id="job-1") == 1
        assert await runtime.audit.flush(conn, system) == 0  # handed over once
    last = (await rows_of(api, owner.account_id))[-1]
    assert (last.operation, last.credential, last.member_id) == ("incident.ack", "system", 0)
    assert last.request_id == "job-1"
    assert last.target_ids == f'["{incident_id}"]'


async def test_a_member_without_the_permission_is_refused_by_the_service_itself(
        api: Api, owner: Person) -> None:
    """Called directly, as the console or a job would, not through the operation layer."""
    incident_id = await open_incident(api, owner)
    runtime = api.runtime
    viewer = Actor(account_id=owner.account_id, person_id=owner.person_id,
                   clock=runtime.clock, permissions=frozenset({"channel_view"}),
                   credential="session")
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(Exception, match="permission"):
            await incidents.ack(conn, viewer, incident_ids=[incident_id])
    assert viewer.audit_entries == []
    info = await api.call("/incident/info", {"incident_id": incident_id}, key=owner.key)
    assert info.data["progress"] == "Triggered"
