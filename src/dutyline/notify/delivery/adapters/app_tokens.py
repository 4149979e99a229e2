"""Access tokens of the chat apps (Feishu tenant_access_token, DingTalk accessToken, WeCom
access_token, Zoom OAuth), fetched once and reused until shortly before they expire.

Why a cache: each platform hands out tokens valid for about two hours and throttles (WeCom:
"must be cached") apps that fetch one per message; a page to twenty people must not cost
twenty token fetches. The cache is per process and in memory: a token is only a cheaper way
to repeat a fetch, so losing it on a restart costs one request. Keys hash the secret so no
credential sits in a key. Two deliveries missing the cache at once both fetch; both tokens are
valid, the later one is kept."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from dutyline.notify.delivery.adapters.base import Attempt, SendEnv, response_field

# Renew a little before the platform's expiry: a token must not die between use and send.
EXPIRY_MARGIN_S = 300
MIN_LIFETIME_S = 60


@dataclass(frozen=True)
class _Token:
    value: str
    expires_at: float


_tokens: dict[str, _Token] = {}


def cache_key(platform: str, base_url: str, app_id: str, secret: str) -> str:
    digest = hashlib.sha256(secret.encode("utf-8")).hexdigest()[:16]
    return f"{platform}|{base_url}|{app_id}|{digest}"


def forget(key: str) -> None:
    """Drop a token the platform refused (revoked, or expired early): the next attempt
    fetches a fresh one."""
    _tokens.pop(key, None)


def clear() -> None:
    _tokens.clear()


# A fetch makes the token request and answers what came back; `token` reads the token and
# its lifetime (seconds) out of the JSON answer at the paths the platform documents.
Fetch = Callable[[], Awaitable[Attempt]]


async def token(env: SendEnv, key: str, fetch: Fetch, *, token_path: tuple[str, ...],
                ttl_path: tuple[str, ...]) -> str | Attempt:
    """The cached token, or a fresh one; a failed fetch answers its Attempt (the outcome of
    this delivery attempt: why the page did not leave)."""
    now = env.clock.now()
    cached = _tokens.get(key)
    if cached is not None and cached.expires_at > now:
        return cached.value
    reply = await fetch()
    value = response_field(reply, *token_path) if reply.ok else ""
    ttl_text = response_field(reply, *ttl_path)
    # The request carried the app's secret, the answer the token: the history keeps neither.
    reply.request_body = "(the app's token request)"
    if not value:
        reply.ok = False
        said = reply.response_body[:300]
        reply.error = "getting the app's access token failed: " + (
            ": ".join(part for part in (reply.error, said) if part) or "no token in the answer")
        # Bad credentials will not heal by themselves; a platform that hiccups will.
        reply.retryable = reply.status_code >= 500 or reply.status_code in (0, 408, 429)
        return reply
    ttl = int(ttl_text) if ttl_text.isdigit() else 7200
    _tokens[key] = _Token(value, now + max(MIN_LIFETIME_S, ttl - EXPIRY_MARGIN_S))
    return value
