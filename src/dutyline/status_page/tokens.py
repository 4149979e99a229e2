"""Tokens of status pages: internal-page login tokens and subscriber unsubscribe tokens.

Only hashes are stored. The unsubscribe token is derived from the server key and the
subscriber id (HMAC), so every notification can put the same working link in its email
without the token ever being stored; its hash in `status_subscriber.unsubscribe_token_hash`
lets the public page find the subscriber from a link. Whoever creates a subscriber row sets
that hash with `unsubscribe_token_hash(secret_key, subscriber_id)`."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets
from urllib.parse import quote

from dutyline.config import Settings


def new_token() -> str:
    """A random token to hand out once (internal-page login, subscription confirmation)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What is stored and looked up instead of a token (64 hex characters)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tokens_match(token: str, stored_hash: str) -> bool:
    """Constant-time comparison of a presented token with a stored hash."""
    return bool(stored_hash) and hmac.compare_digest(token_hash(token), stored_hash)


def unsubscribe_token(secret_key: str, subscriber_id: str) -> str:
    mac = hmac.new(secret_key.encode("utf-8"), f"status-unsubscribe:{subscriber_id}".encode(),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def unsubscribe_token_hash(secret_key: str, subscriber_id: str) -> str:
    return token_hash(unsubscribe_token(secret_key, subscriber_id))


def unsubscribe_url(base_url: str, url_name: str, token: str) -> str:
    """The one-click unsubscribe link every email carries (served by status_page/public)."""
    return f"{base_url.rstrip('/')}/status/{url_name}/unsubscribe?token={quote(token, safe='')}"


_key_files: dict[str, str] = {}


async def server_key(settings: Settings) -> str:
    """The server's secret key. Only the embedded default reads (or creates) a key file,
    so that happens off the event loop, once per database."""
    if settings.secret_key:
        return settings.secret_key
    key = _key_files.get(settings.database_url)
    if key is None:
        key = await asyncio.to_thread(settings.resolved_secret_key)
        _key_files[settings.database_url] = key
    return key
