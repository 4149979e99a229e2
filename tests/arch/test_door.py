"""One door (rule 1 of the house): every way in runs its services in a unit of work
(api/unit.py), which flushes their audit entries, records a failed write, and applies the
caller's rate limit. Two checks keep it so.

- No actor is built outside the door: the walk from every way in (API operation, console
  page, signed link, job, batch, dead job's hook, `dutyline` command) meets no `Actor(...)`
  or `Actor.system(...)` but in api/unit.py, and neither does any module of the package. An
  actor the door built writes only while a unit holds it (api/access.py refuses otherwise),
  so a write whose entry nobody would flush fails loudly instead of going unaudited.
- A way in that reaches a write service reaches the door: API operations, jobs, batches and
  hooks are run in a unit by their runner (api/handler.py, work/worker.py); a console page,
  a signed link and a command must open one (the console's `ctx.read()` and `ctx.write()`
  are units)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import dutyline
from dutyline.api import unit as door
from dutyline.api.actor import Actor
from tests.arch.walk import Entry, entry_points, reached, walk

SRC = Path(dutyline.__file__).resolve().parent
# Where actors are made: the door, and the class itself.
MAKERS = ("api/unit.py", "api/actor.py")
# Ways in that their runner puts in a unit of work.
RUN_IN_A_UNIT = ("operation", "job", "batch", "on_dead")


def _builds_an_actor(target: Any) -> bool:
    return target is Actor or getattr(target, "__func__", None) is Actor.system.__func__


@pytest.mark.parametrize("entry", entry_points(), ids=str)
def test_no_way_in_builds_an_actor_outside_the_door(entry: Entry) -> None:
    built = sorted({f"{fn.__module__}.{fn.__qualname__}" for fn, target in walk(entry.func)
                    if _builds_an_actor(target) and fn.__module__ != door.__name__})
    assert not built, f"{entry} builds an Actor outside api/unit.py, in {built}"


@pytest.mark.parametrize("entry", [e for e in entry_points() if e.kind not in RUN_IN_A_UNIT],
                         ids=str)
def test_a_way_in_that_writes_opens_a_unit_of_work(entry: Entry) -> None:
    if not any(spec.operation is not None for spec in reached(entry.func, depth=6)):
        return
    assert any(target is door.unit for _, target in walk(entry.func)), (
        f"{entry} reaches a write service but opens no unit of work (api/unit.py)")


def _actor_calls(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id == "Actor") or (
                isinstance(func, ast.Attribute) and func.attr == "system"
                and isinstance(func.value, ast.Name) and func.value.id == "Actor"):
            lines.append(node.lineno)
    return lines


def test_no_module_builds_an_actor_but_the_door() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in MAKERS:
            continue
        for line in _actor_calls(ast.parse(path.read_text())):
            found.append(f"{relative}:{line}")
    assert not found, f"actors built outside api/unit.py: {found}"


def test_the_walk_sees_every_kind_of_way_in_and_through_a_page_s_context() -> None:
    """The walk would pass vacuously if it saw nothing: it finds each kind of way in, and
    follows a console page through `ctx.write()` to the door."""
    kinds = {e.kind for e in entry_points()}
    assert kinds == {"operation", "page", "link", "job", "batch", "on_dead", "command"}
    by_name = {e.name: e for e in entry_points()}
    team_create = by_name["POST /console/teams/new"]
    assert any(target is door.unit for _, target in walk(team_create.func))
    assert any(s.operation == "/team/upsert" for s in reached(team_create.func, depth=6))
    invite = by_name["dutyline invite-link"]
    assert any(s.operation == "/console/link/issue" for s in reached(invite.func, depth=6))
    assert any(target is door.unit for _, target in walk(invite.func))
