"""Migration 0006: roles stored with the earlier template permission ids (206, 207) keep
their meaning under the reference's ids (501, 502), and the migration goes down again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from alembic import command
from sqlalchemy import insert, select

from dutyline.api import permissions
from dutyline.db.engine import Database
from dutyline.db.migrate import alembic_config, upgrade
from dutyline.db.tables.platform import role, role_permission
from dutyline.platform.account.service import create_account
from tests.fixtures import databases as dbs

pytestmark = pytest.mark.anyio


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if dbs.postgres_admin_url() else ["sqlite"]


@pytest.fixture(params=_backends())
def database_at_0005(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = dbs.sqlite_url(tmp_path / "at-0005.db")
        upgrade(url, "0005")
        yield url
        return
    admin = dbs.postgres_admin_url()
    assert admin is not None
    url = dbs.create_postgres_database(admin, "0005")
    try:
        yield url
    finally:
        dbs.drop_postgres_database(admin, url)


async def _grants(db: Database, role_id: int) -> set[int]:
    async with db.connect() as conn:
        rows = await conn.execute(select(role_permission.c.permission_id)
                                  .where(role_permission.c.role_id == role_id))
        return {int(r[0]) for r in rows}


async def test_stored_template_grants_are_renumbered(database_at_0005: str) -> None:
    url = database_at_0005
    db = Database(url)
    try:
        async with db.transaction() as conn:
            made = await create_account(conn, account_name="Old", owner_name="O",
                                        owner_email="o@old.example", now_s=1_700_000_000)
            await conn.execute(insert(role).values(
                role_id=77, account_id=made.account_id, role_name="Templates",
                description="", status="enabled", builtin="", created_at=1, updated_at=1))
            await conn.execute(insert(role_permission), [
                {"role_id": 77, "permission_id": p} for p in (204, 206, 207)])
        await anyio.to_thread.run_sync(upgrade, url)
        assert await _grants(db, 77) == {204, 501, 502}
        assert permissions.expand(await _grants(db, 77)) == {
            permissions.CHANNEL_VIEW, permissions.TEMPLATE_VIEW, permissions.TEMPLATE_MANAGE}
        await anyio.to_thread.run_sync(command.downgrade, alembic_config(url), "0005")
        assert await _grants(db, 77) == {204, 206, 207}
    finally:
        await db.dispose()


def test_the_reference_ids_are_used() -> None:
    assert permissions.BY_NAME[permissions.TEMPLATE_VIEW].id == 501
    assert permissions.BY_NAME[permissions.TEMPLATE_MANAGE].id == 502
