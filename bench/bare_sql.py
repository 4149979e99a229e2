"""The same-SQL baseline of /team/list: a bare ASGI app that runs the statements dutyline's
/team/list runs, on the plain driver, and answers the envelope encoded with msgspec.

Per request: the body drained, the `app_key` taken from the query string and hashed (SHA-256),
the key looked up by its hash (the caller query of platform/app_key/repository.py: the key's
member and the permissions of their enabled roles), then the page of teams with its window
count (platform/team/repository.py: 20 items, newest first) read into msgspec structs and
encoded with the request id. The SQL text is compiled once at start from dutyline's own
statements, so both sides send the same SQL; nothing of dutyline runs per request. SQLite:
stdlib `sqlite3`, one connection (WAL, as dutyline opens it), the statements run inline on the
event loop in one read transaction. PostgreSQL (a `postgresql+asyncpg://` URL): an asyncpg
pool, one connection checkout per request, statements prepared by asyncpg's cache.

Served by uvicorn with the options of bench/bare_asgi.py (uvloop, httptools, one process).

    python -m bench.bare_sql --database-url sqlite+aiosqlite:///path/dutyline.db --port 8098
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sqlite3
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import msgspec

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PAGE_SIZE = 20
_POSTCOMPILE = re.compile(r"__\[POSTCOMPILE_(\w+)\]")


class TeamItem(msgspec.Struct):
    account_id: int
    team_id: int
    team_name: str
    description: str
    status: str
    creator_id: int
    creator_name: str
    created_at: int
    updated_at: int
    updated_by: int
    updated_by_name: str
    person_ids: list[int]
    ref_id: str


class Page(msgspec.Struct):
    p: int
    limit: int
    total: int
    items: list[TeamItem]


class Envelope(msgspec.Struct):
    request_id: str
    data: Page


_encoder = msgspec.json.Encoder()
_UNAUTHORIZED = b'{"request_id":"","error":{"code":"Unauthorized","message":"bad app_key"}}'


Compiled = tuple[str, list[str], dict[str, Any]]


def compiled(postgres: bool) -> tuple[Compiled, Compiled]:
    """(SQL, parameter names in order, their bound values) of the caller query and of the
    page of teams, compiled from dutyline's statements for the target dialect."""
    from dutyline.platform.app_key.repository import _CALLER_QUERY
    from dutyline.platform.team.repository import _page_statements

    if postgres:
        from sqlalchemy.dialects.postgresql.asyncpg import dialect
    else:
        from sqlalchemy.dialects.sqlite.pysqlite import dialect  # type: ignore[assignment]
    d = dialect()
    out = []
    for stmt in (_CALLER_QUERY, _page_statements(False, False, "created_at", False)[1]):
        c = stmt.compile(dialect=d)
        # Literal-valued binds (the aggregate's separator) are rendered in place.
        inline = {m: c.binds[m].value for m in _POSTCOMPILE.findall(c.string)}
        sql = _POSTCOMPILE.sub(lambda m, v=inline: f"'{v[m[1]]}'", c.string)
        names = [n for n in c.positiontup or [] if n not in inline]
        out.append((sql, names, {n: c.binds[n].value for n in names}))
    return out[0], out[1]


def _item(r: Any) -> TeamItem:
    csv = r[13]
    return TeamItem(r[1], r[0], r[2], r[4], r[5], r[7], r[11] or "", r[9], r[10], r[8],
                    r[12] or "", sorted(int(p) for p in csv.split(",")) if csv else [], r[6])


def _key_hash(scope: Scope) -> str:
    key = dict(parse_qsl(scope["query_string"].decode())).get("app_key", "")
    return hashlib.sha256(key.encode()).hexdigest()


def make_app(database_url: str) -> Callable[..., Awaitable[None]]:
    postgres = database_url.startswith("postgresql")
    (caller_sql, caller_args, caller_bound), (page_sql, page_args, page_bound) = compiled(
        postgres)
    state: dict[str, Any] = {}

    def args(names: list[str], bound: dict[str, Any], values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(values[n] if n in values else bound[n] for n in names)

    def read_sqlite(key_hash: str) -> tuple[int, list[Any]] | None:
        conn: sqlite3.Connection = state["conn"]
        conn.execute("BEGIN")
        try:
            rows = conn.execute(caller_sql,
                                args(caller_args, caller_bound, {"key_hash": key_hash}))
            first = rows.fetchone()
            if first is None:
                return None
            rows.fetchall()
            page = conn.execute(page_sql, args(page_args, page_bound, {
                "account_id": first[4], "offset": 0, "limit": PAGE_SIZE})).fetchall()
        finally:
            conn.execute("COMMIT")
        return (page[0][-1] if page else 0), page

    async def read_postgres(key_hash: str) -> tuple[int, list[Any]] | None:
        async with state["pool"].acquire() as conn:
            rows = await conn.fetch(caller_sql,
                                    *args(caller_args, caller_bound, {"key_hash": key_hash}))
            if not rows:
                return None
            page = await conn.fetch(page_sql, *args(page_args, page_bound, {
                "account_id": rows[0][4], "offset": 0, "limit": PAGE_SIZE}))
        return (page[0][-1] if page else 0), page

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if postgres:
                        import asyncpg

                        state["pool"] = await asyncpg.create_pool(
                            database_url.replace("postgresql+asyncpg://", "postgresql://"),
                            min_size=4, max_size=20)
                    else:
                        path = database_url.split(":///", 1)[1]
                        conn = sqlite3.connect(path, isolation_level=None,
                                               check_same_thread=False)
                        conn.execute("PRAGMA journal_mode=WAL")
                        state["conn"] = conn
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if postgres:
                        await state["pool"].close()
                    else:
                        state["conn"].close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False)
        key_hash = _key_hash(scope)
        found = await read_postgres(key_hash) if postgres else read_sqlite(key_hash)
        if found is None:
            status, body = 401, _UNAUTHORIZED
        else:
            total, rows = found
            status = 200
            body = _encoder.encode(Envelope(os.urandom(16).hex(), Page(
                1, PAGE_SIZE, total, [_item(r) for r in rows])))
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]})
        await send({"type": "http.response.body", "body": body})

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8098)
    args = parser.parse_args()
    uvicorn.run(make_app(args.database_url), host=args.host, port=args.port, workers=1,
                loop="uvloop", http="httptools", log_level="warning", access_log=False,
                proxy_headers=False, lifespan="on")


if __name__ == "__main__":
    main()
