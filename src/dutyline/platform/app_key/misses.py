"""The per-process negative cache of app keys: hashes that matched no live key lately.

A flood of wrong app_keys (a misconfigured client retrying, a scanner) would otherwise cost a
database query each. A hash that just missed answers 401 from memory for `NEGATIVE_TTL_S`
seconds. (Successes are kept apart, in platform/auth.py, under the "auth" change signal
that a revocation moves, so a revoked key still fails within a second in every process.)
What a miss could wrongly hide is a key *created* after it: a key issued in this process
erases its hash here at once (keys.issue); one issued by another process (the CLI, another
API worker) works there at once and here at the latest after the TTL, and since keys are 256
random bits no client can hold a new key's value before it was issued. The cache holds at
most `MAX_ENTRIES` hashes, oldest out first, so it is bounded whatever the flood."""

from __future__ import annotations

from dutyline.kit.misses import MissedKeys as _MissedKeys

NEGATIVE_TTL_S = 10.0
MAX_ENTRIES = 50_000


class MissedKeys(_MissedKeys):
    def __init__(self, ttl_s: float = NEGATIVE_TTL_S, size: int = MAX_ENTRIES) -> None:
        super().__init__(ttl_s, size)


# One per process: keys.issue (any code path that creates a key) erases its hash here, and
# every authenticator of the process reads it.
MISSED = MissedKeys()
