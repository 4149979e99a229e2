"""Public pages yield to urgent requests (api/priority.py): a view waits while an API or
console request is in flight, never longer than the bounds, and costs nothing otherwise."""

from __future__ import annotations

import asyncio

import pytest

from dutyline.api import priority as priority_module
from dutyline.api.priority import Priority

pytestmark = pytest.mark.anyio


def test_with_nothing_urgent_a_view_does_not_wait_at_all() -> None:
    waiting = Priority().after_urgent()
    with pytest.raises(StopIteration):  # finished on its first step: never suspended
        waiting.send(None)


async def test_a_view_waits_for_the_urgent_request_in_flight() -> None:
    p = Priority()
    token = p.begin()
    view = asyncio.ensure_future(p.after_urgent())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not view.done()
    p.end(token)
    await asyncio.wait_for(view, 5)
    assert p.yielded == 1 and not p.busy


async def test_a_long_urgent_request_holds_views_back_only_so_long(
        monkeypatch: pytest.MonkeyPatch) -> None:
    p = Priority()
    clock = [1000.0]
    monkeypatch.setattr(priority_module.time, "monotonic", lambda: clock[0])
    p.begin()  # a stream that stays open
    clock[0] += priority_module.URGENT_MAX_S
    waiting = p.after_urgent()
    with pytest.raises(StopIteration):  # it counts no more: the view goes on at once
        waiting.send(None)
    assert not p.busy


async def test_a_view_waits_at_most_the_yield_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(priority_module, "YIELD_MAX_S", 0.01)
    p = Priority()
    p.begin()  # never ends within the test
    await asyncio.wait_for(p.after_urgent(), 5)
    assert p.yielded == 1 and p.busy
