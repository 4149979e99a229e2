"""The layering of the package, checked on every run (an import contract):

- `kit`, `api`, `work` and `db` never import a domain;
- a domain reaches another domain only through that domain's `service` module(s);
- only the composition root (domains.py), app.py and cli.py tie domains together.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dutyline"
INFRA = {"kit", "api", "work", "db", "config", "command_settings"}
ROOT_MODULES = {"app", "cli", "domains", "__init__", "__main__"}


def _imports(path: Path) -> Iterator[str]:
    """Every dutyline module a file imports (for `from pkg import name`, `pkg.name` when
    `name` is itself a module, else `pkg`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                as_path = SRC.parent / candidate.replace(".", "/")
                is_module = as_path.with_suffix(".py").exists() or as_path.is_dir()
                yield candidate if is_module else node.module


def _violations() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if "migrations" in parts:
            continue
        owner = parts[0]
        if owner in ROOT_MODULES:
            continue
        module = "dutyline." + ".".join(parts)
        for imported in _imports(path):
            segments = imported.split(".")
            if segments[0] != "dutyline" or len(segments) < 2:
                continue
            target = segments[1]
            if target == owner or target in ROOT_MODULES - {"domains", "app", "cli"}:
                continue
            if target in {"domains", "app", "cli"}:
                found.add((module, imported))
            elif owner in INFRA:
                if target not in INFRA:
                    found.add((module, imported))
            elif target not in INFRA and segments[-1] != "service":
                found.add((module, imported))
    return found


def test_infrastructure_never_imports_a_domain_and_domains_meet_only_through_services() -> None:
    assert sorted(_violations()) == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The contract is not vacuous: an infrastructure module importing a domain is caught."""
    sample = tmp_path / "probe.py"
    sample.write_text("from dutyline.incident import feed\nimport dutyline.channel.repository\n")
    assert set(_imports(sample)) == {"dutyline.incident.feed", "dutyline.channel.repository"}
