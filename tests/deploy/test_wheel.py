"""dutyline installed from its wheel, not from the source tree: the wheel is built the way
docs/deploy.md says (`pip wheel`, through hatchling), holds every file of the package that git
tracks, and `dutyline serve` from a fresh virtual environment with it installed migrates its
database, renders the console's templates, serves its static files and its translations.

The fresh environment reaches dutyline's dependencies offline: a .pth file puts this
environment's site-packages after its own. Only the packages in that folder come from there;
this environment's editable dutyline does not (its own .pth hook is never run from a folder a
.pth file adds), and the test checks that the `dutyline` it runs is the one in the wheel."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from dutyline.db.engine import Database
from tests.fixtures.server import running_server

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

ROOT = Path(__file__).resolve().parents[2]
_STATIC = re.compile(r'<script src="(/console/static/[^"]*htmx[^"]*)"')


# A source tree on the path (PYTHONPATH=src, as developers run the tests) would shadow the wheel.
CLEAN = {"PYTHONPATH": "", "PYTHONNOUSERSITE": "1"}


def _run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **CLEAN}, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _build_wheel(out: Path) -> Path:
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", out, ROOT)
    [wheel] = out.glob("dutyline-*.whl")
    return wheel


def _fresh_venv(folder: Path, wheel: Path) -> Path:
    _run(sys.executable, "-m", "venv", "--without-pip", folder)
    python = folder / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
         "--no-index", "--quiet", wheel)
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                .strip())
    (site / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return folder


def _head_revision() -> str:
    scripts = ScriptDirectory(str(ROOT / "src" / "dutyline" / "db" / "migrations"))
    head = scripts.get_current_head()
    assert head is not None
    return head


def _revision(url: str) -> str:
    async def read() -> str:
        db = Database(url)
        try:
            async with db.connect() as conn:
                return str((await conn.execute(text("SELECT version_num FROM alembic_version")))
                           .scalar_one())
        finally:
            await db.dispose()
    return asyncio.run(read())


def test_the_wheel_holds_every_tracked_file_of_the_package(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    tracked = set(_run("git", "ls-files", "src/dutyline", cwd=ROOT).split())
    with zipfile.ZipFile(wheel) as built:
        names = {f"src/{name}" for name in built.namelist()}
    missing = sorted(tracked - names)
    assert missing == [], f"not in the wheel: {missing[:10]}"
    for kind in ("templates/", "static/", "locales/", "migrations/versions/"):
        assert any(kind in name for name in names), kind


def test_serve_from_a_wheel_install(tmp_path: Path) -> None:
    venv = _fresh_venv(tmp_path / "venv", _build_wheel(tmp_path / "dist"))
    where = _run(venv / "bin" / "python", "-c", "import dutyline; print(dutyline.__file__)")
    assert where.startswith(str(venv)), where
    home = tmp_path / "home"  # no dutyline.toml, no source tree: only what the wheel brings
    home.mkdir()
    url = f"sqlite+aiosqlite:///{home / 'dutyline.db'}"
    env = {"DUTYLINE_DATABASE_URL": url, "DUTYLINE_SECRET_KEY": "wheel-test-key", **CLEAN}
    with running_server(env, cwd=home, command=[str(venv / "bin" / "dutyline")]) as server, \
            server.client() as web:
        assert _revision(url) == _head_revision()
        page = web.get("/console/sign-in")
        assert page.status_code == 200 and 'name="password"' in page.text
        found = _STATIC.search(page.text)
        assert found is not None, page.text
        script = web.get(found[1])
        assert script.status_code == 200 and "htmx" in script.text[:2000]
        css = re.search(r'href="(/console/static/[^"]*console[^"]*)"', page.text)
        assert css is not None and web.get(css[1]).status_code == 200
        refused = web.post("/team/list", params={"app_key": "nope"}, json={},
                           headers={"Accept-Language": "zh-CN"})
        english = web.post("/team/list", params={"app_key": "nope"}, json={})
        assert refused.status_code == english.status_code == 401
        assert refused.json()["error"]["message"] != english.json()["error"]["message"]
        assert httpx.get(f"{server.base_url}/docs", timeout=10,
                         trust_env=False).status_code == 200
    assert str(venv) in " ".join(server.process.args)  # type: ignore[arg-type]
