"""Rate limits: exact sliding logs, in memory and in Redis, and through the HTTP API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from dutyline.api.ratelimit import MemoryRateLimiter, RateDecision, Window, default_windows
from dutyline.api.ratelimit_redis import RedisRateLimiter
from dutyline.config import Settings
from tests.fixtures.accounts import new_account, new_member
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock

pytestmark = pytest.mark.anyio

WINDOWS = default_windows(50, 1000)


def memory_limiter() -> tuple[MemoryRateLimiter, FakeClock]:
    clock = FakeClock()
    return MemoryRateLimiter(WINDOWS, clock), clock


# --- in memory, with a clock the test moves ------------------------------------------------


async def test_memory_burst_accepts_exactly_50_in_one_second() -> None:
    limiter, clock = memory_limiter()
    decisions: list[RateDecision] = []
    for i in range(200):
        clock.set(1_700_000_000.0 + i * 0.004)  # 200 calls spread over 0.8 s
        decisions.append(await limiter.hit("a:1"))
    allowed = [d.allowed for d in decisions]
    assert sum(allowed) == 50
    assert allowed[:50] == [True] * 50  # the 50th is never refused...
    assert not decisions[50].allowed  # ...and the 51st always is
    assert decisions[49].remaining == 0


async def test_memory_same_instant_burst_and_exact_boundary() -> None:
    limiter, clock = memory_limiter()
    results = [(await limiter.hit("a:1")).allowed for _ in range(200)]
    assert results == [True] * 50 + [False] * 150
    clock.advance(0.999_999)
    assert not (await limiter.hit("a:1")).allowed
    clock.advance(0.000_001)  # exactly one second later the first 50 have left the window
    assert [(await limiter.hit("a:1")).allowed for _ in range(51)] == [True] * 50 + [False]


async def test_memory_minute_limit_across_seconds_until_window_slides() -> None:
    limiter, clock = memory_limiter()
    start = clock.now()
    for second in range(20):
        clock.set(start + second)
        assert [(await limiter.hit("a:1")).allowed for _ in range(50)] == [True] * 50
    clock.set(start + 20)
    refused = await limiter.hit("a:1")
    assert not refused.allowed
    assert refused.limit == 1000  # the minute window binds now
    assert refused.retry_after == pytest.approx(40.0)
    assert refused.headers()["Retry-After"] == "40"
    clock.set(start + 59.5)
    assert not (await limiter.hit("a:1")).allowed
    clock.set(start + 60)  # second 0's 50 calls leave the minute window, no others
    assert [(await limiter.hit("a:1")).allowed for _ in range(51)] == [True] * 50 + [False]


async def test_memory_refused_calls_are_not_counted() -> None:
    limiter, clock = memory_limiter()
    start = clock.now()
    # 50 accepted and 500 refused in second 0: were refusals counted, the minute window
    # (1,000) would be spent before second 10.
    for second in range(20):
        clock.set(start + second)
        results = [(await limiter.hit("a:1")).allowed for _ in range(550 if second == 0 else 50)]
        assert sum(results) == 50, second
    clock.set(start + 20)
    assert not (await limiter.hit("a:1")).allowed


async def test_memory_all_or_nothing_over_both_windows() -> None:
    limiter = MemoryRateLimiter((Window(5, 1.0), Window(7, 60.0)), FakeClock())
    clock = limiter.clock
    assert isinstance(clock, FakeClock)
    assert sum([(await limiter.hit("k")).allowed for _ in range(10)]) == 5
    clock.advance(1)
    # The second window refuses the 3rd call here; the refusals of the first second did not
    # count in the minute window either.
    assert [(await limiter.hit("k")).allowed for _ in range(4)] == [True, True, False, False]


async def test_memory_keys_are_separate() -> None:
    limiter, _ = memory_limiter()
    assert sum([(await limiter.hit("a:1")).allowed for _ in range(60)]) == 50
    assert sum([(await limiter.hit("a:2")).allowed for _ in range(60)]) == 50
    assert sum([(await limiter.hit("k:1")).allowed for _ in range(60)]) == 50


async def test_memory_header_values() -> None:
    limiter, clock = memory_limiter()
    start = clock.now()
    first = await limiter.hit("a:1")
    assert first.headers() == {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "49",
                               "X-RateLimit-Reset": "1"}
    for _ in range(48):
        await limiter.hit("a:1")
    clock.set(start + 0.4)
    fiftieth = await limiter.hit("a:1")
    assert fiftieth.allowed and fiftieth.remaining == 0
    assert fiftieth.reset_after == pytest.approx(0.6)
    refused = await limiter.hit("a:1")
    assert refused.headers() == {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
                                 "X-RateLimit-Reset": "1", "Retry-After": "1"}
    # Later in the minute the minute window has fewer calls left: it is the one reported.
    for second in range(1, 21):
        clock.set(start + second)
        assert all([(await limiter.hit("a:1")).allowed for _ in range(47)])
    clock.set(start + 21)  # 990 calls in the minute, none in this second
    last = await limiter.hit("a:1")
    assert last.allowed
    assert (last.limit, last.remaining) == (1000, 9)
    assert last.headers()["X-RateLimit-Reset"] == "39"


# --- through the HTTP API ------------------------------------------------------------------


@pytest.fixture
def limited_settings(settings: Settings) -> Settings:
    return settings.with_(rate_limit_per_second=50, rate_limit_per_minute=1000, redis_url=None)


@pytest.fixture
async def limited_api(limited_settings: Settings) -> AsyncIterator[Api]:
    async with make_api(limited_settings, clock=FakeClock()) as client:
        yield client


async def test_http_51st_call_gets_429_with_headers(limited_api: Api) -> None:
    acme = await new_account(limited_api, "Acme")
    replies = [await limited_api.call("/team/list", {}, key=acme.key) for _ in range(51)]
    assert [r.status for r in replies] == [200] * 50 + [429]
    fiftieth, refused = replies[49], replies[50]
    assert fiftieth.headers["X-RateLimit-Limit"] == "50"
    assert fiftieth.headers["X-RateLimit-Remaining"] == "0"
    assert "Retry-After" not in fiftieth.headers
    assert refused.code == "RequestTooFrequently"
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["X-RateLimit-Limit"] == "50"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert refused.headers["X-RateLimit-Reset"] == "1"
    assert refused.headers["Service-Request-Id"] == refused.body["request_id"]
    assert "1" in refused.message
    zh = await limited_api.call("/team/list", {}, key=acme.key,
                                headers={"Accept-Language": "zh-CN"})
    assert zh.status == 429 and zh.code == "RequestTooFrequently"


async def test_http_limit_is_per_account(limited_api: Api) -> None:
    acme = await new_account(limited_api, "Acme")
    colleague = await new_member(limited_api, acme, name="Ann")
    globex = await new_account(limited_api, "Globex")
    # Two keys of one account share one budget...
    for i in range(50):
        reply = await limited_api.call("/team/list", {}, key=acme.key if i % 2 else colleague.key)
        assert reply.status == 200
    assert (await limited_api.call("/team/list", {}, key=colleague.key)).status == 429
    assert (await limited_api.call("/team/list", {}, key=acme.key)).status == 429
    # ...and another account has its own.
    others = [await limited_api.call("/team/list", {}, key=globex.key) for _ in range(51)]
    assert [r.status for r in others] == [200] * 50 + [429]


async def test_http_window_slides_with_the_clock(limited_api: Api) -> None:
    acme = await new_account(limited_api, "Acme")
    clock = limited_api.runtime.clock
    assert isinstance(clock, FakeClock)
    assert [(await limited_api.call("/team/list", {}, key=acme.key)).status
            for _ in range(51)] == [200] * 50 + [429]
    clock.advance(1)
    assert (await limited_api.call("/team/list", {}, key=acme.key)).status == 200


# --- Redis ---------------------------------------------------------------------------------


async def age(url: str, limiter: RedisRateLimiter, key: str, seconds: float) -> None:
    """Move every logged call of `key` `seconds` into the past, as if that much time passed.

    Redis's own TIME cannot be faked, and the tests must not sleep."""
    client = aioredis.Redis.from_url(url)
    try:
        for set_key in limiter.keys_for(key)[1:]:
            members = await client.zrange(set_key, 0, -1, withscores=True)
            if members:
                await client.zadd(set_key, {m: s - seconds * 1_000_000 for m, s in members})
    finally:
        await client.aclose()


