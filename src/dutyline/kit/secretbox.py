"""Secrets at rest: third-party credentials sealed with a key derived from the server secret.

Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) gives authenticated encryption, so a
tampered or foreign token is refused rather than decrypted into garbage. The Fernet key is
derived with HKDF from the operator's secret, so any string works as DUTYLINE_SECRET_KEY and
the key used here is never the raw secret itself.

A value may be sealed for a purpose (`seal(text, purpose="console-totp")`): its key is derived
with the purpose in HKDF's info (Fernet has no associated data), so it opens only for that
purpose, and a value sealed for anything else (a webhook's credential) never opens as it.
Values sealed without a purpose keep the original key, so everything stored before opens as
it always did."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_INFO = b"dutyline secretbox v1"
# How many opened values a box keeps (the least recently used go first).
OPENED_KEPT = 1024


class SecretBoxError(Exception):
    """A sealed value could not be opened: another server key, or the value was altered."""


class SecretBox:
    """`key` is the server secret, or a function returning it: the runtime passes
    `settings.resolved_secret_key` so a process that never touches a secret (a migration, a
    PostgreSQL deployment still missing DUTYLINE_SECRET_KEY) starts, and the first use fails
    with the settings' clear message instead."""

    def __init__(self, key: str | Callable[[], str]) -> None:
        self._key = key
        self._cached: Fernet | None = None
        self._by_purpose: dict[str, Fernet] = {}
        # Opened values by sealed text: a webhook's secret is opened for every page it
        # signs, and opening costs tens of microseconds (the process holds the key anyway).
        # A value that cannot be opened raises, and is not kept.
        self._open_kept = functools.lru_cache(maxsize=OPENED_KEPT)(self._open)
        if isinstance(key, str):
            self._cached = self._derive(key)

    @staticmethod
    def _derive(key: str, purpose: str = "") -> Fernet:
        if not key:
            raise ValueError("SecretBox needs a non-empty key")
        info = _INFO + (b" purpose:" + purpose.encode("utf-8") if purpose else b"")
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(
            key.encode("utf-8")
        )
        return Fernet(base64.urlsafe_b64encode(derived))

    @property
    def _fernet(self) -> Fernet:
        if self._cached is None:
            key = self._key
            self._cached = self._derive(key if isinstance(key, str) else key())
        return self._cached

    def _for(self, purpose: str) -> Fernet:
        if not purpose:
            return self._fernet
        found = self._by_purpose.get(purpose)
        if found is None:
            key = self._key
            found = self._by_purpose[purpose] = self._derive(
                key if isinstance(key, str) else key(), purpose)
        return found

    def seal(self, plaintext: str, *, purpose: str = "") -> str:
        return self._for(purpose).encrypt(plaintext.encode("utf-8")).decode("ascii")

    def open(self, token: str, *, purpose: str = "") -> str:
        return self._open_kept(token, purpose)

    def _open(self, token: str, purpose: str) -> str:
        try:
            return self._for(purpose).decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            raise SecretBoxError(
                "cannot open a stored secret: it was sealed with another DUTYLINE_SECRET_KEY "
                "or has been altered"
            ) from None
