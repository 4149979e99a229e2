"""The enrichment reads (mapping schemas, their rows, mapping APIs, enrichment settings) are
sync read operations (api/operation.py), and their sync services answer as the
operations do: same records, same not-found for other accounts' ids."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import INTEGRATION_VIEW, MAPPING_DATA_VIEW
from dutyline.domains import all_routers
from dutyline.enrichment import service, settings
from dutyline.enrichment.api import service as apis
from tests.enrichment.test_mapping import create
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync
from tests.incident.conftest import wire

pytestmark = pytest.mark.anyio

SYNC_READS = (
    "/enrichment/mapping/schema/info", "/enrichment/mapping/schema/list",
    "/enrichment/mapping/data/list", "/enrichment/info", "/enrichment/list",
    "/enrichment/mapping/api/info", "/enrichment/mapping/api/list",
)


def test_the_reads_are_sync_operations() -> None:
    ops = {op.path: op for router in all_routers() for op in router.operations}
    assert [p for p in SYNC_READS if not ops[p].sync] == []
    assert ops["/enrichment/mapping/data/download"].sync is False


def _actor(api: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def _ok(api: Api, path: str, body: dict[str, Any], who: Person) -> Any:
    reply = await api.call(path, body, key=who.key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


def _plain(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


async def test_the_services_answer_as_the_operations(api: Api, owner: Person,
                                                        other_owner: Person) -> None:
    schema_id = await create(api, owner)
    await _ok(api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
        {"host": f"web{i}", "owner": "alice", "team": "sre", "service": "shop"}
        for i in range(3)]}, owner)
    wired = await wire(api, owner)
    await _ok(api, "/enrichment/upsert", {"integration_id": wired.integration_id, "rules": [
        {"kind": "mapping", "settings": {"mapping_type": "schema", "schema_id": schema_id,
                                         "result_labels": ["owner"]}}]}, owner)
    data_query = {"schema_id": schema_id, "p": 1, "limit": 2}
    expected = {
        "schema": await _ok(api, "/enrichment/mapping/schema/info", {"schema_id": schema_id},
                            owner),
        "schemas": await _ok(api, "/enrichment/mapping/schema/list", {}, owner),
        "data": await _ok(api, "/enrichment/mapping/data/list", data_query, owner),
        "setting": await _ok(api, "/enrichment/info",
                             {"integration_id": wired.integration_id}, owner),
        "settings": await _ok(api, "/enrichment/list",
                              {"integration_ids": [wired.integration_id]}, owner),
        "apis": await _ok(api, "/enrichment/mapping/api/list", {}, owner),
    }
    assert expected["data"]["has_next_page"] is True
    actor = _actor(api, owner, MAPPING_DATA_VIEW, INTEGRATION_VIEW)
    deps = api.runtime.deps
    async with api.runtime.db.transaction(write=False) as conn:
        schemas = await in_sync(conn, service.list_schemas_sync, actor)
        api_items = await in_sync(conn, apis.list_apis_sync, actor, deps=deps)
        got = {
            "schema": await in_sync(conn, service.schema_info_sync, actor, schema_id=schema_id),
            "schemas": {"total": len(schemas), "items": schemas},
            "data": await in_sync(conn, service.list_data_sync,
                                  actor, schema_id=schema_id, query={},
                                            orderby="", asc=False, p=1, limit=2,
                                            search_after_ctx=""),
            "setting": await in_sync(conn, settings.info_sync,
                                     actor, integration_id=wired.integration_id),
            "settings": {"items": await in_sync(
                conn, settings.list_settings_sync, actor, integration_ids=[wired.integration_id])},
            "apis": {"total": len(api_items), "items": api_items},
        }
    assert _plain(got) == expected

    stranger = _actor(api, other_owner, MAPPING_DATA_VIEW, INTEGRATION_VIEW)
    async with api.runtime.db.transaction(write=False) as conn:
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, service.schema_info_sync, stranger, schema_id=schema_id)
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, settings.info_sync, stranger, integration_id=wired.integration_id)
        with pytest.raises(errors.ResourceNotFound):
            await in_sync(conn, apis.api_info_sync, stranger, api_id="0" * 24, deps=deps)
        assert await in_sync(
            conn, settings.list_settings_sync, stranger,
            integration_ids=[wired.integration_id]) == []
        with pytest.raises(errors.AccessDenied):
            await in_sync(conn, service.list_schemas_sync, _actor(api, owner))
