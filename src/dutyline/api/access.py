"""Permission and audit at the service: what every caller of a service gets alike.

The operation layer, the console, a signed link and a job all call the same service
functions, so the service itself refuses an actor without the permission and notes the audit
entry of a write (api/actor.py keeps it until the transaction's runner flushes it):

    @writes("/incident/ack", INCIDENT_MANAGE)
    async def ack(conn, actor, *, incident_ids): ...

    @reads(SCHEDULE_VIEW)
    async def list_schedules(conn, actor, *, query): ...

Several permissions admit an actor holding any one of them; none admits any actor of the
account (what it may touch is then the service's own rule, such as "only your own contacts").
Code that decides case by case calls `require` itself. The decorators also mark the function:
an API operation names its service (`@router.post("/incident/ack", service=...)`) and takes
its permission and audit from that mark, declared once here; tests/arch walks every way in
down to the services that guard it."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import msgspec

from dutyline.api import errors
from dutyline.api.actor import Actor, AuditEntry
from dutyline.api.inputs import checked_arguments

P = ParamSpec("P")
R = TypeVar("R")
Targets = Callable[[Any], Iterable[Any]]


def require(actor: Actor, *permissions: str) -> None:
    """Refuse (403 AccessDenied) an actor holding none of `permissions`."""
    if permissions and not any(actor.has(p) for p in permissions):
        raise errors.AccessDenied()


@dataclass(frozen=True, slots=True)
class ServiceAccess:
    """What a guarded service function declares: read by the architecture test."""

    permissions: tuple[str, ...]
    operation: str | None  # the audited operation of a write; None for a read
    dangerous: bool = False
    # The record whose limits the service's arguments are checked against on entry.
    inputs: type[msgspec.Struct] | None = None
    # A read the operation layer audits all the same (an export of personal data).
    audited: bool = False


ACCESS_ATTRIBUTE = "__service_access__"


def access_of(func: Any) -> ServiceAccess | None:
    return getattr(func, ACCESS_ATTRIBUTE, None)


def reads(*permissions: str, audited: bool = False,
          ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """A read service that needs one of `permissions`; `audited`: its API operation is
    audited though it writes nothing (an export)."""
    spec = ServiceAccess(permissions, None, audited=audited)

    def decorate(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(func)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            require(_actor_of(args), *permissions)
            return await func(*args, **kwargs)

        setattr(guarded, ACCESS_ATTRIBUTE, spec)
        return guarded

    return decorate


def reads_sync(*permissions: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """`reads` for a sync read service (one run inside a unit of database work: a sync read
    operation's, api/operation.py)."""
    spec = ServiceAccess(permissions, None)

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            require(_actor_of(args), *permissions)
            return func(*args, **kwargs)

        setattr(guarded, ACCESS_ATTRIBUTE, spec)
        return guarded

    return decorate


def writes(operation: str, *permissions: str, dangerous: bool = False,
           targets: Targets | None = None, inputs: type[msgspec.Struct] | None = None,
           ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """A write service: refuses an actor without one of `permissions`, then checks its
    keyword arguments against the limits of the record `inputs` (api/inputs.py), then, when
    it returns, notes one audit entry for `operation` on the actor. Its targets are what
    `targets` makes of the result (by default: the result itself when it is an id or a list
    of ids) and what the service noted with `actor.note_audit_targets`. A write service
    called by another belongs to the outer one's entry. One that is refused or raises notes
    the write it attempted instead (`actor.failed_write`), which the unit of work records
    with its outcome when the unit fails (api/unit.py)."""
    spec = ServiceAccess(permissions, operation, dangerous, inputs)
    pick = targets or _ids_in

    def decorate(func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(func)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            actor = _actor_of(args)
            outermost = actor.write_depth == 0
            if actor.bound and not actor.units:
                raise RuntimeError(f"{operation}: a write by an actor no unit of work holds "
                                   "(api/unit.py): its audit entry would be lost")
            try:
                require(actor, *permissions)
                if inputs is not None:
                    kwargs = checked_arguments(inputs, kwargs)  # type: ignore[assignment]
            except errors.ApiError:  # refused: by its rights or by its input's limits
                if outermost:
                    actor.failed_write = AuditEntry(operation, [], dangerous)
                raise
            if outermost:
                actor.audit_targets = []
            actor.write_depth += 1
            try:
                result = await func(*args, **kwargs)
            except BaseException:
                if outermost:
                    noted, actor.audit_targets = actor.audit_targets, []
                    actor.failed_write = AuditEntry(operation, noted, dangerous)
                raise
            finally:
                actor.write_depth -= 1
            if outermost:
                noted, actor.audit_targets = actor.audit_targets, []
                actor.audit_entries.append(AuditEntry(
                    operation, [*pick(result), *noted], dangerous))
            return result

        setattr(guarded, ACCESS_ATTRIBUTE, spec)
        return guarded

    return decorate


def _actor_of(args: tuple[Any, ...]) -> Actor:
    """Services take `(conn, actor, *, ...)`: the actor is the second positional argument."""
    if len(args) < 2 or not isinstance(args[1], Actor):
        raise TypeError("a guarded service is called as (conn, actor, *, arguments)")
    return args[1]


def _ids_in(result: Any) -> list[Any]:
    if isinstance(result, str | int) and not isinstance(result, bool):
        return [result]
    if isinstance(result, list | tuple) and all(
            isinstance(item, str | int) and not isinstance(item, bool) for item in result):
        return list(result)
    return []
