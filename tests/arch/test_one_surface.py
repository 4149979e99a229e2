"""One surface per service: no dead code, no unguarded twin of a guarded read.

- Every public function of a `service` or `repository` module has a caller in the package
  (a test alone is not one: a function only tests call is the tests' internal).
- An async form that only runs its sync form (`return await conn.run_sync(...)`), in any
  module, exists for an async caller; the console and the read operations call the sync
  form, so an async form nobody awaits is not kept "for symmetry".
- A guarded service function (`@reads`, `@reads_sync`, `@writes`) has no public unguarded
  twin: the function it wraps is not reachable under another name, so no caller can skip
  the check by picking the other one. The system path is `Actor.system(...)`.

The references are read from the source by name (a name, an attribute, an imported name, a
"module:attr" string): a name used anywhere counts, so the check never calls live code dead.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections import Counter

from dutyline.api.access import access_of
from tests.arch.imports import modules

SURFACES = {"service", "repository"}
# Decorators that only guard a function: anything else registers it somewhere (a route, a
# job handler, a hook) and so calls it.
GUARDS = {"reads", "reads_sync", "writes", "cache", "functools.cache"}
_REF = re.compile(r"[a-z_][a-z0-9_.]*:([A-Za-z_][A-Za-z0-9_]*)")


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8"))
            for name, path in modules().items()}


def references(tree: ast.AST) -> Counter[str]:
    """How often each name is used in a module (its definitions are not uses)."""
    used: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used[node.id] += 1
        elif isinstance(node, ast.Attribute):
            used[node.attr] += 1
        elif isinstance(node, ast.ImportFrom):
            used.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(_REF.findall(node.value))
    return used


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target)


def public_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and not n.name.startswith("_")
            and all(_decorator_name(d) in GUARDS for d in n.decorator_list)]


def only_runs_its_sync_form(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [s for s in fn.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (isinstance(fn, ast.AsyncFunctionDef) and len(body) == 1
            and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Await)
            and isinstance(call := body[0].value.value, ast.Call)
            and isinstance(call.func, ast.Attribute) and call.func.attr == "run_sync")


def dead_functions(trees: dict[str, ast.Module]) -> list[str]:
    used: Counter[str] = Counter()
    for tree in trees.values():
        used.update(references(tree))
    return sorted(f"{name}.{fn.name}" for name, tree in trees.items()
                  if name.rpartition(".")[2] in SURFACES
                  for fn in public_functions(tree) if not used[fn.name])


def lonely_async_forms(trees: dict[str, ast.Module]) -> list[str]:
    used: Counter[str] = Counter()
    for tree in trees.values():
        used.update(references(tree))
    return sorted(f"{name}.{fn.name}" for name, tree in trees.items()
                  for fn in public_functions(tree)
                  if only_runs_its_sync_form(fn) and not used[fn.name])


def test_every_service_and_repository_function_has_a_caller() -> None:
    assert dead_functions(_trees()) == []


def test_an_async_form_is_there_for_an_async_caller() -> None:
    assert lonely_async_forms(_trees()) == []


def test_no_guarded_read_or_write_has_an_unguarded_twin() -> None:
    public: dict[int, str] = {}
    guarded: list[tuple[str, object]] = []
    for name in modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("_") or not callable(value):
                continue
            public.setdefault(id(value), f"{name}.{attr}")
            if access_of(value) is not None and getattr(value, "__module__", "") == name:
                guarded.append((f"{name}.{attr}", value))
    twins = [f"{where} guards {public[id(inner)]}" for where, fn in guarded
             if (inner := inspect.unwrap(fn)) is not fn and id(inner) in public]
    assert len(guarded) > 200
    assert twins == []


def test_the_checks_see_what_they_are_for() -> None:
    source = '''
@reads_sync(VIEW)
def thing_info_sync(conn, actor, *, thing_id): ...

async def thing_info(conn, actor, *, thing_id):
    """`thing_info_sync` on an async connection."""
    return await conn.run_sync(lambda sync: thing_info_sync(sync, actor, thing_id=thing_id))

def never_called(conn): ...

@router.post("/thing/info")
def registered(conn, ctx, req): ...

def called(conn):
    return thing_info_sync(conn, None, thing_id=1)
'''
    trees = {"pkg.thing.repository": ast.parse(source),
             "pkg.other.service": ast.parse("def user(c):\n    return called(c)\n")}
    assert dead_functions(trees) == ["pkg.other.service.user",
                                     "pkg.thing.repository.never_called",
                                     "pkg.thing.repository.thing_info"]
    assert lonely_async_forms(trees) == ["pkg.thing.repository.thing_info"]
