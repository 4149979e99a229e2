"""GET /ical/oncall/{token}.ics: a person's on-call shifts for calendar apps (no app_key:
the secret token in the URL is the credential)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.api.envelope import REQUEST_ID_HEADER
from dutyline.kit.ids import request_id as new_request_id
from dutyline.schedule import feed

if TYPE_CHECKING:
    from dutyline.api.runtime import Runtime

_HEADERS = {
    # The URL is the secret: keep it out of caches and Referer headers.
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def routes(runtime: Runtime) -> list[Route]:
    async def calendar(request: Request) -> Response:
        rid = new_request_id()
        headers = {REQUEST_ID_HEADER: rid, **_HEADERS}
        async with runtime.db.connect() as conn:
            body = await feed.render_feed(conn, request.path_params["token"], runtime.clock)
        if body is None:
            return Response("Not found\n", 404, headers, media_type="text/plain")
        return Response(body, 200, headers, media_type="text/calendar; charset=utf-8")

    return [Route("/ical/oncall/{token}.ics", calendar, methods=["GET", "HEAD"])]
