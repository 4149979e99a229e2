"""/account/info: the caller's own account (any valid key)."""

from __future__ import annotations

from sqlalchemy import Connection

from dutyline.api.operation import Context, Empty, Router
from dutyline.platform.account import service
from dutyline.platform.account.schemas import AccountItem

router = Router("Account")


@router.post("/account/info")
def account_info(conn: Connection, ctx: Context, req: Empty) -> AccountItem:
    """The caller's account: id, name, locale, time zone, creation time."""
    return service.account_info_sync(conn, ctx.actor)
