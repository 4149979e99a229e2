"""The AI SRE services guard themselves: called directly, as the console or a job would, not
through the operation layer, a write refuses an actor without its permission (changing
nothing) and notes its audit entry for a permitted one, which the caller flushes."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from dutyline.aisre.automation import service as automation
from dutyline.aisre.mcp import service as mcp
from dutyline.aisre.runner import service as runners
from dutyline.aisre.scope import require_environment_use
from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE, CHANNEL_VIEW, ENVIRONMENT_USE, MCP_MANAGE
from dutyline.db.tables.platform import audit_log
from dutyline.kit.clock import FixedClock
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.server import free_port

pytestmark = pytest.mark.anyio


def session_actor(api: Api, who: Person, *permissions: str, is_admin: bool = False) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 is_admin=is_admin, permissions=frozenset(permissions), credential="session")


async def audit_rows(api: Api, account_id: int) -> list[Any]:
    async with api.runtime.db.connect() as conn:
        return list(await conn.execute(
            select(audit_log).where(audit_log.c.account_id == account_id)
            .order_by(audit_log.c.id)))


async def test_a_worknode_is_created_only_by_an_account_manager_and_audited_as_one(
        api: Api, owner: Person) -> None:
    runtime = api.runtime
    viewer = session_actor(api, owner, CHANNEL_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await runners.create_worknode(conn, viewer, name="edge", labels=[],
                                          description="")
        assert await runtime.audit.flush(conn, viewer) == 0
    listed = await api.call("/safari/worknode/list", {}, key=owner.key)
    assert listed.data["total"] == 0

    manager = session_actor(api, owner, ACCOUNT_MANAGE)
    async with runtime.db.transaction(write=True) as conn:
        made = await runners.create_worknode(conn, manager, name="edge", labels=["dc1"],
                                             description="")
        assert await runtime.audit.flush(conn, manager, request_id="console-1") == 1
    (row,) = await audit_rows(api, owner.account_id)
    assert (row.operation, row.credential, row.member_id) == (
        "safari.worknode.create", "session", owner.person_id)
    assert row.target_ids == f'["{made.worknode_id}"]'
    assert row.request_id == "console-1" and row.is_write


async def test_an_mcp_server_is_disabled_only_with_mcp_manage(
        api: Api, owner: Person) -> None:
    made = await api.call("/safari/mcp/server/create", {
        "server_name": "tools", "description": "d", "connect_timeout": 1,
        "url": f"http://127.0.0.1:{free_port()}/mcp"}, key=owner.key)
    assert made.status == 200, made.body
    server_id = made.data["server_id"]
    runtime = api.runtime
    before = len(await audit_rows(api, owner.account_id))

    member = session_actor(api, owner, CHANNEL_VIEW)
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.AccessDenied):
            await mcp.disable_server(conn, member, server_id=server_id)
    seen = await api.call("/safari/mcp/server/list", {}, key=owner.key)
    assert seen.data["servers"][0]["status"] == "enabled"

    manager = session_actor(api, owner, MCP_MANAGE, is_admin=True)
    async with runtime.db.transaction(write=True) as conn:
        assert await mcp.disable_server(conn, manager, server_id=server_id) == server_id
        assert await runtime.audit.flush(conn, manager) == 1
    rows = await audit_rows(api, owner.account_id)
    assert len(rows) == before + 1
    assert (rows[-1].operation, rows[-1].target_ids) == (
        "safari.mcp.server.disable", f'["{server_id}"]')
    seen = await api.call("/safari/mcp/server/list", {}, key=owner.key)
    assert seen.data["servers"][0]["status"] == "disabled"


async def test_an_automation_rule_is_enabled_by_whoever_manages_it_and_audited_as_enable(
        api: Api, owner: Person) -> None:
    """Automation has no permission: any member writes, the rule's scope decides which
    rules (a personal rule: its creator only)."""
    made = await api.call("/safari/automation/rule/create", {
        "name": "daily", "prompt": "look around", "cron_expr": "0 9 * * *"}, key=owner.key)
    assert made.status == 200, made.body
    rule_id = made.data["rule_id"]
    assert made.data["enabled"] is False
    runtime = api.runtime

    someone_else = Actor(account_id=owner.account_id, person_id=owner.person_id + 1,
                         clock=runtime.clock, credential="session")
    async with runtime.db.transaction(write=True) as conn:
        with pytest.raises(errors.ResourceNotFound):
            await automation.enable_rule(conn, someone_else, rule_id=rule_id)
    assert someone_else.audit_entries == []

    creator = session_actor(api, owner)
    async with runtime.db.transaction(write=True) as conn:
        assert await automation.enable_rule(conn, creator, rule_id=rule_id) == rule_id
        assert await runtime.audit.flush(conn, creator) == 1
    last = (await audit_rows(api, owner.account_id))[-1]
    assert (last.operation, last.target_ids, last.credential) == (
        "safari.automation.rule.enable", f'["{rule_id}"]', "session")
    got = await api.call("/safari/automation/rule/get", {"rule_id": rule_id}, key=owner.key)
    assert got.data["enabled"] is True


def test_worknode_use_is_one_rule_for_mcp_servers_and_automation_rules() -> None:
    clock = FixedClock(1_700_000_000)
    with pytest.raises(errors.AccessDenied):
        require_environment_use(Actor(account_id=1, person_id=2, clock=clock))
    require_environment_use(Actor(account_id=1, person_id=2, clock=clock,
                                  permissions=frozenset({ENVIRONMENT_USE})))
    require_environment_use(Actor.system(1, clock))
