"""Shared bits of the schedule tests: a clock fixed in time, layer builders."""

from __future__ import annotations

from typing import Any

from tests.fixtures.api import Api

# Monday 2026-04-13 00:00 in Asia/Shanghai (16:00 UTC the day before).
MONDAY_SHANGHAI = 1776009600
DAY = 86_400


def rotation(*person_groups: list[int], enable: int, unit: str = "day", value: int = 1,
             handoff: int = 0, **more: Any) -> dict[str, Any]:
    return {
        "layer_name": more.pop("layer_name", "Primary"), "mode": 0,
        "groups": [{"group_name": chr(65 + i), "members": [{"role_id": 0, "person_ids": ids}]}
                   for i, ids in enumerate(person_groups)],
        "rotation_unit": unit, "rotation_value": value, "handoff_time": handoff,
        "enable_time": enable, **more,
    }


def override(person_ids: list[int], start: int, end: int) -> dict[str, Any]:
    return {"layer_name": "Override", "mode": 1, "groups": [
        {"group_name": "cover", "members": [{"role_id": 0, "person_ids": person_ids}],
         "start": start, "end": end}]}


async def ok(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    reply = await api.call(path, body, key=key)
    assert reply.status == 200, reply.body
    return reply.data
