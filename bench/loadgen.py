"""The load generator the harness uses when wrk is not installed: bench/wrk/<script>'s requests
from one asyncio process over keep-alive HTTP/1.1 connections, printing wrk's WRKJSON line.

    python -m bench.loadgen URL SCRIPT SECONDS CONNECTIONS

It is slower than wrk (Python builds and parses every request), so against the bare app it is
partly the limit being measured: compare server CPU per request rather than req/s."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any


def _bodies(script: str) -> Callable[[int], bytes | None]:
    """What bench/wrk/<script> sends, request by request (None: a GET)."""
    tag, fixed = os.environ.get("WRK_RUN_TAG", "x"), os.environ.get("WRK_BODY", "{}").encode()
    if script == "get.lua":
        return lambda _: None
    if script == "upsert.lua":
        return lambda n: f'{{"team_name":"{tag}-{n}","description":"bench"}}'.encode()
    if script != "ingest.lua":
        return lambda _: fixed
    active = [f"seed-{i}" for i in range(int(os.environ.get("SEED_KEYS", "600")))]

    def ingest(n: int) -> bytes:  # 80 % updates, 15 % new keys, 5 % recoveries
        r, status = random.random(), "Warning"
        if r < 0.80 and active:
            key, status = random.choice(active), random.choice(("Critical", "Warning"))
        elif r < 0.95 or not active:
            key = f"n-{tag}-{n}"
            active.append(key)
        else:
            key, status = active.pop(random.randrange(len(active))), "Ok"
        return json.dumps({"title_rule": "$svc latency high", "event_status": status,
                           "alert_key": key, "description": "p99 above SLO", "labels": {
                               "host": key, "svc": f"svc-{ord(key[-1]) % 20}",
                               "env": "prod"}}).encode()
    return ingest


async def _load(url: str, script: str, seconds: float, connections: int) -> dict[str, Any]:
    from urllib.parse import urlsplit

    u = urlsplit(url)
    target = (u.path + ("?" + u.query if u.query else "")).encode()
    body_of, latencies, counter = _bodies(script), [], [0]
    errors = {"status_errors": 0, "read_errors": 0, "connect_errors": 0}
    deadline = time.monotonic() + seconds
    # As bench/wrk/get.lua: a console session's cookie on every request when WRK_COOKIE is set.
    cookie = os.environ.get("WRK_COOKIE", "")
    cookie_header = b"Cookie: %s\r\n" % cookie.encode() if cookie else b""

    async def connection() -> None:
        try:
            reader, writer = await asyncio.open_connection(u.hostname, u.port)
        except OSError:
            errors["connect_errors"] += 1
            return
        while time.monotonic() < deadline:
            counter[0] += 1
            body = body_of(counter[0])
            head = b"POST " if body is not None else b"GET "
            extra = (b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
                     if body is not None else b"")
            started = time.perf_counter()
            writer.write(head + target + b" HTTP/1.1\r\nHost: %s\r\n" % u.netloc.encode()
                         + cookie_header + extra + b"\r\n" + (body or b""))
            try:
                headers = (await reader.readuntil(b"\r\n\r\n")).lower()
                length = int(headers.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
                await reader.readexactly(length)
            except (OSError, asyncio.IncompleteReadError, IndexError, ValueError):
                errors["read_errors"] += 1
                break
            latencies.append((time.perf_counter() - started) * 1e6)
            errors["status_errors"] += not headers.startswith(b"http/1.1 2")
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    duration, ordered = time.perf_counter() - started, sorted(latencies) or [0.0]

    def pct(q: float) -> int:
        return int(ordered[min(len(ordered) - 1, int(len(ordered) * q))])
    return {"requests": len(latencies), "duration_us": int(duration * 1e6), "bytes": 0,
            "write_errors": 0, "timeouts": 0, **errors, "p50_us": pct(0.5),
            "p90_us": pct(0.9), "p99_us": pct(0.99), "max_us": int(ordered[-1])}


def main() -> int:
    url, script, secs, conns = sys.argv[1:5]
    with contextlib.suppress(ImportError):
        import uvloop
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    print("WRKJSON " + json.dumps(asyncio.run(_load(url, script, float(secs), int(conns)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
