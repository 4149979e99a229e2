"""Which requests go first when a process is saturated.

A process serves every request on one event loop, and each turn of the loop runs whatever is
ready, in turn. Under a flood of public status page views, a turn holds dozens of page
answers, and an API write that needs ten turns (one per statement) waits behind all of them.
So the public pages yield: while a request of the people running the service (an API
operation, a console page) is in flight, a public view that arrives waits for it to finish
(`after_urgent`), at most YIELD_MAX_S. With the flood's connections each waiting for an
answer, the loop's turns are short again and the write answers as if the process were idle;
the waiting views are answered right after.

A request counts as urgent for at most URGENT_MAX_S: a stream (the console's live list) or a
WebSocket that stays open does not keep the public pages waiting. When nothing urgent is in
flight, `after_urgent` returns without awaiting anything: a page served from memory stays
one step of the loop."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time

from starlette.types import ASGIApp, Receive, Scope, Send

# How long a request holds the public pages back, at most.
URGENT_MAX_S = 1.0
# How long a public view waits for urgent requests, at most (then it is answered anyway:
# a steady stream of urgent requests slows the public pages down, never stops them).
YIELD_MAX_S = 0.5


class Priority:
    def __init__(self) -> None:
        # urgent requests in flight -> when they began (monotonic), oldest first
        self._urgent: dict[int, float] = {}
        self._ids = itertools.count()
        self._clear: asyncio.Event | None = None
        self.yielded = 0  # public views that waited (for tests and diagnostics)

    @property
    def busy(self) -> bool:
        return bool(self._urgent)

    def begin(self) -> int:
        """An urgent request starts; `end(token)` when it is answered."""
        token = next(self._ids)
        self._urgent[token] = time.monotonic()
        if self._clear is not None and self._clear.is_set():
            self._clear.clear()
        return token

    def end(self, token: int) -> None:
        self._urgent.pop(token, None)
        if not self._urgent and self._clear is not None:
            self._clear.set()

    async def after_urgent(self) -> None:
        """Until no urgent request is in flight (at most YIELD_MAX_S)."""
        now = time.monotonic()
        while self._urgent:  # those open longer than URGENT_MAX_S count no more
            token, began = next(iter(self._urgent.items()))
            if now - began < URGENT_MAX_S:
                break
            del self._urgent[token]
        if not self._urgent:
            if self._clear is not None:
                self._clear.set()
            return
        oldest = next(iter(self._urgent.values()))
        if self._clear is None:
            self._clear = asyncio.Event()
        self.yielded += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._clear.wait(),
                                   min(YIELD_MAX_S, oldest + URGENT_MAX_S - now))


async def urgent(priority: Priority, app: ASGIApp, scope: Scope, receive: Receive,
                 send: Send) -> None:
    """Run an ASGI app as an urgent request."""
    token = priority.begin()
    try:
        await app(scope, receive, send)
    finally:
        priority.end(token)
