"""The per-process negative cache of app keys: hashes that matched no live key lately.

A flood of wrong app_keys (a misconfigured client retrying, a scanner) would otherwise cost a
database query each. A hash that just missed answers 401 from memory for `NEGATIVE_TTL_S`
seconds. Only misses are remembered, never successes, so a revoked key still fails on its
very next call. What a miss could wrongly hide is a key *created* after it: a key issued in
this process erases its hash here at once (keys.issue); one issued by another process (the
CLI, another API worker) works there at once and here at the latest after the TTL, and since
keys are 256 random bits no client can hold a new key's value before it was issued. The
cache holds at most `MAX_ENTRIES` hashes, oldest out first, so it is bounded whatever the
flood."""

from __future__ import annotations

from collections import OrderedDict

NEGATIVE_TTL_S = 10.0
MAX_ENTRIES = 50_000


class MissedKeys:
    def __init__(self, ttl_s: float = NEGATIVE_TTL_S, size: int = MAX_ENTRIES) -> None:
        self.ttl_s = ttl_s
        self._size = size
        self._until: OrderedDict[str, float] = OrderedDict()

    def recently_missed(self, key_hash: str, now: float) -> bool:
        until = self._until.get(key_hash)
        if until is None:
            return False
        if until <= now:
            del self._until[key_hash]
            return False
        return True

    def remember(self, key_hash: str, now: float) -> None:
        self._until[key_hash] = now + self.ttl_s
        self._until.move_to_end(key_hash)
        while len(self._until) > self._size:
            self._until.popitem(last=False)

    def forget(self, key_hash: str) -> None:
        self._until.pop(key_hash, None)

    def clear(self) -> None:
        self._until.clear()

    def __len__(self) -> int:
        return len(self._until)


# One per process: keys.issue (any code path that creates a key) erases its hash here, and
# every authenticator of the process reads it.
MISSED = MissedKeys()
