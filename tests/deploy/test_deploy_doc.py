"""docs/deploy.md shows the very files the tests use: its nginx site is docs/deploy/nginx.conf
and its Caddy site docs/deploy/Caddyfile (served by tests/deploy/test_proxies.py), its server
unit is deploy/systemd/dutyline.service (checked by tests/deploy/test_systemd.py), character
for character."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploy.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)


def test_the_nginx_site_shown_is_the_tested_file() -> None:
    assert _blocks("nginx") == [(ROOT / "docs" / "deploy" / "nginx.conf").read_text()]


def test_the_caddyfile_shown_is_the_tested_file() -> None:
    assert _blocks("caddyfile") == [(ROOT / "docs" / "deploy" / "Caddyfile").read_text()]


def test_the_unit_shown_is_the_tested_file() -> None:
    assert _blocks("ini") == [(ROOT / "deploy" / "systemd" / "dutyline.service").read_text()]


def test_the_files_it_names_exist() -> None:
    text = DOC.read_text()
    for path in ("deploy/systemd/dutyline.service", "docs/deploy/nginx.conf",
                 "tests/deploy/test_wheel.py", "tests/deploy/test_proxies.py",
                 "tests/deploy/test_systemd.py", "tests/cli/test_doctor.py",
                 "deploy/container/Containerfile", "deploy/container/make-base",
                 "tests/deploy/test_container.py"):
        assert path in text and (ROOT / path).is_file(), path
    assert "`dutyline-worker.service`" in text
    assert (ROOT / "deploy" / "systemd" / "dutyline-worker.service").is_file()
