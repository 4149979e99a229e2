"""What keeps the console's pages safe in a browser: cookies, CSRF tokens, response headers.

- The session cookie is HttpOnly and SameSite=Lax; over HTTPS it is `__Host-` prefixed and
  Secure, so no other host (a sibling subdomain) can set or read it.
- CSRF: every state-changing request (POST) carries a token, in a hidden form field or the
  `X-CSRF-Token` header htmx sends. The token is an HMAC, under a key derived from the server
  secret, of the session's token (signed in) or of a random pre-session cookie (the sign-in
  and set-password forms): another site can neither read nor compute it.
- Headers: a Content-Security-Policy that allows no inline script or style and no framing,
  no Referer to other sites, no MIME sniffing, and no caching of pages."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from dutyline.config import Settings
from dutyline.kit import page_policy

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"

CSP = page_policy.CONTENT_SECURITY_POLICY
HEADERS = {**page_policy.HEADERS, "Cross-Origin-Opener-Policy": "same-origin"}
PAGE_CACHE = "no-store"


class ConsoleKeys:
    """Keys the console derives from the server secret, read once (reading it may create the
    key file beside a SQLite database, so the first read is off the event loop)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._csrf: bytes | None = None
        self._flash: bytes | None = None
        self._device: bytes | None = None
        self._enrolment: bytes | None = None

    async def load(self) -> None:
        if self._csrf is None:
            secret = self._settings.secret_key
            if not secret:
                secret = await asyncio.to_thread(self._settings.resolved_secret_key)
            root = secret.encode("utf-8")
            self._csrf = hmac.new(root, b"dutyline:console-csrf", hashlib.sha256).digest()
            self._flash = hmac.new(root, b"dutyline:console-flash", hashlib.sha256).digest()
            self._device = hmac.new(root, b"dutyline:console-device", hashlib.sha256).digest()
            self._enrolment = hmac.new(root, b"dutyline:console-totp-enrolment",
                                       hashlib.sha256).digest()

    @property
    def csrf(self) -> bytes:
        assert self._csrf is not None, "ConsoleKeys.load() first"
        return self._csrf

    @property
    def flash(self) -> bytes:
        assert self._flash is not None, "ConsoleKeys.load() first"
        return self._flash


    @property
    def device(self) -> bytes:
        assert self._device is not None, "ConsoleKeys.load() first"
        return self._device


    @property
    def enrolment(self) -> bytes:
        assert self._enrolment is not None, "ConsoleKeys.load() first"
        return self._enrolment


def csrf_token(keys: ConsoleKeys, kind: str, secret: str) -> str:
    """The token for a visitor: `kind` is "session" or "visitor", `secret` the cookie's."""
    mac = hmac.new(keys.csrf, f"{kind}:{secret}".encode(), hashlib.sha256)
    return mac.hexdigest()


def csrf_ok(expected: str, given: str) -> bool:
    return bool(expected) and bool(given) and hmac.compare_digest(
        expected.encode("ascii"), given.encode("ascii", "replace"))


def new_visitor_secret() -> str:
    return secrets.token_urlsafe(32)


def secure(request: Request, settings: Settings) -> bool:
    """Served over HTTPS: said by the request itself, or by the base URL when a proxy in
    front ends TLS (the server then sees plain HTTP)."""
    return request.url.scheme == "https" or settings.base_url.startswith("https://")


def cookie_name(base: str, is_secure: bool) -> str:
    return f"__Host-{base}" if is_secure else base


SESSION_COOKIE = "dutyline_session"
VISITOR_COOKIE = "dutyline_visitor"
FLASH_COOKIE = "dutyline_flash"


def set_cookie(response: Response, name: str, value: str, *, is_secure: bool,
               max_age: int | None = None) -> None:
    response.set_cookie(cookie_name(name, is_secure), value, max_age=max_age, path="/",
                        secure=is_secure, httponly=True, samesite="lax")


def clear_cookie(response: Response, name: str, *, is_secure: bool) -> None:
    response.delete_cookie(cookie_name(name, is_secure), path="/", secure=is_secure,
                           httponly=True, samesite="lax")


def protect(response: Response, *, page: bool = True) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    if page:
        response.headers["Cache-Control"] = PAGE_CACHE
    return response


def sign(key: bytes, value: str) -> str:
    mac = hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"{mac}.{value}"


def unsign(key: bytes, signed: str) -> str | None:
    mac, _, value = signed.partition(".")
    expected = hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()
    return value if hmac.compare_digest(mac.encode("ascii", "replace"),
                                        expected.encode("ascii")) else None
