"""The package's import graph, read from the source with `ast`: every import statement of
every module (top-level, inside functions, under TYPE_CHECKING, relative), each resolved to
the dutyline module it names (for `from pkg import name`, `pkg.name` when that is itself a
module, else `pkg`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dutyline"


@dataclass(frozen=True)
class Edge:
    source: str  # the importing module
    target: str  # the imported module
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}"


def module_name(path: Path, root: Path = SRC) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((root.name, *parts))


def modules(root: Path = SRC) -> dict[str, Path]:
    """Every module of the package but the Alembic migrations (run by Alembic, not imported)."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))
            if "migrations" not in p.relative_to(root).parts}


def _existing(name: str, known: dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Edge]:
    top = name.partition(".")[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Edge] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == top:
                    found.append(Edge(name, _existing(alias.name, known), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.partition(".")[0] != top:
                continue
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                target = candidate if candidate in known else _existing(source, known)
                found.append(Edge(name, target, node.lineno))
    return found


def graph(root: Path = SRC) -> list[Edge]:
    known = modules(root)
    return [edge for name, path in known.items() for edge in imports_of(name, path, known)
            if edge.target != name]


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    adjacency: dict[str, set[str]] = {}
    for e in edges:
        adjacency.setdefault(e.source, set()).add(e.target)
        adjacency.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(adjacency[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(adjacency):
        if v not in index:
            visit(v)
    return sorted(found)
