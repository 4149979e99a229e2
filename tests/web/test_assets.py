"""The console's static files (and the API reference's): in the built wheel, served with long
cache headers, and the vendored htmx named with its version and licence."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from dutyline.api import openapi_words, reference_page
from dutyline.web.assets import STATIC_DIR, Assets
from dutyline.web.templating import TEMPLATES_DIR
from tests.fixtures.api import Api
from tests.fixtures.console import browser

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ("vendor/htmx.min.js", "vendor/htmx-ext-sse.min.js")


def test_versions_names_each_vendored_file_its_version_and_licence() -> None:
    rows = [line.split() for line in (STATIC_DIR / "vendor" / "VERSIONS").read_text()
            .splitlines() if line.strip() and not line.startswith("#")]
    assert {r[0] for r in rows} == {"htmx.org", "htmx-ext-sse"}
    for package, version, licence, file, licence_file in rows:
        assert version.startswith("2.")
        assert licence == "0BSD"
        assert (STATIC_DIR / "vendor" / file).stat().st_size > 1000
        assert "Zero" in (STATIC_DIR / "vendor" / licence_file).read_text()
        assert package


def test_the_wheel_holds_the_templates_and_static_files(tmp_path: Path) -> None:
    from hatchling.builders.wheel import WheelBuilder

    built = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"]))
    with zipfile.ZipFile(built[0]) as wheel:
        names = set(wheel.namelist())
    package = ROOT / "src"
    expected = {p.relative_to(package).as_posix()
                for folder in (STATIC_DIR, TEMPLATES_DIR, reference_page.STATIC_DIR)
                for p in folder.rglob("*") if p.is_file()}
    expected.add(openapi_words.REFERENCE.relative_to(package).as_posix())
    assert {"dutyline/web/static/vendor/htmx.min.js", "dutyline/web/static/console.css",
            "dutyline/web/templates/layout/base.html",
            "dutyline/api/static/reference/swagger-ui-bundle.js",
            "dutyline/api/reference/openapi.en.json"} <= expected
    assert expected - names == set()


@pytest.mark.anyio
async def test_static_files_are_cached_for_a_year_under_their_digest(api: Api) -> None:
    assets = Assets()
    b = browser(api)
    for name in (*VENDORED, "console.css"):
        url = assets.url(name)
        answer = await b.get(url)
        assert answer.status_code == 200
        assert answer.content == (STATIC_DIR / name).read_bytes()
        assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["content-type"].startswith(
            "text/javascript" if name.endswith(".js") else "text/css")
        # Without the current digest: revalidated, never kept as is.
        stale = await b.get(url.split("?")[0] + "?v=old")
        assert stale.headers["cache-control"] == "public, no-cache"
        again = await b.get(url, headers={"If-None-Match": answer.headers["etag"]})
        assert again.status_code == 304
    assert (await b.get("/console/static/../app.py")).status_code == 404
    assert (await b.get("/console/static/nothing.js")).status_code == 404
    await b.aclose()
