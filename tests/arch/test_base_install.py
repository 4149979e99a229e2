"""The base install (`pip install dutyline`, what `make serve` installs) imports every module.

A module that imports an optional extra (`redis`, `asyncpg`, `opentelemetry`) or a test-only
package at its top breaks `make serve` on a fresh clone, while every test passes: the test
environment has them all. So every module of the package is imported in a child interpreter
in which only the distributions the base install brings can be imported; everything else
installed here (the extras, pytest, the SMTP sink...) is hidden, as on a fresh machine."""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import textwrap

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Modules that are the optional backend itself, imported only where their setting is in
# force (kit/extras.require guards the import), with the extra each needs.
BACKEND_MODULES = {"dutyline.api.ratelimit_redis": "redis"}
# Run on import by Alembic, not importable on their own.
NOT_IMPORTABLE = ("dutyline.db.migrations",)


def _base_closure() -> set[str]:
    """The distributions `pip install dutyline` brings: its requirements without extras, and
    theirs, transitively (markers evaluated for this interpreter)."""
    seen: set[str] = set()
    todo = ["dutyline"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue  # an optional marker-only dependency not installed here
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(req.name)
            # `uvicorn[standard]`-style extras of a base requirement are part of the base.
            for extra in req.extras:
                for sub in md.requires(req.name) or []:
                    sub_req = Requirement(sub)
                    if sub_req.marker is not None and sub_req.marker.evaluate({"extra": extra}):
                        todo.append(sub_req.name)
    return seen


def _hidden_top_levels(base: set[str]) -> list[str]:
    hidden = []
    for top, dists in md.packages_distributions().items():
        if not any(canonicalize_name(d) in base for d in dists):
            hidden.append(top)
    return sorted(hidden)


CHILD = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    hidden = set(json.loads(sys.argv[1]))
    skip = tuple(json.loads(sys.argv[2]))

    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in hidden:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    import dutyline
    failures = {}
    names = [m.name for m in pkgutil.walk_packages(dutyline.__path__, "dutyline.")]
    for name in names:
        if name.startswith(skip):
            continue
        try:
            importlib.import_module(name)
        except BaseException as exc:
            failures[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"imported": len(names), "failures": failures}))
    """
)


def test_every_module_imports_with_the_base_install_alone() -> None:
    base = _base_closure()
    hidden = _hidden_top_levels(base)
    # The net is real only if it hides what a fresh clone lacks.
    assert {"redis", "asyncpg", "pytest", "hypothesis"} <= set(hidden)
    assert "starlette" not in hidden and "dutyline" not in hidden
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(hidden), json.dumps(NOT_IMPORTABLE)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["imported"] > 300
    failures = {name: why for name, why in report["failures"].items()
                if name not in BACKEND_MODULES}
    assert failures == {}
    # The backend modules fail only for want of their own extra.
    for name, extra in BACKEND_MODULES.items():
        assert f"No module named '{extra}" in report["failures"].get(name, ""), name
