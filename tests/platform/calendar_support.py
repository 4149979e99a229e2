"""Helpers of the service calendar tests, and the reference walk's calendar step."""

from __future__ import annotations

from typing import Any

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api


async def ok(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    reply = await api.call(path, body, key=key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


async def make_calendar(api: Api, who: Person, name: str = "Office days",
                        **extra: Any) -> str:
    created = await ok(api, "/calendar/create", {"cal_name": name, **extra}, who.key)
    return str(created["cal_id"])


async def add_event(api: Api, who: Person, cal_id: str, start: str, end: str, *,
                    is_off: bool = True, summary: str = "Holiday", **extra: Any) -> str:
    done = await ok(api, "/calendar/event/upsert", {
        "cal_id": cal_id, "summary": summary, "start_at": start, "end_at": end,
        "is_off": is_off, **extra}, who.key)
    return str(done["event_id"])


async def calendars_step(w: Any) -> None:
    """The reference walk (tests/api/test_reference_coverage.py): every /calendar/*
    operation, each answer checked against the reference's schema."""
    created = await w.call("/calendar/create", {
        "cal_name": "Production On-Call Calendar", "description": "Production team",
        "timezone": "Asia/Shanghai", "workdays": [1, 2, 3, 4, 5]})
    cal_id = created["cal_id"]
    await w.call("/calendar/update", {"cal_id": cal_id, "cal_name": "Production (updated)",
                                      "timezone": "America/New_York"})
    await w.call("/calendar/info", {"cal_id": cal_id})
    await w.call("/calendar/list", {"kind": "personal"})
    await w.call("/calendar/list", {"kind": "region.official.holiday"})
    event = await w.call("/calendar/event/upsert", {
        "cal_id": cal_id, "summary": "Labour Day", "start_at": "2024-05-01",
        "end_at": "2024-05-06", "is_off": True, "description": "International Workers Day"})
    await w.call("/calendar/event/upsert", {
        "cal_id": cal_id, "event_id": event["event_id"], "summary": "Labour Day",
        "start_at": "2024-05-01", "end_at": "2024-05-04", "is_off": True})
    await w.call("/calendar/event/list", {"cal_id": cal_id, "year": 2024, "month": 5})
    await w.call("/calendar/event/list", {"cal_id": cal_id, "year": 2024})
    await w.call("/calendar/event/delete", {"cal_id": cal_id, "event_id": event["event_id"]})
    await w.call("/calendar/delete", {"cal_id": cal_id})
