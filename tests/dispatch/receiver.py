"""A webhook receiver on a real loopback port: records every request (headers and raw body)
and answers with the status the test sets; `/redirect` answers 307 to `redirect_to`. The
answers to the paths in `hold` wait until `release` is set: a send held in flight, for a
test to stop a worker at a known point mid-send (`waiting` counts the requests received
and not answered yet)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fixtures.loopback import serve_asgi

# The longest a held answer waits when the test never releases it.
HOLD_MAX_S = 120.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    query: dict[str, str] = field(default_factory=dict)


@dataclass
class Receiver:
    base_url: str = ""
    status: int = 200
    redirect_to: str = ""
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold: set[str] = field(default_factory=set)
    release: threading.Event = field(default_factory=threading.Event)
    waiting: int = 0

    def url(self, path: str = "/hook") -> str:
        return self.base_url + path

    def in_flight(self) -> int:
        """Requests received and not answered yet."""
        with self.lock:
            return self.waiting

    def take(self) -> list[Received]:
        with self.lock:
            got, self.received = self.received, []
        return got


def build(receiver: Receiver) -> Starlette:
    async def hook(request: Request) -> Response:
        body = await request.body()
        with receiver.lock:
            receiver.received.append(Received(request.url.path, dict(request.headers), body,
                                              dict(request.query_params)))
            held = request.url.path in receiver.hold and not receiver.release.is_set()
            receiver.waiting += held
        if held:
            try:
                await asyncio.to_thread(receiver.release.wait, HOLD_MAX_S)
            finally:
                with receiver.lock:
                    receiver.waiting -= 1
        if request.url.path == "/redirect":
            return RedirectResponse(receiver.redirect_to, status_code=307)
        return JSONResponse({"ok": receiver.status < 300}, status_code=receiver.status)

    return Starlette(routes=[Route("/{path:path}", hook, methods=["POST", "GET"])])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    with serve_asgi(build(r)) as base_url:
        r.base_url = base_url
        try:
            yield r
        finally:
            r.release.set()
