"""docs/architecture.md's example of the door runs as written: a unit of work for the system
actor renames a team, and the audit log keeps it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from dutyline.api.runtime import Runtime
from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _example() -> str:
    section = DOC.read_text().split("## The door: one unit of work", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the door's section has no example"
    return found[1]


async def test_the_door_s_example_runs_and_is_audited(api: Api, owner: Person) -> None:
    made = await api.call("/team/upsert", {"team_name": "SRE"}, key=owner.key)
    team_id = made.data["team_id"]
    namespace: dict[str, Any] = {"Runtime": Runtime}
    exec(compile(_example(), str(DOC), "exec"), namespace)
    assert await namespace["rename"](api.runtime, owner.account_id, team_id,
                                     "Platform") == team_id
    info = await api.call("/team/info", {"team_id": team_id}, key=owner.key)
    assert info.data["team_name"] == "Platform"
    async with api.runtime.db.transaction(write=False) as conn:
        [row] = (await conn.execute(select(audit_log).where(
            audit_log.c.request_id == "rename-1"))).all()
    assert (row.operation, row.credential, row.outcome) == ("team.upsert", "system", "OK")
