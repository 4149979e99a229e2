"""The shared rate limiter for several processes: one atomic Lua script in Redis.

Same algorithm as `MemoryRateLimiter` (api/ratelimit.py): an exact sliding log per key and
window, every window checked first and the call counted in all of them or in none, refused
calls not counted. It runs as one script so that no other process's call interleaves between
the check and the count, and it reads the time with Redis `TIME` inside the script, so
processes whose clocks disagree still agree on which calls fall in the last second.

When Redis cannot be reached we fail *open to a local limiter*, not open to nothing and not
closed. Failing closed (429 or 503 for everything) would turn a cache outage into a full API
outage, including incident acknowledgement during the very incident that may have caused it;
failing open to nothing would drop the protection the limits exist for. Each process instead
enforces the same limits in its own memory until Redis answers again: exact per process, at
most N × the limit across N processes, for the length of the outage. It is logged once per
outage and counted (`fallback_hits`, and the Prometheus counter when a registry is given).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog
from prometheus_client import CollectorRegistry, Counter
from redis import asyncio as aioredis
from redis.exceptions import RedisError

from dutyline.api.ratelimit import MemoryRateLimiter, RateDecision, Window
from dutyline.kit.clock import Clock, SystemClock

log = structlog.get_logger("dutyline.ratelimit")

DEFAULT_PREFIX = "dutyline:rl:"

# KEYS: the sequence key, then one sorted set per window.
# ARGV: limit and length in microseconds of each window, in KEYS order.
# Returns {allowed, limit, remaining, reset_after_us, retry_after_us} of the binding window
# (the one with the fewest calls left), as MemoryRateLimiter does.
_SCRIPT = """
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = #KEYS - 1
local refused = false
local retry = 0
local b_remaining, b_limit, b_reset = nil, 0, 0
local longest = 0
for i = 1, n do
  local key = KEYS[i + 1]
  local limit = tonumber(ARGV[2 * i - 1])
  local span = tonumber(ARGV[2 * i])
  if span > longest then longest = span end
  -- Same boundary as the memory log: a call exactly one window old has left it.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - span)
  local remaining = limit - redis.call('ZCARD', key)
  local reset = span
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if oldest[2] then reset = tonumber(oldest[2]) + span - now end
  if remaining <= 0 then
    refused = true
    if reset > retry then retry = reset end
  end
  if b_remaining == nil or remaining < b_remaining then
    b_remaining, b_limit, b_reset = remaining, limit, reset
  end
end
if refused then
  return {0, b_limit, 0, b_reset, retry}
end
-- A member per call, unique even for two calls in the same microsecond.
local member = t[1] .. '.' .. t[2] .. '-' .. redis.call('INCR', KEYS[1])
for i = 1, n do
  local span = tonumber(ARGV[2 * i])
  redis.call('ZADD', KEYS[i + 1], now, member)
  -- Idle keys vanish once their newest call has left the window.
  redis.call('PEXPIRE', KEYS[i + 1], math.ceil(span / 1000))
end
redis.call('PEXPIRE', KEYS[1], math.ceil(longest / 1000))
return {1, b_limit, b_remaining - 1, b_reset, 0}
"""

_MICRO = 1_000_000


class RedisRateLimiter:
    # After a failure, skip Redis this long before trying again, so an outage does not add a
    # connect timeout to every request.
    RETRY_REDIS_AFTER = 1.0

    def __init__(
        self,
        url: str,
        windows: tuple[Window, ...],
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
        registry: CollectorRegistry | None = None,
        timeout: float = 2.0,
        pool_wait: float = 10.0,
        max_connections: int = 32,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.windows = windows
        self.prefix = prefix
        # A blocking pool makes a burst wait for a connection; the default pool raises when
        # it runs out, which would look like an outage and fall back. Waiting for a pooled
        # connection is not an outage either, so it gets a longer bound than a socket
        # operation: on a busy machine a burst of 200 queues behind 32 connections for a
        # while, and falling back then would let each process accept its own 50.
        pool = aioredis.BlockingConnectionPool.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout,
            health_check_interval=30, max_connections=max_connections, timeout=pool_wait,
        )
        # from_pool: the client owns the pool, so close() releases its connections.
        self._redis = aioredis.Redis.from_pool(pool)
        self._script = self._redis.register_script(_SCRIPT)
        self._argv: list[int] = []
        for w in windows:
            self._argv += [w.limit, round(w.seconds * _MICRO)]
        self._fallback = MemoryRateLimiter(windows, clock or SystemClock())
        self._monotonic = monotonic
        self._down_since: float | None = None
        self.fallback_hits = 0
        self._fallback_counter = (
            Counter("dutyline_ratelimit_fallback", "Rate-limit checks made in process memory "
                    "because Redis was unreachable", registry=registry)
            if registry is not None else None
        )

    def keys_for(self, key: str) -> list[str]:
        # The hash tag keeps a key's sets in one Redis Cluster slot, as a script requires.
        base = f"{self.prefix}{{{key}}}"
        return [f"{base}:seq"] + [f"{base}:{round(w.seconds * 1000)}ms" for w in self.windows]

    async def hit(self, key: str) -> RateDecision:
        down_since = self._down_since
        if down_since is not None and self._monotonic() - down_since < self.RETRY_REDIS_AFTER:
            return self._local(key)
        try:
            allowed, limit, remaining, reset_us, retry_us = await self._script(
                keys=self.keys_for(key), args=self._argv
            )
        except (RedisError, OSError) as exc:
            if self._down_since is None:
                log.warning("redis unreachable; rate limits enforced per process until it "
                            "answers", error=repr(exc))
            self._down_since = self._monotonic()
            return self._local(key)
        if self._down_since is not None:
            log.warning("redis answers again; rate limits shared across processes")
            self._down_since = None
        return RateDecision(
            bool(allowed), int(limit), int(remaining), int(reset_us) / _MICRO,
            int(retry_us) / _MICRO,
        )

    def _local(self, key: str) -> RateDecision:
        self.fallback_hits += 1
        if self._fallback_counter is not None:
            self._fallback_counter.inc()
        return self._fallback.hit_now(key)

    @property
    def degraded(self) -> bool:
        return self._down_since is not None

    async def close(self) -> None:
        await self._redis.aclose()
        await self._fallback.close()
