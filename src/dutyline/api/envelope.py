"""The response envelope, encoded straight to bytes (no intermediate dicts)."""

from __future__ import annotations

from typing import Any

import msgspec

REQUEST_ID_HEADER = "Service-Request-Id"

_encoder = msgspec.json.Encoder()


def success_body(request_id: str, data: Any) -> bytes:
    return b'{"request_id":"%s","data":%s}' % (request_id.encode(), _encoder.encode(data))


def error_body(request_id: str, code: str, message: str) -> bytes:
    return b'{"request_id":"%s","error":%s}' % (
        request_id.encode(),
        _encoder.encode({"code": code, "message": message}),
    )


def encode(value: Any) -> bytes:
    return _encoder.encode(value)
