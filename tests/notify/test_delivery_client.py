"""The delivery client's connections: receivers that hang must not hold every connection
while the deliveries to the others wait for one (a batch sends up to 32 side by side, and a
worker runs several batches)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import pytest

from dutyline.config import Settings
from dutyline.kit.clock import SystemClock
from dutyline.kit.outbound import OutboundPolicy, guarded_client
from dutyline.kit.secretbox import SecretBox
from dutyline.notify.delivery.adapters.base import SendEnv, session_for

pytestmark = pytest.mark.anyio

OPEN = OutboundPolicy(allow_private=True, retry=None)
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def _server(handle: Handler) -> AsyncIterator[str]:
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
    writer.close()


Post = Callable[[str], Awaitable[int]]  # a POST of `{}` to a URL: its status


async def _hanging_receivers_leave_room(post: Post, hanging: int) -> None:
    accepted = 0
    all_held = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        if accepted == hanging:
            all_held.set()
        with contextlib.suppress(Exception):
            await reader.read()  # never answers; returns when the client goes away
        writer.close()

    async with _server(hang) as stuck, _server(_answer) as fine:
        waiting = [asyncio.create_task(post(stuck)) for _ in range(hanging)]
        try:
            # Every hanging request holds a connection of its own (a bounded pool would keep
            # the rest queued, and this would not happen: the guard only stops a broken run).
            with anyio.fail_after(30):
                await all_held.wait()
            assert await post(fine) == 200
            assert not any(task.done() for task in waiting)
        finally:
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)


async def test_a_guarded_client_has_httpx_s_hundred_connections_not_httpcore_s_ten() -> None:
    async with guarded_client(OPEN, timeout=60) as client:
        async def post(url: str) -> int:
            return (await client.post(url, content=b"{}")).status_code

        await _hanging_receivers_leave_room(post, hanging=40)


async def test_the_delivery_client_has_no_bound_on_connections() -> None:
    env = SendEnv(settings=Settings(), policy=OPEN, secrets=SecretBox("test"),
                  clock=SystemClock())
    async with session_for(env) as session:
        async def post(url: str) -> int:
            async with session.post(url, data=b"{}") as reply:
                return reply.status

        await _hanging_receivers_leave_room(post, hanging=150)
