"""Request and response examples for every operation of the OpenAPI document."""

from __future__ import annotations

from typing import Any


def attach(spec: dict[str, Any]) -> None:
    return None
