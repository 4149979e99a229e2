"""Real A2A agents for the tests, built with a2a-sdk's server side and served by uvicorn on
loopback inside the test's event loop.

    async with a2a_peer() as peer:             # modern card at /.well-known/agent-card.json
    async with a2a_peer(legacy=True) as peer:  # v0.3 card only at /.well-known/agent.json
    async with a2a_peer(bearer="s3cret") as peer:   # every path needs Authorization: Bearer
    async with bad_card_server() as base:      # broken cards under a few paths

The agent answers "echo: <text>" as a message; a text starting with "task:" is answered as a
task with a text artifact (streamed in pieces when the client streams); "fail:" makes the task
fail; "hang:" waits until the peer stops, for timeout tests."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

RPC_PATH = "/a2a/jsonrpc"
LEGACY_CARD_PATH = "/.well-known/agent.json"


class EchoExecutor(AgentExecutor):
    def __init__(self, release: asyncio.Event) -> None:
        self.release = release
        self.seen_contexts: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        self.seen_contexts.append(context.context_id or "")
        if text.startswith("hang:"):
            await self.release.wait()
        if not text.startswith(("task:", "fail:")):
            await event_queue.enqueue_event(
                new_text_message(f"echo: {text}", context_id=context.context_id,
                                 task_id=context.task_id)
            )
            return
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if text.startswith("fail:"):
            await updater.failed(updater.new_agent_message([Part(text="could not do it")]))
            return
        await updater.start_work()
        body = text.removeprefix("task:").strip()
        await updater.add_artifact([Part(text=f"done: {body}")], name="result")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def _card(base_url: str, *, name: str, streaming: bool, bearer: bool) -> AgentCard:
    card = AgentCard(
        name=name,
        description="Echoes what it is told",
        version="1.0.0",
        supported_interfaces=[AgentInterface(
            url=base_url + RPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0",
        )],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="Echo", description="Repeats the input",
                       tags=["test"], examples=["hello"]),
            AgentSkill(id="task", name="Task", description="Answers as a task",
                       tags=["test"]),
        ],
    )
    if bearer:
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
    return card


def _legacy_card(base_url: str, name: str) -> dict[str, Any]:
    """A card in the v0.3 shape (url, preferredTransport, protocolVersion) that older agents
    still serve from the legacy path."""
    return {
        "name": name,
        "description": "Echoes what it is told (v0.3 card)",
        "url": base_url + RPC_PATH,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "version": "0.3.0",
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Repeats the input",
                    "tags": ["test"]}],
    }


class _RequireHeader:
    """Refuses every request without the expected header: the card and the RPC alike."""

    def __init__(self, app: ASGIApp, name: str, value: str) -> None:
        self.app, self.name, self.value = app, name.lower().encode(), value.encode()
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(self.name) != self.value:
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


@dataclass
class Peer:
    base_url: str
    executor: EchoExecutor
    port: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def card_url(self) -> str:
        return self.base_url + "/.well-known/agent-card.json"


def _listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def _serve(build: Callable[[str], Awaitable[ASGIApp]]) -> AsyncIterator[tuple[str, int]]:
    sock = _listening_socket()
    port = int(sock.getsockname()[1])
    base_url = f"http://127.0.0.1:{port}"
    app = await build(base_url)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield base_url, port
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextlib.asynccontextmanager
async def a2a_peer(
    *, name: str = "Echo Agent", legacy: bool = False, streaming: bool = True,
    bearer: str | None = None, api_key: tuple[str, str] | None = None,
) -> AsyncIterator[Peer]:
    release = asyncio.Event()
    executor = EchoExecutor(release)

    async def build(base_url: str) -> ASGIApp:
        card = _card(base_url, name=name, streaming=streaming and not legacy,
                     bearer=bearer is not None)
        handler = DefaultRequestHandler(executor, InMemoryTaskStore(), card)
        routes: list[Route] = list(
            create_jsonrpc_routes(handler, RPC_PATH, enable_v0_3_compat=legacy)
        )
        if legacy:
            legacy_body = _legacy_card(base_url, name)

            async def legacy_card(_: Request) -> Response:
                return JSONResponse(legacy_body)

            routes.append(Route(LEGACY_CARD_PATH, legacy_card, methods=["GET"]))
        else:
            routes.extend(create_agent_card_routes(card))
        app: ASGIApp = Starlette(routes=routes)
        if bearer is not None:
            app = _RequireHeader(app, "authorization", f"Bearer {bearer}")
        if api_key is not None:
            app = _RequireHeader(app, api_key[0], api_key[1])
        return app

    async with _serve(build) as (base_url, port):
        try:
            yield Peer(base_url, executor, port)
        finally:
            release.set()


@contextlib.asynccontextmanager
async def bad_card_server() -> AsyncIterator[str]:
    """Broken cards: /not-json/card.json, /wrong-type/card.json (name is a number),
    /no-interface/card.json (parses, but nothing to talk to), /array/card.json, and 500s at
    /broken/.well-known/agent-card.json; /hang/card.json answers only when the server stops."""

    async def not_json(_: Request) -> Response:
        return PlainTextResponse("this is not a card")

    async def wrong_type(_: Request) -> Response:
        return JSONResponse({"name": 5, "skills": "many"})

    async def no_interface(_: Request) -> Response:
        return JSONResponse({"name": "Lonely", "description": "no way to reach me",
                             "version": "1", "skills": []})

    async def array(_: Request) -> Response:
        return JSONResponse([1, 2, 3])

    async def broken(_: Request) -> Response:
        return PlainTextResponse("boom", status_code=500)

    release = asyncio.Event()

    async def hang(_: Request) -> Response:
        await release.wait()
        return PlainTextResponse("too late")

    async def build(_: str) -> ASGIApp:
        return Starlette(routes=[
            Route("/not-json/card.json", not_json),
            Route("/wrong-type/card.json", wrong_type),
            Route("/no-interface/card.json", no_interface),
            Route("/array/card.json", array),
            Route("/broken/.well-known/agent-card.json", broken),
            Route("/hang/card.json", hang),
        ])

    async with _serve(build) as (base_url, _port):
        try:
            yield base_url
        finally:
            release.set()
