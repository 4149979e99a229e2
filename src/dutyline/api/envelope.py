"""The response envelope, encoded straight to bytes (no intermediate dicts)."""

from __future__ import annotations

from typing import Any

import msgspec

REQUEST_ID_HEADER = "Service-Request-Id"
# The reference's SuccessEnvelope mirrors request_id in this header; clients written against
# it read this one, so every response carries both.
REFERENCE_REQUEST_ID_HEADER = "Flashcat-Request-Id"

_encoder = msgspec.json.Encoder()


def request_id_headers(request_id: str) -> dict[str, str]:
    """The response headers that name the request (a fresh dict the caller may extend)."""
    return {REQUEST_ID_HEADER: request_id, REFERENCE_REQUEST_ID_HEADER: request_id}


def success_body(request_id: str, data: Any) -> bytes:
    return b'{"request_id":"%s","data":%s}' % (request_id.encode(), _encoder.encode(data))


def error_body(request_id: str, code: str, message: str) -> bytes:
    return b'{"request_id":"%s","error":%s}' % (
        request_id.encode(),
        _encoder.encode({"code": code, "message": message}),
    )


def encode(value: Any) -> bytes:
    return _encoder.encode(value)
