"""Cost of finding an operation's route: the app called in-process with an ASGI scope, a
request without app_key (401, so no database work), to the last-registered operation.

    python -m bench.route_lookup

Prints the median µs per request over 5 rounds of 2,000 calls."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dutyline.app import create_app
from dutyline.config import Settings
from dutyline.db.migrate import upgrade


async def _measure(url: str) -> tuple[str, float]:
    app = create_app(Settings(database_url=url, rate_limit_per_second=0,
                              rate_limit_per_minute=0, log_level="warning"))
    path = app.state.operations[-1].path

    async def call() -> None:
        scope: dict[str, Any] = {
            "type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
            "query_string": b"", "headers": [(b"content-type", b"application/json")],
            "client": ("127.0.0.1", 1), "server": ("bench", 80), "scheme": "http",
            "root_path": "", "http_version": "1.1",
        }
        messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive() -> dict[str, Any]:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def send(_: dict[str, Any]) -> None:
            return None

        await app(scope, receive, send)

    for _ in range(200):
        await call()
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(2000):
            await call()
        rounds.append((time.perf_counter() - started) / 2000 * 1e6)
    return path, statistics.median(rounds)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'route.db'}"
        upgrade(url)
        path, micros = asyncio.run(_measure(url))
    print(f"{micros:.1f} µs per request to {path} (401, no database work)")


if __name__ == "__main__":
    main()
