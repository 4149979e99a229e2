"""What a POST costs the sending process, per HTTP client: the figure behind the delivery
path's choice of aiohttp (kit/outbound_aio.py) over httpx (kit/outbound.py).

    .venv/bin/python -m bench.http_clients [--posts 3000] [--concurrency 32] [--rounds 2]

A receiver (bench/bare_asgi.py: fixed JSON for any POST, uvicorn, its own process) on
loopback; from this process, on uvloop as `dutyline worker` runs, `--posts` POSTs of a 1.5 KB
JSON body with a signature and an idempotency key header, `--concurrency` at a time, through
each client in turn, the order repeated `--rounds` times: the guarded httpx client as the
other outbound calls use it, plain httpx, the guarded aiohttp session the deliveries use, and
plain aiohttp. Reported per client: CPU µs of this process per POST (user + system, all
threads: steadier than wall time on a shared machine) and POSTs a second; the medians over
the rounds, and the CPU ratio against the guarded aiohttp session of the same round.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import uvloop

from bench.harness import free_port, stop_process
from dutyline.kit.outbound import OutboundPolicy, guarded_client
from dutyline.kit.outbound_aio import guarded_session

ROOT = Path(__file__).resolve().parents[1]
BODY = b'{"event_type":"i_assign","incident":{"title":"' + b"x" * 1500 + b'"}}'
HEADERS = {"Content-Type": "application/json", "X-Dutyline-Signature": "sha256=abc",
           "Idempotency-Key": "bench"}
POLICY = OutboundPolicy(allow_private=True, retry=None)

Post = Callable[[str], Awaitable[None]]


async def _guarded_httpx() -> tuple[Post, Any]:
    client = guarded_client(POLICY, timeout=10, max_connections=None, max_keepalive=None)

    async def post(url: str) -> None:
        (await client.post(url, content=BODY, headers=HEADERS)).raise_for_status()

    return post, client.aclose


async def _plain_httpx() -> tuple[Post, Any]:
    client = httpx.AsyncClient(timeout=10, limits=httpx.Limits(
        max_connections=None, max_keepalive_connections=None))

    async def post(url: str) -> None:
        (await client.post(url, content=BODY, headers=HEADERS)).raise_for_status()

    return post, client.aclose


async def _aiohttp(session: aiohttp.ClientSession) -> tuple[Post, Any]:
    async def post(url: str) -> None:
        async with session.post(url, data=BODY, headers=HEADERS) as reply:
            reply.raise_for_status()
            await reply.read()

    return post, session.close


CLIENTS: dict[str, Callable[[], Awaitable[tuple[Post, Any]]]] = {
    "httpx, guarded": _guarded_httpx,
    "httpx, plain": _plain_httpx,
    "aiohttp, guarded (deliveries)": lambda: _aiohttp(guarded_session(POLICY, timeout_s=10)),
    "aiohttp, plain": lambda: _aiohttp(aiohttp.ClientSession()),
}


async def measure(make: Callable[[], Awaitable[tuple[Post, Any]]], url: str, posts: int,
                  concurrency: int) -> tuple[float, float]:
    """(CPU µs per POST, POSTs a second), after a warm-up that opens the connections."""
    post, close = await make()
    lanes = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with lanes:
            await post(url)

    try:
        await asyncio.gather(*(one() for _ in range(concurrency * 4)))
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(posts)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await close()
    return cpu / posts * 1e6, posts / wall


async def run(args: argparse.Namespace, url: str) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in CLIENTS}
    for _ in range(args.rounds):
        for name, make in CLIENTS.items():
            results[name].append(await measure(make, url, args.posts, args.concurrency))
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--posts", type=int, default=3000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-m", "bench.bare_asgi", "--port", str(port)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        results = uvloop.run(run(args, f"http://127.0.0.1:{port}/hook"))
    finally:
        stop_process(receiver)
    base = [cpu for cpu, _ in results["aiohttp, guarded (deliveries)"]]
    print(f"{args.posts} POSTs x {args.rounds} rounds, {args.concurrency} at a time")
    print("| client | CPU µs / POST | POSTs / s | CPU vs guarded aiohttp |")
    print("|---|---:|---:|---:|")
    for name, rows in results.items():
        cpu = statistics.median(c for c, _ in rows)
        rate = statistics.median(r for _, r in rows)
        ratio = statistics.median(c / b for (c, _), b in zip(rows, base, strict=True))
        print(f"| {name} | {cpu:,.0f} | {rate:,.0f} | {ratio:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
