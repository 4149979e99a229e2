"""The baseline of bench/list_http.py: a bare ASGI app that runs the SQL of one dutyline list
request on the plain driver (stdlib `sqlite3`, or `asyncpg`) and answers with msgspec JSON.

    python -m bench.list_bare --statements FILE --host 127.0.0.1 --port 8099

FILE (written by bench/list_http.py) holds the database URL and, per route ("POST
/incident/list", "GET /console/incidents"), the statements with their parameters exactly as
dutyline sent them for one warm request of that route (SQLAlchemy's `before_cursor_execute`).
Each request drains and decodes its body, runs those statements in one read transaction,
turns every row into a dict (the JSON text columns decoded), and encodes them all with
msgspec in one envelope: what a page of the list costs with no framework, no SQL toolkit and
no templates. Same server options as bench/bare_asgi.py (uvicorn, uvloop, httptools, one
process, no access log).

On SQLite the statements run on one connection in the event loop's thread (the statements
are short and the loop has nothing else to do); on PostgreSQL on an asyncpg pool as large as
dutyline's (20), so 32 connections in flight queue the same way."""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bench.bare_asgi import Receive, Scope, Send

# Columns stored as JSON text: decoded, as a record needs them.
JSON_COLUMNS = frozenset({"labels", "fields", "assigned_to", "responders", "images",
                          "managing_team_ids"})
POOL_SIZE = 20

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.decode
_HEADERS = [(b"content-type", b"application/json")]


def _rows(columns: list[str], found: list[Any]) -> list[dict[str, Any]]:
    json_at = [i for i, c in enumerate(columns) if c in JSON_COLUMNS]
    out = []
    for row in found:
        item = dict(zip(columns, row, strict=True))
        for i in json_at:
            value = row[i]
            if isinstance(value, str):
                item[columns[i]] = _decode(value)
        out.append(item)
    return out


def sqlite_runner(path: str) -> Callable[[list[tuple[str, list[Any]]]], Any]:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=5000")

    async def run(statements: list[tuple[str, list[Any]]]) -> list[list[dict[str, Any]]]:
        results = []
        conn.execute("BEGIN")
        try:
            for sql, params in statements:
                cur = conn.execute(sql, params)
                found = cur.fetchall()
                results.append(_rows([d[0] for d in cur.description or ()], found))
        finally:
            conn.execute("COMMIT")
        return results

    return run


def postgres_runner(url: str) -> tuple[Callable[[], Any], Callable[..., Any]]:
    import asyncpg

    pool: list[Any] = []

    async def start() -> None:
        pool.append(await asyncpg.create_pool(
            url.replace("postgresql+asyncpg://", "postgresql://"),
            min_size=POOL_SIZE, max_size=POOL_SIZE))

    async def run(statements: list[tuple[str, list[Any]]]) -> list[list[dict[str, Any]]]:
        results = []
        async with pool[0].acquire() as conn, conn.transaction():
            for sql, params in statements:
                found = await conn.fetch(sql, *params)
                columns = list(found[0].keys()) if found else []
                results.append(_rows(columns, [tuple(r) for r in found]))
        return results

    return start, run


def build(file: Path) -> Any:
    spec = json.loads(file.read_text())
    url: str = spec["database_url"]
    routes: dict[tuple[str, str], list[tuple[str, list[Any]]]] = {}
    for route, statements in spec["routes"].items():
        method, path = route.split(" ", 1)
        routes[(method, path)] = [(sql, list(params)) for sql, params in statements]
    start: Callable[[], Any] | None = None
    if url.startswith("sqlite"):
        run = sqlite_runner(url.split(":///", 1)[1])
    else:
        start, run = postgres_runner(url)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if start is not None:
                        await start()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        statements = routes.get((scope["method"], scope["path"]))
        if statements is None:
            await send({"type": "http.response.start", "status": 404, "headers": _HEADERS})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        request = _decode(body) if body else {}
        results = await run(statements)
        payload = _encode({"request_id": "0123456789abcdef0123456789abcdef",
                           "data": {"request": request, "results": results}})
        await send({"type": "http.response.start", "status": 200, "headers": [
            *_HEADERS, (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--statements", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    uvicorn.run(build(args.statements), host=args.host, port=args.port, workers=1,
                loop="uvloop", http="httptools", log_level="warning", access_log=False,
                proxy_headers=False)


if __name__ == "__main__":
    main()
