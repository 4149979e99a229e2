"""The console's front door: `/console/` opens the incidents."""

from __future__ import annotations

from starlette.responses import Response

from dutyline.web.context import ConsoleContext
from dutyline.web.page import HOME, Pages

pages = Pages()


@pages.get("/console/")
async def home(ctx: ConsoleContext) -> Response:
    return ctx.redirect(HOME)
