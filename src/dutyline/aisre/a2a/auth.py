"""The agent's credentials: validated, sealed at rest, masked on read, turned into headers.

The whole auth_config is sealed as one JSON value (with runtime.secrets), so the header name
is protected too and one column holds it all; the masked view is rebuilt from the opened value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec

from dutyline.aisre.a2a.schemas import MASK, AuthConfig
from dutyline.api import errors
from dutyline.api.outbound_secrets import is_mask, secret_to_store
from dutyline.kit.secretbox import SecretBox

DEFAULT_API_KEY_HEADER = "X-API-Key"
# An HTTP field name (RFC 9110 token), minus the headers the HTTP client must own.
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "accept",
     "a2a-version"}
)


@dataclass(frozen=True)
class AgentAuth:
    """Opened credentials: what the gateway and the card fetcher send."""

    auth_type: str
    header_name: str = ""
    secret: str = ""

    def headers(self) -> dict[str, str]:
        if self.auth_type == "bearer":
            return {"Authorization": f"Bearer {self.secret}"}
        if self.auth_type == "api_key":
            return {self.header_name: self.secret}
        return {}

    def masked(self) -> AuthConfig:
        if self.auth_type == "bearer":
            return AuthConfig(token=MASK)
        if self.auth_type == "api_key":
            return AuthConfig(header_name=self.header_name, api_key=MASK)
        return AuthConfig()

    def seal(self, box: SecretBox) -> str:
        if self.auth_type == "none":
            return ""
        value = {"header_name": self.header_name, "secret": self.secret}
        return box.seal(msgspec.json.encode(value).decode())


NO_AUTH = AgentAuth("none")


def open_auth(box: SecretBox, auth_type: str, sealed: str) -> AgentAuth:
    if auth_type == "none" or not sealed:
        return NO_AUTH
    value = msgspec.json.decode(box.open(sealed))
    return AgentAuth(auth_type, str(value.get("header_name", "")), str(value.get("secret", "")))


def _secret(value: str | None, old: str | None, field: str) -> str:
    """The secret to store: a new value, or the old one when the caller sent the mask back."""
    if is_mask(value):
        return secret_to_store(value, old or "", keep=old is not None, field=field)
    if value is None or not value.strip():
        raise errors.invalid(field, "is required")
    if "\r" in value or "\n" in value:
        raise errors.invalid(field, "must not contain line breaks")
    return value


def build_auth(auth_type: str, config: AuthConfig | None, old: AgentAuth | None) -> AgentAuth:
    """Validate the requested credentials. `old` is the stored ones on update: a masked
    secret sent back keeps the old secret when the kind of auth has not changed."""
    keep = old if old is not None and old.auth_type == auth_type else None
    if auth_type == "none":
        return NO_AUTH
    if auth_type == "bearer":
        if config is None and keep is not None:
            return keep
        token = None if config is None else config.token
        return AgentAuth(
            "bearer", secret=_secret(token, keep.secret if keep else None, "auth_config.token")
        )
    if config is None and keep is not None:
        return keep
    header = ((config.header_name if config else None) or "").strip()
    if not header:
        header = keep.header_name if keep is not None else DEFAULT_API_KEY_HEADER
    if not _HEADER_NAME.match(header) or header.lower() in _RESERVED_HEADERS:
        raise errors.invalid("auth_config.header_name", "is not a usable HTTP header name")
    key = None if config is None else config.api_key
    secret = _secret(key, keep.secret if keep else None, "auth_config.api_key")
    return AgentAuth("api_key", header_name=header, secret=secret)
