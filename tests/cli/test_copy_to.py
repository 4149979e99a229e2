"""`dutyline copy-to URL` moves a SQLite deployment to PostgreSQL (to another SQLite file
when no PostgreSQL is configured): every table arrives with every row, the target's
sequences continue after the copied ids, and a server on the target answers the same
incidents and takes new pushes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.db.tables import metadata
from tests.cli.data_support import PUSH_PATH, call, cli, empty_database, incidents_of
from tests.fixtures.server import backends, run_cli, running_server
from tests.fixtures.table_rows import fill

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("multiprocess")]


async def _fill(url: str) -> dict[str, Any]:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            written: dict[str, Any] = await conn.run_sync(fill)
            return written
    finally:
        await engine.dispose()


async def _every_row(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """{table: its rows, sorted} through the table modules (the same types on both)."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return {t.name: sorted((tuple(r) for r in await conn.execute(select(t))), key=repr)
                    for t in metadata.sorted_tables}
    finally:
        await engine.dispose()


def _as_operator_writes(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://").replace(
        "sqlite+aiosqlite://", "sqlite://")


@pytest.mark.parametrize("backend", backends())
def test_copy_to_moves_every_table_and_the_server_answers_the_same(
        backend: str, tmp_path: Path) -> None:
    with empty_database("sqlite", tmp_path / "source") as source, \
            empty_database(backend, tmp_path / "target") as target:
        owner_key = json.loads(cli(["init"], source))["app_key"]
        with running_server(source) as server, server.client() as client:
            channel = call(client, owner_key, "/channel/create", {"channel_name": "Moved"})
            integration = call(client, owner_key, "/integration/create", {
                "channel_id": channel["channel_id"], "integration_name": "std"})
            push_key = integration["integration_key"]
            for n in range(5):
                answer = client.post(PUSH_PATH, params={"integration_key": push_key}, json={
                    "alert_key": f"a{n}", "title_rule": f"push {n}", "event_status": "Info"})
                assert answer.status_code == 200, answer.text
            before = incidents_of(client, owner_key)
        # A row in every table, the ones no request above wrote included.
        asyncio.run(_fill(source["DUTYLINE_DATABASE_URL"]))
        source_rows = asyncio.run(_every_row(source["DUTYLINE_DATABASE_URL"]))
        assert all(source_rows.values())

        url = _as_operator_writes(target["DUTYLINE_DATABASE_URL"])
        done = run_cli(["copy-to", url], source)
        assert done.returncode == 0, done.stderr
        assert f"copied {sum(map(len, source_rows.values()))} rows" in done.stderr
        again = run_cli(["copy-to", url], source)
        assert again.returncode == 1 and "not empty" in again.stderr
        assert asyncio.run(_every_row(target["DUTYLINE_DATABASE_URL"])) == source_rows

        with running_server(target) as server, server.client() as client:
            assert incidents_of(client, owner_key) == before
            # New rows take ids after the copied ones (sequences moved on).
            answer = client.post(PUSH_PATH, params={"integration_key": push_key}, json={
                "alert_key": "a5", "title_rule": "push 5", "event_status": "Info"})
            assert answer.status_code == 200, answer.text
            assert set(incidents_of(client, owner_key)) == {0, 1, 2, 3, 4, 5}
