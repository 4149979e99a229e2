"""Rate limiter overhead per call, against a no-op baseline measured in the same run.

    .venv/bin/python -m bench.ratelimit [--redis redis://127.0.0.1:6379/15] [--calls 20000]

For each limiter: the mean cost of one `await limiter.hit(key)` on the accepted path (limits
high enough that every call passes) and on the refused path (one key far over its limit),
sequentially and, for Redis, with 64 calls in flight. Then a 200-call burst against the
contract's limits (50/s, 1,000/min): the accepted count must be exactly 50. Rounds are
interleaved and the median kept, so a noisy neighbour hurts every limiter alike.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis

from dutyline.api.ratelimit import (
    MemoryRateLimiter,
    NoRateLimiter,
    RateLimiter,
    Window,
    default_windows,
)
from dutyline.api.ratelimit_redis import RedisRateLimiter
from dutyline.kit.clock import SystemClock

HUGE = (Window(10**9, 1.0), Window(10**9, 60.0))
CONTRACT = default_windows(50, 1000)
ROUNDS = 5


async def per_call_us(limiter: RateLimiter, keys: list[str], calls: int, inflight: int) -> float:
    """Mean wall time per call in microseconds, `inflight` calls at a time."""
    started = time.perf_counter()
    if inflight == 1:
        for i in range(calls):
            await limiter.hit(keys[i % len(keys)])
    else:
        async def worker(offset: int) -> None:
            for i in range(offset, calls, inflight):
                await limiter.hit(keys[i % len(keys)])

        await asyncio.gather(*[worker(o) for o in range(inflight)])
    return (time.perf_counter() - started) / calls * 1e6


async def burst_accepted(make: Callable[[], RateLimiter], concurrent: bool) -> tuple[int, float]:
    limiter = make()
    key = f"a:burst-{secrets.token_hex(4)}"
    try:
        started = time.perf_counter()
        if concurrent:
            decisions = await asyncio.gather(*[limiter.hit(key) for _ in range(200)])
        else:
            decisions = [await limiter.hit(key) for _ in range(200)]
        elapsed = time.perf_counter() - started
    finally:
        await limiter.close()
    return sum(d.allowed for d in decisions), elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    prefix = f"dutyline:bench:{secrets.token_hex(4)}:"
    clock = SystemClock()
    accounts = [f"a:{i}" for i in range(1000)]

    limiters: dict[str, Callable[[], RateLimiter]] = {
        "no-op": NoRateLimiter,
        "memory": lambda: MemoryRateLimiter(HUGE, clock),
        "redis": lambda: RedisRateLimiter(args.redis, HUGE, prefix=prefix),
    }
    refusing: dict[str, Callable[[], RateLimiter]] = {
        "memory": lambda: MemoryRateLimiter(CONTRACT, clock),
        "redis": lambda: RedisRateLimiter(args.redis, CONTRACT, prefix=prefix),
    }
    # (name, scenario) -> samples in µs
    samples: dict[tuple[str, str], list[float]] = {}

    async def measure(name: str, scenario: str, make: Callable[[], RateLimiter],
                      run: Callable[[RateLimiter], Awaitable[float]]) -> None:
        limiter = make()
        try:
            samples.setdefault((name, scenario), []).append(await run(limiter))
        finally:
            await limiter.close()

    redis_calls = max(1000, args.calls // 10)
    for _ in range(ROUNDS):
        for name, make in limiters.items():
            n = redis_calls if name == "redis" else args.calls
            await measure(name, "accepted, sequential", make,
                          lambda lim, n=n: per_call_us(lim, accounts, n, 1))
            await measure(name, "accepted, 64 in flight", make,
                          lambda lim, n=n: per_call_us(lim, accounts, n, 64))
        for name, make in refusing.items():
            n = redis_calls if name == "redis" else args.calls
            await measure(name, "refused, sequential", make,
                          lambda lim, n=n: per_call_us(lim, ["a:hot"], n, 1))

    print(f"{'limiter':8} {'scenario':24} {'µs/call':>9} {'over no-op':>11}")
    baseline = {s: statistics.median(v) for (n, s), v in samples.items() if n == "no-op"}
    for (name, scenario), values in samples.items():
        median = statistics.median(values)
        base = baseline.get(scenario, baseline["accepted, sequential"])
        print(f"{name:8} {scenario:24} {median:9.2f} {median - base:11.2f}")

    print()
    print(f"{'limiter':8} {'burst of 200':24} {'accepted':>9} {'elapsed ms':>11}")
    for name, make, concurrent in [
        ("memory", lambda: MemoryRateLimiter(CONTRACT, clock), False),
        ("redis", lambda: RedisRateLimiter(args.redis, CONTRACT, prefix=prefix), True),
    ]:
        accepted, elapsed = await burst_accepted(make, concurrent)
        shape = "200 concurrent" if concurrent else "200 sequential"
        print(f"{name:8} {shape:24} {accepted:9d} {elapsed * 1000:11.1f}")
        assert accepted == 50, f"{name}: {accepted} accepted of a 200-call burst, not 50"

    client = aioredis.Redis.from_url(args.redis)
    try:
        keys = [k async for k in client.scan_iter(match=f"{prefix}*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
