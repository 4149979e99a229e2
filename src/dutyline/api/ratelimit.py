"""Rate limits: every window of a key checked and counted all-or-nothing.

The contract's limits (50 per second *and* 1,000 per minute) must be exact: the 51st call in
any one-second span is refused, never the 50th. A sliding log (one timestamp per accepted
call, at most `limit` kept per window) gives that exactness; a sliding-window *counter* would
only approximate it. Refused calls are not counted, so a client that backs off recovers.

`MemoryRateLimiter` serves one process. Several processes share `RedisRateLimiter`
(api/ratelimit_redis.py), which runs the same algorithm in one atomic Lua script.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from dutyline.kit.clock import Clock


@dataclass(frozen=True, slots=True)
class Window:
    limit: int
    seconds: float


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    # The binding window: the one with the fewest calls left (for X-RateLimit-* headers).
    limit: int
    remaining: int
    reset_after: float
    retry_after: float = 0.0

    def headers(self) -> dict[str, str]:
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(max(1, math.ceil(self.reset_after))),
        }
        if not self.allowed:
            headers["Retry-After"] = str(max(1, math.ceil(self.retry_after)))
        return headers


class RateLimiter(Protocol):
    async def hit(self, key: str) -> RateDecision: ...

    async def close(self) -> None: ...


def default_windows(per_second: int, per_minute: int) -> tuple[Window, ...]:
    """The contract's two windows; a limit of 0 (or less) turns that window off."""
    windows = (Window(per_second, 1.0), Window(per_minute, 60.0))
    return tuple(w for w in windows if w.limit > 0)


class MemoryRateLimiter:
    """Exact sliding logs in this process's memory."""

    # Forget idle keys now and then so the map does not grow with every account ever seen.
    _SWEEP_EVERY = 10_000

    def __init__(self, windows: tuple[Window, ...], clock: Clock) -> None:
        self.windows = windows
        self.clock = clock
        self._logs: dict[str, tuple[deque[float], ...]] = {}
        self._hits = 0
        self._longest = max(w.seconds for w in windows)

    async def hit(self, key: str) -> RateDecision:
        return self.hit_now(key)

    def hit_now(self, key: str) -> RateDecision:
        now = self.clock.now()
        logs = self._logs.get(key)
        if logs is None:
            logs = tuple(deque() for _ in self.windows)
            self._logs[key] = logs
        self._hits += 1
        if self._hits % self._SWEEP_EVERY == 0:
            self._sweep(now)

        retry_after = 0.0
        binding: tuple[int, int, float] | None = None  # (remaining, limit, reset_after)
        for window, log in zip(self.windows, logs, strict=True):
            horizon = now - window.seconds
            while log and log[0] <= horizon:
                log.popleft()
            remaining = window.limit - len(log)
            reset_after = (log[0] + window.seconds - now) if log else window.seconds
            if remaining <= 0:
                retry_after = max(retry_after, reset_after)
            if binding is None or remaining < binding[0]:
                binding = (remaining, window.limit, reset_after)
        assert binding is not None
        if retry_after > 0:
            return RateDecision(False, binding[1], 0, binding[2], retry_after)
        for log in logs:
            log.append(now)
        return RateDecision(True, binding[1], binding[0] - 1, binding[2])

    def _sweep(self, now: float) -> None:
        horizon = now - self._longest
        stale = [
            key
            for key, logs in self._logs.items()
            if all(not log or log[-1] <= horizon for log in logs)
        ]
        for key in stale:
            del self._logs[key]

    async def close(self) -> None:
        self._logs.clear()


class NoRateLimiter:
    """For operators who turn limits off (limits of 0)."""

    async def hit(self, key: str) -> RateDecision:
        return RateDecision(True, 0, 0, 0.0)

    async def close(self) -> None:
        return None
