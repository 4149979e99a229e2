"""The console's static files (stylesheet, vendored htmx), read once at start and served from
memory. Their URLs carry a digest of the content (`?v=`), so a browser may keep them for a
year: a changed file is a new URL. No Node at run time, no build step."""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from dutyline.web import security

STATIC_DIR = Path(__file__).resolve().parent / "static"
PREFIX = "/console/static/"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".svg": "image/svg+xml", ".txt": "text/plain; charset=utf-8"}
_FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    digest: str
    media_type: str


class Assets:
    def __init__(self, root: Path = STATIC_DIR) -> None:
        self.files: dict[str, Asset] = {}
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            name = path.relative_to(root).as_posix()
            body = path.read_bytes()
            media = _TYPES.get(path.suffix) or mimetypes.guess_type(name)[0] or (
                "text/plain; charset=utf-8")
            self.files[name] = Asset(body, hashlib.sha256(body).hexdigest()[:16], media)

    def url(self, name: str) -> str:
        """The versioned URL of a static file (a template's `static('console.css')`)."""
        return f"{PREFIX}{name}?v={self.files[name].digest}"

    async def serve(self, request: Request) -> Response:
        name = request.path_params["name"]
        asset = self.files.get(name)
        if asset is None:
            return security.protect(Response("not found", 404, media_type="text/plain"))
        current = request.query_params.get("v") == asset.digest
        etag = f'"{asset.digest}"'
        headers = {"ETag": etag,
                   "Cache-Control": _FOREVER if current else "public, no-cache"}
        if request.headers.get("if-none-match") == etag:
            return security.protect(Response(status_code=304, headers=headers), page=False)
        return security.protect(Response(asset.body, headers=headers,
                                         media_type=asset.media_type), page=False)

    def routes(self) -> list[Route]:
        return [Route(PREFIX + "{name:path}", self.serve, methods=["GET", "HEAD"])]
