"""Wake-ups for the runner task relay (hub.py) between server processes, over Redis pub/sub.

The `runner_task` rows carry every relayed task; processes find their work by polling them
(every `runner_relay_poll_seconds`). With `DUTYLINE_REDIS_URL` set, the process that writes a
row also rings a bell so the one that must act reads it at once instead of at its next poll:

- `work:<worknode_id>`: a task is pending (or a cancel requested) for that worknode; its holder
  relays it to the runner now.
- `task:<task_id>`: the holder stored output or the result of that task; its requester reads
  the row now.

A ring is only a hint: it carries no data, and one that is lost (Redis down, a subscription
not yet in place, a message dropped) costs one poll interval, never a task. So the polling
stays, and a Redis error is logged and otherwise ignored.

Without Redis nothing rings: SQLite serves one process, where a task for a runner held here
is sent at once (the hub's local path) and there is nothing to relay; several processes on
PostgreSQL without Redis relay by polling alone. PostgreSQL LISTEN/NOTIFY would need a
dedicated connection per process outside the pool; Redis is what a multi-process deployment
already runs for the shared rate limiter."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog

from dutyline.kit.extras import REDIS, require

log = structlog.get_logger("dutyline.runner")

PREFIX = "dutyline:runner:"
WORK = "work:"
TASK = "task:"
# How long `start` waits at most for the first subscription attempt to settle (confirmed, or
# failed): only a Redis that accepts connections and never answers takes that long; past it,
# rings sent meanwhile may be missed, which the polling covers.
SUBSCRIBE_WAIT_S = 10.0
RECONNECT_S = 1.0


class RelayBell:
    """One Redis subscription per process; `on_ring(name)` is called for every ring heard
    (`work:<id>` or `task:<id>`), from this process's event loop."""

    def __init__(self, redis_url: str, on_ring: Callable[[str], None]) -> None:
        # Imported here: the `redis` extra is needed only where DUTYLINE_REDIS_URL is set.
        redis = require(REDIS, setting="DUTYLINE_REDIS_URL", module="redis.asyncio")
        exceptions = require(REDIS, setting="DUTYLINE_REDIS_URL", module="redis.exceptions")
        self._client = redis.from_url(redis_url)
        # What a Redis outage raises: logged and otherwise ignored (the polling covers).
        self._outage: tuple[type[BaseException], ...] = (exceptions.RedisError, OSError)
        self._on_ring = on_ring
        self._listener: asyncio.Task[None] | None = None
        # Set once the first subscription attempt is confirmed or has failed.
        self._settled = asyncio.Event()

    async def start(self) -> None:
        """Subscribe, once per process: the first call waits until Redis confirmed it, or
        refused it (then polling covers); later calls return at once, even while the
        listener is reconnecting, so an outage never slows a task."""
        if self._listener is not None:
            return
        self._listener = asyncio.create_task(self._listen())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SUBSCRIBE_WAIT_S):
                await self._settled.wait()

    async def ring(self, name: str) -> None:
        try:
            await self._client.publish(PREFIX + name, b"")
        except self._outage as exc:
            log.warning("runner relay bell not rung; polling will find the work",
                        bell=name, error=repr(exc))

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        with contextlib.suppress(Exception):
            await self._client.aclose()

    async def _listen(self) -> None:
        while True:
            pubsub = self._client.pubsub()
            try:
                await pubsub.psubscribe(PREFIX + "*")
                async for message in pubsub.listen():
                    if message["type"] == "psubscribe":
                        self._settled.set()
                    elif message["type"] == "pmessage":
                        channel = message["channel"]
                        if isinstance(channel, bytes):
                            channel = channel.decode()
                        self._on_ring(channel.removeprefix(PREFIX))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("runner relay bell unsubscribed; polling only until it is back",
                            error=repr(exc))
                self._settled.set()
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(RECONNECT_S)
