"""Permission and audit live in the services (api/access.py), so that every caller of a
service, the API, the console, a signed link or a job, is checked and audited alike.

The walk: every operation is followed from its endpoint down to the guarded service
functions it calls (through the plain helpers in between). An operation that needs a
permission must reach a service that requires the same permissions, and a write must reach a
write service, which notes its audit entry on the actor whoever calls it. Then every guarded
service is called with an actor holding no permission: it refuses before doing anything."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from types import ModuleType
from typing import Any

import pytest

from dutyline.api import errors
from dutyline.api.access import ServiceAccess, access_of, reads, writes
from dutyline.api.actor import Actor
from dutyline.api.operation import Operation
from dutyline.kit.clock import FixedClock
from tests.arch.walk import operations, reached

# Writes whose endpoint changes nothing a service guards: none today. An entry here says why.
NOT_A_SERVICE_WRITE: dict[str, str] = {}


@cache
def _specs_by_path() -> dict[str, list[ServiceAccess]]:
    return {op.path: reached(op.handler) for op in operations()}


@pytest.mark.parametrize("op", operations(), ids=lambda op: op.path)
def test_the_operation_s_permission_is_required_by_its_service(op: Operation) -> None:
    if not op.permissions:
        return
    specs = _specs_by_path()[op.path]
    wanted = set(op.permissions)
    assert any(set(s.permissions) == wanted for s in specs), (
        f"{op.path} needs {sorted(wanted)} but reaches no service requiring them "
        f"(reached: {[s.permissions for s in specs]})")


@pytest.mark.parametrize("op", [op for op in operations() if op.write],
                         ids=lambda op: op.path)
def test_every_write_reaches_a_write_service_that_audits_it(op: Operation) -> None:
    if op.path in NOT_A_SERVICE_WRITE:
        return
    specs = _specs_by_path()[op.path]
    assert any(s.operation is not None for s in specs), (
        f"{op.path} writes through no @writes service: its audit entry depends on the API")


def _guarded_functions() -> list[Any]:
    """Every guarded service of the package (the operations' modules import them all)."""
    import sys

    operations()  # imports every domain's endpoints and, through them, its services
    found: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("dutyline.") or not isinstance(module, ModuleType):
            continue
        for value in vars(module).values():
            # Guarded services may also be built by a factory and kept in a module-level
            # table (a dict of records of them): look one and two levels in.
            for candidate in _with_members(value, depth=2):
                if access_of(candidate) is not None and getattr(
                        candidate, "__module__", "").startswith("dutyline."):
                    found[id(candidate)] = candidate
    return sorted(found.values(), key=lambda f: (f.__module__, f.__qualname__))


def _with_members(value: Any, depth: int) -> Iterator[Any]:
    yield value
    if depth == 0 or isinstance(value, type | ModuleType | str | bytes):
        return
    if isinstance(value, dict):
        members: Iterable[Any] = value.values()
    elif isinstance(value, list | tuple):
        members = value
    elif hasattr(value, "__dataclass_fields__"):
        members = (getattr(value, f) for f in value.__dataclass_fields__)
    else:
        return
    for member in members:
        yield from _with_members(member, depth - 1)


def _stranger(account_id: int = 1) -> Actor:
    """A member holding no permission at all."""
    return Actor(account_id=account_id, person_id=7, clock=FixedClock(1_700_000_000),
                 credential="session")


@pytest.mark.anyio
@pytest.mark.parametrize("service", [f for f in _guarded_functions() if access_of(f)
                                     and access_of(f).permissions],  # type: ignore[union-attr]
                         ids=lambda f: f"{f.__module__}.{f.__qualname__}"
                         f"{'@' + (access_of(f).operation or '')}")  # type: ignore[union-attr]
async def test_every_guarded_service_refuses_an_actor_without_its_permission(
        service: Any) -> None:
    actor = _stranger()
    # No connection and no arguments: the refusal comes before the service does anything.
    with pytest.raises(errors.AccessDenied):
        await service(None, actor)
    assert actor.audit_entries == []


def test_the_walk_finds_the_guarded_services() -> None:
    """The walk itself sees through endpoints and helpers (it would pass vacuously if not)."""
    specs = _specs_by_path()["/incident/ack"]
    assert any(s.operation == "/incident/ack" for s in specs)
    assert len(_guarded_functions()) >= 10


# The decorators' own rules, on services defined here.

@writes("/thing/change", "thing_manage")
async def _change(conn: Any, actor: Actor, *, ids: list[str]) -> list[str]:
    actor.note_audit_targets("noted")
    return ids


@writes("/thing/outer", "thing_manage")
async def _outer(conn: Any, actor: Actor) -> None:
    await _change(conn, actor, ids=["inner"])


@reads("thing_view", "thing_manage")
async def _look(conn: Any, actor: Actor) -> str:
    return "seen"


def _holding(*permissions: str) -> Actor:
    return Actor(account_id=1, person_id=7, clock=FixedClock(1_700_000_000),
                 permissions=frozenset(permissions), credential="session")


@pytest.mark.anyio
async def test_a_write_notes_one_entry_with_its_result_and_noted_targets() -> None:
    actor = _holding("thing_manage")
    assert await _change(None, actor, ids=["a", "b"]) == ["a", "b"]
    (entry,) = actor.take_audit_entries()
    assert (entry.operation, entry.targets) == ("/thing/change", ["a", "b", "noted"])
    assert actor.take_audit_entries() == []


@pytest.mark.anyio
async def test_a_write_inside_a_write_is_part_of_the_outer_entry() -> None:
    actor = _holding("thing_manage")
    await _outer(None, actor)
    (entry,) = actor.take_audit_entries()
    assert entry.operation == "/thing/outer"
    assert entry.targets == ["noted"]


@pytest.mark.anyio
async def test_a_refused_or_failed_write_notes_nothing() -> None:
    actor = _holding("thing_view")
    with pytest.raises(errors.AccessDenied):
        await _change(None, actor, ids=["a"])

    @writes("/thing/fail", "thing_view")
    async def failing(conn: Any, actor: Actor) -> None:
        raise errors.invalid("x", "is wrong")

    with pytest.raises(errors.InvalidParameter):
        await failing(None, actor)
    assert actor.audit_entries == [] and actor.write_depth == 0


@pytest.mark.anyio
async def test_a_read_admits_any_of_its_permissions_and_notes_nothing() -> None:
    assert await _look(None, _holding("thing_manage")) == "seen"
    with pytest.raises(errors.AccessDenied):
        await _look(None, _holding("other"))
    admin = Actor(account_id=1, person_id=1, clock=FixedClock(0), is_admin=True)
    assert await _look(None, admin) == "seen"
    assert admin.audit_entries == []