@pytest.fixture
async def redis_limiter(redis_server: str, redis_prefix: str) -> AsyncIterator[RedisRateLimiter]:
    limiter = RedisRateLimiter(redis_server, WINDOWS, prefix=redis_prefix)
    yield limiter
    await limiter.close()


@pytest.mark.redis
async def test_redis_concurrent_burst_accepts_exactly_50(redis_limiter: RedisRateLimiter) -> None:
    decisions = await asyncio.gather(*[redis_limiter.hit("a:1") for _ in range(200)])
    assert sum(d.allowed for d in decisions) == 50
    assert not redis_limiter.degraded
    refused = [d for d in decisions if not d.allowed]
    assert all(d.remaining == 0 and 0 < d.retry_after <= 1 for d in refused)
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(50))


@pytest.mark.redis
async def test_redis_sequential_51st_refused_and_headers(redis_limiter: RedisRateLimiter) -> None:
    decisions = [await redis_limiter.hit("a:1") for _ in range(51)]
    assert [d.allowed for d in decisions] == [True] * 50 + [False]
    assert decisions[0].headers() == {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "49",
                                      "X-RateLimit-Reset": "1"}
    assert decisions[50].headers()["Retry-After"] == "1"
    assert decisions[50].headers()["X-RateLimit-Remaining"] == "0"


