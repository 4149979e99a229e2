"""Every domain's operations, in one list the app and the OpenAPI document read."""

from __future__ import annotations

from dutyline.api.operation import Router
from dutyline.platform.team.endpoints import router as team_router


def all_routers() -> list[Router]:
    return [team_router]
