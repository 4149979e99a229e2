"""The baseline: a bare ASGI app that answers every POST with fixed JSON bytes.

Served by uvicorn with the same options `dutyline serve` uses (uvloop, httptools, one
process, no access log, warning log level, no proxy headers), so the gap between this and a
dutyline endpoint is the cost of the application itself, not of the server or the network.

    python -m bench.bare_asgi --host 127.0.0.1 --port 8099
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# About the size of a small dutyline envelope.
BODY = b'{"request_id":"0123456789abcdef0123456789abcdef","data":{"ok":true}}'
_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(BODY)).encode()),
]
_NOT_ALLOWED = b'{"error":"method not allowed"}'


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    # Drain the request body, as a real endpoint must.
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_NOT_ALLOWED)).encode()),
        ]})
        await send({"type": "http.response.body", "body": _NOT_ALLOWED})
        return
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": BODY})


def fixed(body: bytes, *, status: int = 200,
          content_type: bytes = b"text/html; charset=utf-8") -> Callable[..., Awaitable[None]]:
    """A bare ASGI app answering every GET with these bytes (a 304 with none): the baseline
    of a page served from memory, with the same body on the same transport."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return answer


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        workers=1,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        proxy_headers=False,
    )


if __name__ == "__main__":
    main()
