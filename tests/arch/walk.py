"""Walking the package's code from its ways in down to the services they call, by reading
each function's source: what it calls (names resolved in its module, in its closure, in the
imports it does inside itself, and a parameter by its annotated type, so `ctx.write()` of a
console page is ConsoleContext.write), then the same for every function of ours it reaches.

The ways in (`entry_points`): every API operation, console page, signed-link route, job
handler, batch handler, dead job's hook and `dutyline` command."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from types import FunctionType, MethodType, SimpleNamespace
from typing import Any

import click

from dutyline.api.access import ServiceAccess, access_of
from dutyline.api.operation import Operation
from dutyline.domains import all_routers, load_tasks


def operations() -> list[Operation]:
    return [op for router in all_routers() for op in router.operations]


@dataclass(frozen=True)
class Entry:
    kind: str  # "operation", "page", "link", "job", "batch", "on_dead", "command"
    name: str
    func: Callable[..., Any]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def _commands(group: click.Command, prefix: str) -> Iterator[Entry]:
    if isinstance(group, click.Group):
        for name, command in group.commands.items():
            yield from _commands(command, f"{prefix} {name}")
    elif group.callback is not None:
        yield Entry("command", prefix, group.callback)


@cache
def entry_points() -> tuple[Entry, ...]:
    from dutyline.cli import main
    from dutyline.web import signed_links
    from dutyline.web.routes import all_pages
    from dutyline.work.registry import registry

    load_tasks()
    found = [Entry("operation", op.path, op.handler) for op in operations()]
    found += [Entry("page", f"{p.method} {p.path}", p.handler) for p in all_pages()]
    console = SimpleNamespace(runtime=None, keys=None)
    found += [Entry("link", f"{'/'.join(sorted(r.methods or ()))} {r.path}", r.endpoint)
              for r in signed_links.routes(console)  # type: ignore[arg-type]
              if hasattr(r, "endpoint") and hasattr(r, "path")]
    found += [Entry("job", kind, fn) for kind, fn in sorted(registry._handlers.items())]
    found += [Entry("batch", kind, spec.fn)
              for kind, spec in sorted(registry._batches.items())]
    found += [Entry("on_dead", kind, fn) for kind, fn in sorted(registry._dead_hooks.items())]
    found += list(_commands(main, "dutyline"))
    return tuple(found)


def _resolve(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    if isinstance(expr, ast.Name):
        return namespace.get(expr.id)
    if isinstance(expr, ast.Attribute):
        owner = _resolve(expr.value, namespace)
        return None if owner is None else getattr(owner, expr.attr, None)
    return None


def _local_imports(tree: ast.AST) -> dict[str, Any]:
    """What `from x import y` inside a function body binds."""
    bound: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            try:
                module = importlib.import_module(node.module)
            except ImportError:
                continue
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if value is None:
                    try:
                        value = importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        continue
                bound[alias.asname or alias.name] = value
    return bound


def _annotated(func: FunctionType) -> dict[str, Any]:
    """Parameters by their annotated class (a ConsoleContext, a JobContext...), and a
    method's `self` by its class."""
    found: dict[str, Any] = {}
    owner, _, _ = func.__qualname__.rpartition(".")
    if owner and "<locals>" not in owner:
        cls = func.__globals__.get(owner)
        if isinstance(cls, type):
            found["self"] = cls
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        return found
    found.update({name: hint for name, hint in hints.items()
                  if name != "return" and isinstance(hint, type)})
    return found


def _function_of(obj: Any) -> Any:
    if isinstance(obj, MethodType):
        return obj.__func__
    if isinstance(obj, property):
        return obj.fget
    return obj


@cache
def _source_tree(func: FunctionType) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None


def called(func: FunctionType) -> tuple[Any, ...]:
    """What a function calls, as objects."""
    key = id(func)
    if key not in _CALLED:
        _CALLED[key] = (func, tuple(_calls(func)))
    return _CALLED[key][1]


_CALLED: dict[int, tuple[FunctionType, tuple[Any, ...]]] = {}


def _calls(func: FunctionType) -> Iterator[Any]:
    tree = _source_tree(func)
    if tree is None:
        return
    namespace = {**func.__globals__, **_annotated(func), **_local_imports(tree)}
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__, strict=True):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _resolve(node.func, namespace)
            if target is not None:
                yield target
        elif isinstance(node, ast.AsyncWith | ast.With):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and (
                        target := _resolve(call.func, namespace)) is not None:
                    yield target


def is_ours(obj: Any) -> bool:
    obj = _function_of(obj)
    return isinstance(obj, FunctionType) and obj.__module__.startswith("dutyline.")


def reached(func: Any, depth: int = 4, seen: set[int] | None = None) -> list[ServiceAccess]:
    """The guarded services `func` calls, directly or through unguarded helpers of ours."""
    seen = set() if seen is None else seen
    func = _function_of(func)
    if id(func) in seen or depth < 0:
        return []
    seen.add(id(func))
    if (spec := access_of(func)) is not None:
        return [spec]
    found: list[ServiceAccess] = []
    for target in called(func):
        if access_of(target) is not None or is_ours(target):
            found += reached(target, depth - 1, seen)
    return found


def walk(func: Any, depth: int = 6) -> Iterator[tuple[FunctionType, Any]]:
    """(function of ours, what it calls) for every function reached from `func`, guarded
    services included (their bodies too: the decorator wraps the function it names)."""
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(func, depth)]
    while todo:
        current, left = todo.pop()
        current = _function_of(current)
        current = getattr(current, "__wrapped__", current)
        if id(current) in seen or left < 0 or not is_ours(current):
            continue
        seen.add(id(current))
        for target in called(current):
            yield current, target
            if is_ours(target):
                todo.append((target, left - 1))
