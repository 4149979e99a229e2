"""Views that miss the kept page together share one reading (SingleFlight): one run per key,
its answer or its failure for every caller, and a caller going away cancels nobody else's."""

from __future__ import annotations

import asyncio

import pytest

from dutyline.status_page.public.rendercache import SingleFlight

pytestmark = pytest.mark.anyio


async def test_concurrent_calls_with_one_key_share_one_run() -> None:
    flight: SingleFlight[str] = SingleFlight()
    runs = []
    release = asyncio.Event()

    async def read(name: str) -> str:
        runs.append(name)
        await release.wait()
        return f"page {name}"

    calls = [asyncio.ensure_future(flight.run(("p", 1), lambda: read("v1"))) for _ in range(10)]
    other = asyncio.ensure_future(flight.run(("p", 2), lambda: read("v2")))
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*calls) == ["page v1"] * 10
    assert await other == "page v2"
    assert sorted(runs) == ["v1", "v2"] and flight.shared == 9
    # Done: the next call with the same key reads again.
    assert await flight.run(("p", 1), lambda: read("again")) == "page again"


async def test_a_failure_reaches_every_caller_and_a_cancelled_caller_stops_nobody() -> None:
    flight: SingleFlight[str] = SingleFlight()
    release = asyncio.Event()

    async def failing() -> str:
        await release.wait()
        raise RuntimeError("database gone")

    first = asyncio.ensure_future(flight.run("k", failing))
    second = asyncio.ensure_future(flight.run("k", failing))
    await asyncio.sleep(0)
    first.cancel()  # its client went away
    release.set()
    with pytest.raises(RuntimeError, match="database gone"):
        await second
    with pytest.raises(asyncio.CancelledError):
        await first

    async def fine() -> str:
        await asyncio.sleep(0)
        return "ok"

    one = asyncio.ensure_future(flight.run("j", fine))
    two = asyncio.ensure_future(flight.run("j", fine))
    await asyncio.sleep(0)
    one.cancel()
    assert await two == "ok"
