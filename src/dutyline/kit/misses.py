"""A bounded, per-process negative cache of secret hashes that matched nothing lately.

Used for every secret a client presents (app keys: platform/app_key/misses.py; runner keys:
aisre/runner/keys.py), so a flood of wrong values answers from memory instead of a database
query each. Only misses are remembered, never successes: a revoked secret still fails at
once. At most `size` hashes are held, oldest out first, whatever the flood."""

from __future__ import annotations

from collections import OrderedDict


class MissedKeys:
    def __init__(self, ttl_s: float, size: int) -> None:
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
