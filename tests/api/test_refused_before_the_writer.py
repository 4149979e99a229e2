"""On SQLite a write operation is authenticated, limited and decoded before it takes the
process's one writer: while another transaction holds the writer, a write with an unknown key
is refused at once, and a valid write goes through as soon as the writer is free. (A refusal
of a known caller, 403 or 400, still waits: its audit row is a write.)"""

from __future__ import annotations

import anyio
import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio
# Far longer than a refusal takes: past it, the refusal was waiting for the writer.
BLOCKED_S = 20


@pytest.fixture
def database_url(sqlite_url: str) -> str:
    """SQLite only: PostgreSQL has no process-wide writer to wait for."""
    return sqlite_url


async def test_an_unknown_key_does_not_wait_for_the_writer(api: Api, owner: Person) -> None:
    body = {"team_name": "Blocked"}
    writer_free = anyio.Event()
    write_answer: list[int] = []

    # The transaction holds the writer until the block ends (it exits before the group).
    async with anyio.create_task_group() as group, api.runtime.db.transaction(write=True):

        async def valid_write() -> None:
            reply = await api.call("/team/upsert", body, key=owner.key)
            assert writer_free.is_set(), "a write ran while another held the writer"
            write_answer.append(reply.status)

        group.start_soon(valid_write)
        with anyio.fail_after(BLOCKED_S):
            unknown = await api.call("/team/upsert", body, key="k" * 32)
            malformed = await api.call("/team/upsert", {"team_name": 5}, key="k" * 31)
        assert (unknown.status, unknown.code) == (401, "Unauthorized")
        assert (malformed.status, malformed.code) == (401, "Unauthorized")
        assert write_answer == []  # the valid one waits for the writer
        writer_free.set()
    assert write_answer == [200]
    teams = await api.call("/team/list", {}, key=owner.key)
    assert [t["team_name"] for t in teams.data["items"]] == ["Blocked"]