@pytest.mark.redis
async def test_redis_minute_limit_and_refusals_not_counted(
    redis_server: str, redis_limiter: RedisRateLimiter
) -> None:
    for second in range(20):
        # 50 accepted then 100 refused each second; refusals must not spend the minute.
        results = await asyncio.gather(*[redis_limiter.hit("a:1") for _ in range(150)])
        assert sum(d.allowed for d in results) == 50, second
        await age(redis_server, redis_limiter, "a:1", 1.0)
    refused = await redis_limiter.hit("a:1")
    assert not refused.allowed
    assert refused.limit == 1000
    # 40 s after the aging, less the real time the 20 rounds took.
    assert 30 < refused.retry_after <= 40
    client = aioredis.Redis.from_url(redis_server)
    try:
        seq_key, second_key, minute_key = redis_limiter.keys_for("a:1")
        assert await client.zcard(minute_key) == 1000
        # Idle keys vanish: every key carries an expiry no longer than its window.
        assert 0 < await client.pttl(minute_key) <= 60_000
        assert 0 < await client.pttl(seq_key) <= 60_000
        assert await client.exists(second_key) in (0, 1)
    finally:
        await client.aclose()
    await age(redis_server, redis_limiter, "a:1", 40.0)  # second 0's calls leave the minute
    results = [await redis_limiter.hit("a:1") for _ in range(51)]
    assert [d.allowed for d in results] == [True] * 50 + [False]


@pytest.mark.redis
async def test_redis_limiters_in_two_processes_share_the_budget(
    redis_server: str, redis_prefix: str
) -> None:
    first = RedisRateLimiter(redis_server, WINDOWS, prefix=redis_prefix)
    second = RedisRateLimiter(redis_server, WINDOWS, prefix=redis_prefix)
    try:
        decisions = await asyncio.gather(
            *[(first if i % 2 else second).hit("a:7") for i in range(200)]
        )
        assert sum(d.allowed for d in decisions) == 50
        other = await asyncio.gather(*[first.hit("a:8") for _ in range(60)])
        assert sum(d.allowed for d in other) == 50
    finally:
        await first.close()
        await second.close()


@pytest.mark.redis
async def test_redis_limiter_through_the_http_api(
    limited_settings: Settings, redis_server: str, redis_prefix: str
) -> None:
    settings = limited_settings.with_(redis_url=redis_server)
    async with make_api(settings, clock=FakeClock()) as api:
        built = api.runtime.limiter
        assert isinstance(built, RedisRateLimiter)  # DUTYLINE_REDIS_URL selects it
        await built.close()
        # Same limiter, with this test's own key prefix so it cleans up after itself.
        api.runtime.limiter = RedisRateLimiter(redis_server, WINDOWS, prefix=redis_prefix)
        acme = await new_account(api, "Acme")
        replies = await asyncio.gather(
            *[api.call("/team/list", {}, key=acme.key) for _ in range(120)]
        )
        assert sorted(r.status for r in replies) == [200] * 50 + [429] * 70
        refused = next(r for r in replies if r.status == 429)
        assert refused.code == "RequestTooFrequently"
        assert refused.headers["Retry-After"] == "1"
        assert refused.headers["X-RateLimit-Limit"] == "50"


# --- when Redis is down --------------------------------------------------------------------


async def test_unreachable_redis_falls_back_to_exact_local_limits() -> None:
    ticks = [0.0]
    limiter = RedisRateLimiter("redis://127.0.0.1:1/0", WINDOWS, clock=FakeClock(),
                               timeout=0.2, monotonic=lambda: ticks[0])
    try:
        decisions = [await limiter.hit("a:1") for _ in range(200)]
        assert [d.allowed for d in decisions] == [True] * 50 + [False] * 150
        assert limiter.degraded
        assert limiter.fallback_hits == 200
        ticks[0] += RedisRateLimiter.RETRY_REDIS_AFTER  # tries Redis again, still down
        assert not (await limiter.hit("a:1")).allowed
        assert limiter.degraded
    finally:
        await limiter.close()


async def test_http_with_redis_down_still_limits_and_counts_the_fallback(
    limited_settings: Settings,
) -> None:
    settings = limited_settings.with_(redis_url="redis://127.0.0.1:1/0")
    async with make_api(settings, clock=FakeClock()) as api:
        assert isinstance(api.runtime.limiter, RedisRateLimiter)
        acme = await new_account(api, "Acme")
        replies = [await api.call("/team/list", {}, key=acme.key) for _ in range(51)]
        assert [r.status for r in replies] == [200] * 50 + [429]
        metrics = (await api.raw("GET", "/metrics")).text
        assert "dutyline_ratelimit_fallback_total 51.0" in metrics


def test_a_zero_limit_turns_only_that_window_off() -> None:
    assert default_windows(0, 1000) == (Window(1000, 60.0),)
    assert default_windows(50, 0) == (Window(50, 1.0),)
    assert default_windows(0, 0) == ()
