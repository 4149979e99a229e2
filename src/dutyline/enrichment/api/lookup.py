"""Calling mapping APIs at ingest, outside any database transaction.

The protocol (ours; the reference names only the API's address and options): a POST of
`{"labels": {...}}` (the alert's labels as they stand when the mapping rule runs) as JSON, with
the API's headers; the answer is a JSON object whose string values are labels, of which the
rule takes its `result_labels`. Anything else (a timeout, a refused address, a non-2xx
status, a body that is not a JSON object) is a failure: the alert goes on unenriched by that
rule, the failure is logged and counted, and it is remembered briefly like an answer.

Ingestion runs its transaction on the database thread and must not wait for a remote server
there (on SQLite that would hold the one writer). So a push whose enrichment needs an answer
that is not known yet stops before writing anything (`LookupsNeeded`, its savepoint or
transaction rolled back), the endpoint makes the calls here, and runs the push again with the
answers (`Answers`). Answers are kept per process for a short TTL, so a stream of alerts with
the same labels calls the API once a minute, and a push of a known combination costs nothing
extra; a channel without API mappings never reaches this module."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import httpx
import msgspec
import structlog

from dutyline.api.deps import Deps
from dutyline.kit.outbound import OutboundBlocked, guarded_client, redact_url
from dutyline.kit.secretbox import SecretBox

log = structlog.get_logger("dutyline.enrichment")

ANSWER_TTL_S = 60
FAILURE_TTL_S = 15
CACHE_MAX = 50_000
MAX_ANSWER_BYTES = 64 * 1024
_decode_headers = msgspec.json.Decoder(dict[str, str])


@dataclass(frozen=True, slots=True)
class ApiTarget:
    """A mapping API as a rule compiled it (hashable: part of the cache key, so an edited
    API is a new target)."""

    api_id: str
    url: str
    headers_sealed: str
    timeout: int
    retry_count: int
    updated_at: int


Key = tuple[ApiTarget, bytes]
Answer = dict[str, str] | None  # None: the call failed


def request_body(labels: dict[str, str]) -> bytes:
    return msgspec.json.encode({"labels": labels})


class AnswerCache:
    """Answers by (target, request body), each until its expiry (seconds on the caller's
    clock). Starts over when full rather than tracking recency: cheap on the hot path."""

    def __init__(self) -> None:
        self._entries: dict[Key, tuple[int, Answer]] = {}

    def get(self, key: Key, now_s: int) -> tuple[bool, Answer]:
        found = self._entries.get(key)
        if found is None or found[0] <= now_s:
            return False, None
        return True, found[1]

    def put(self, key: Key, answer: Answer, now_s: int) -> None:
        if len(self._entries) >= CACHE_MAX:
            self._entries.clear()
        ttl = ANSWER_TTL_S if answer is not None else FAILURE_TTL_S
        self._entries[key] = (now_s + ttl, answer)

    def clear(self) -> None:
        self._entries.clear()


CACHE = AnswerCache()


@dataclass(slots=True)
class Answers:
    """The answers a push runs with after the endpoint made its calls. `final`: keys still
    missing are not asked for again (treated as failures), so a push never loops."""

    found: dict[Key, Answer] = field(default_factory=dict)
    final: bool = False


class LookupsNeeded(Exception):
    """Raised by enrichment inside the push's transaction, before it writes anything: these
    calls must be made first."""

    def __init__(self, keys: Iterable[Key]) -> None:
        self.keys = list(dict.fromkeys(keys))
        super().__init__(f"{len(self.keys)} mapping API calls needed")


def _labels_of(content: bytes) -> dict[str, str]:
    doc = msgspec.json.decode(content)
    if not isinstance(doc, dict):
        raise ValueError("the answer is not a JSON object")
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)}


async def _call(client: httpx.AsyncClient, key: Key, secrets: SecretBox) -> Answer:
    target, body = key
    headers = {"content-type": "application/json"}
    if target.headers_sealed:
        headers.update(_decode_headers.decode(secrets.open(target.headers_sealed)))
    reason = ""
    for _ in range(1 + target.retry_count):
        try:
            reply = await client.post(target.url, content=body, headers=headers,
                                      timeout=float(target.timeout))
            if not 200 <= reply.status_code < 300:
                reason = f"status {reply.status_code}"
                continue
            if len(reply.content) > MAX_ANSWER_BYTES:
                reason = "answer too large"
                break
            return _labels_of(reply.content)
        except OutboundBlocked as exc:
            reason = f"address refused: {exc.reason}"
            break
        except httpx.TimeoutException:
            reason = "timed out"
        except httpx.HTTPError as exc:
            reason = f"unreachable: {type(exc).__name__}"
        except (ValueError, msgspec.DecodeError) as exc:
            reason = f"bad answer: {exc}"
            break
    log.warning("mapping API call failed", api_id=target.api_id, url=redact_url(target.url),
                reason=reason)
    return None


async def fetch(needed: LookupsNeeded, *, before: Answers | None, final: bool,
                deps: Deps, now_s: int, count: Callable[[str], None]) -> Answers:
    """Make the calls a push needs (concurrently, each within its API's timeout), remember
    them, and hand them back for the push's next run."""
    answers = Answers(found=dict(before.found) if before else {}, final=final)
    todo = []
    for key in needed.keys:
        known, answer = CACHE.get(key, now_s)
        if known:
            answers.found[key] = answer
        else:
            todo.append(key)
    if todo:
        # The API's own retry_count is the retry policy: none from the client.
        async with guarded_client(deps.policy.without_retries(), timeout=3.0) as client:
            results = await asyncio.gather(*(_call(client, key, deps.box) for key in todo))
        for key, answer in zip(todo, results, strict=True):
            count("ok" if answer is not None else "failed")
            CACHE.put(key, answer, now_s)
            answers.found[key] = answer
    return answers


def answer(target: ApiTarget, labels: dict[str, str], *, now_s: int, answers: Answers | None,
           pending: list[Key]) -> Answer:
    """The answer for these labels if known (the push's `answers`, then the process's
    cache); otherwise None, and the call is added to `pending` unless the answers are final
    or an earlier call of this push is pending already (whose labels may feed this one: it
    is asked for in the next round, with them). A caller that passes no answers (a job
    ingesting an alert rule's events, which cannot leave its transaction to call out) gets
    cached answers only."""
    key = (target, request_body(labels))
    if answers is not None and key in answers.found:
        return answers.found[key]
    known, found = CACHE.get(key, now_s)
    if known:
        return found
    if not pending and answers is not None and not answers.final:
        pending.append(key)
    return None
