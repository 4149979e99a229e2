"""The enrichment services check the permission and note the audit entry themselves, so a
caller other than the API (the console, a job) is refused or audited exactly as an app key
is: with the schema's id as the target, never the row keys or counts a write returns."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import MAPPING_DATA_MANAGE, MAPPING_DATA_VIEW
from dutyline.db.tables.platform import audit_log
from dutyline.enrichment import service
from tests.enrichment.test_mapping import create, rows
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync

pytestmark = pytest.mark.anyio

DOC = {"host": "web-1", "owner": "ana", "team": "sre", "service": "shop"}


def person(owner: Person, api: Api, *permissions: str) -> Actor:
    """The owner's person signed in to the console, holding only `permissions`."""
    return Actor(account_id=owner.account_id, person_id=owner.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), person_name="Console user",
                 credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def test_writing_rows_directly_takes_the_permission_and_is_audited_by_schema(
        api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    logged = len(await audit_rows(api, owner.account_id))
    runtime = api.runtime

    viewer = person(owner, api, MAPPING_DATA_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await service.upsert_data(conn, viewer, schema_id=schema_id, docs=[DOC])
        assert await runtime.audit.flush(conn, viewer) == 0
    assert await rows(api, schema_id) == {}

    manager = person(owner, api, MAPPING_DATA_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        keys = await service.upsert_data(conn, manager, schema_id=schema_id, docs=[DOC])
        assert await runtime.audit.flush(conn, manager, request_id="console-1") == 1
    assert list(await rows(api, schema_id)) == keys
    async with runtime.db.transaction(write=True) as conn:
        loaded = await service.upload_data(conn, manager, schema_id=schema_id,
                                           data=b"host,owner,team,service\nweb-2,bo,sre,shop\n",
                                           truncate=False)
        assert loaded == 1
        assert await runtime.audit.flush(conn, manager, request_id="console-2") == 1

    new = (await audit_rows(api, owner.account_id))[logged:]
    assert [(r.operation, r.credential, r.request_id) for r in new] == [
        ("enrichment.mapping.data.upsert", "session", "console-1"),
        ("enrichment.mapping.data.upload", "session", "console-2")]
    assert {r.target_ids for r in new} == {f'["{schema_id}"]'}
    assert all(r.member_id == owner.person_id and r.is_write for r in new)


async def test_the_api_s_row_for_a_row_write_still_names_only_the_schema(
        api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    reply = await api.call("/enrichment/mapping/data/upsert",
                           {"schema_id": schema_id.upper(), "docs": [DOC]}, key=owner.key)
    assert reply.status == 200, reply.body
    assert reply.data["keys"]
    last = (await audit_rows(api, owner.account_id))[-1]
    assert (last.operation, last.credential) == ("enrichment.mapping.data.upsert", "app_key")
    assert last.target_ids == f'["{schema_id}"]'


async def test_integration_rules_are_checked_against_the_actor_s_integrations_by_the_service(
        api: Api, owner: Person, other_owner: Person) -> None:
    """Called directly (not through the endpoint), another account's integration is not
    found and nothing is written."""
    from dutyline.enrichment import settings

    channel = await api.call("/channel/create", {"channel_name": "theirs"},
                             key=other_owner.key)
    made = await api.call("/integration/create", {
        "channel_id": channel.data["channel_id"], "integration_name": "theirs"},
        key=other_owner.key)
    assert made.status == 200, made.body
    theirs = int(made.data["integration_id"])
    manager = Actor(account_id=owner.account_id, person_id=owner.person_id,
                    clock=api.runtime.clock, is_admin=True, credential="session")
    async with api.runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.ResourceNotFound):
            await settings.upsert(conn, manager, integration_id=theirs, rules=[])
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, settings.info_sync, manager, integration_id=theirs)
        assert await api.runtime.audit.flush(conn, manager) == 0
