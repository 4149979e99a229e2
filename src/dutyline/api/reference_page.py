"""The API reference at /docs: Swagger UI (vendored from npm into api/static/reference/ by
tools/api-reference/vendor.sh) over the server's own /openapi.json. Every file is served by
the server, so the page works on an air-gapped install; the page runs no inline script."""

from __future__ import annotations

import hashlib
import html
from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from dutyline.kit import page_policy

STATIC_DIR = Path(__file__).resolve().parent / "static"
PREFIX = "/docs/assets/"
# Swagger UI builds its page with React, which sets element styles from script (allowed
# under `style-src 'self'`); "try it" calls this same server (`connect-src 'self'`).
CSP = page_policy.CONTENT_SECURITY_POLICY  # the console's own
HEADERS = {**page_policy.HEADERS, "Cache-Control": "no-cache"}
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# An asset's URL carries a digest of its content, so a browser may keep it for a year.
_FOREVER = "public, max-age=31536000, immutable"


class _Assets:
    """The page's script and style files, read once and served from memory."""

    def __init__(self, root: Path) -> None:
        self.files: dict[str, tuple[bytes, str, str]] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in _TYPES:
                body = path.read_bytes()
                self.files[path.relative_to(root).as_posix()] = (
                    body, hashlib.sha256(body).hexdigest()[:16], _TYPES[path.suffix])

    def url(self, name: str) -> str:
        return f"{PREFIX}{name}?v={self.files[name][1]}"

    async def serve(self, request: Request) -> Response:
        found = self.files.get(request.path_params["name"])
        if found is None:
            return Response("not found", 404, media_type="text/plain", headers=HEADERS)
        body, digest, media_type = found
        headers = {**HEADERS, "ETag": f'"{digest}"', "Cache-Control": (
            _FOREVER if request.query_params.get("v") == digest else "public, no-cache")}
        if request.headers.get("if-none-match") == headers["ETag"]:
            return Response(status_code=304, headers=headers)
        return Response(body, headers=headers, media_type=media_type)


@cache
def _assets() -> _Assets:
    """Read once per process: the files ship with the package and never change under it."""
    return _Assets(STATIC_DIR)


class ReferencePage:
    def __init__(self, title: str) -> None:
        self.assets = _assets()
        url = self.assets.url
        self.html = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{html.escape(title)} reference</title>"
            f'<link rel="stylesheet" href="{url("reference/swagger-ui.css")}">'
            f'<link rel="stylesheet" href="{url("reference.css")}">'
            '</head><body><main id="reference"></main>'
            f'<script src="{url("reference/swagger-ui-bundle.js")}"></script>'
            f'<script src="{url("reference.js")}"></script></body></html>'
        )

    async def page(self, _: Request) -> Response:
        return HTMLResponse(self.html, headers=HEADERS)

    def routes(self) -> list[BaseRoute]:
        return [Route("/docs", self.page, methods=["GET"]),
                Route(PREFIX + "{name:path}", self.assets.serve, methods=["GET", "HEAD"])]
