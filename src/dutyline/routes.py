"""Every domain's operations, in one list the app and the OpenAPI document read."""

from __future__ import annotations

from dutyline.api.operation import Router
from dutyline.platform.app_key.endpoints import router as app_key_router
from dutyline.platform.audit.endpoints import router as audit_router
from dutyline.platform.member.endpoints import router as member_router
from dutyline.platform.role.endpoints import router as role_router
from dutyline.platform.team.endpoints import router as team_router


def all_routers() -> list[Router]:
    return [member_router, role_router, app_key_router, team_router, audit_router]
