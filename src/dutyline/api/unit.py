"""The door: one unit of work for every caller (rule 1 of the house).

Every way in, an API operation, a console page, a signed link, a job (and a dead job's hook)
and a `dutyline` command, runs its services inside `unit(...)`:

    async with unit(runtime, system_actor(account_id, runtime.clock), write=True) as u:
        await team_service.upsert_team(u.conn, u.actor, team=changes)

which, in this order,
- applies the caller's rate limit (`limit=`: a key of the process's limiter; refused with
  RequestTooFrequently before anything else runs),
- opens the transaction (or joins the one given as `conn=`: a job's, which its worker owns),
- runs the body, whose services check their permissions and note their audit entries on the
  actors the unit holds (api/access.py),
- on success flushes those entries into the audit log inside the transaction, then commits,
- on failure rolls back and, for a write that was refused or failed, records one row with the
  outcome (the error's code) in a transaction of its own. A refusal by the rate limit is not
  recorded, as the operation layer never recorded one.

The unit holds the actor it is given and every actor made by this module while it is open
(`system_actor` inside a job's unit, for instance): the door is the only place that builds
one (tests/arch/test_service_access.py), and an actor it built writes only while a unit
holds it, so no audit entry is noted where nobody flushes it.

The operation layer's own audit row (named after the operation, with the redacted JSON body)
is written through `row=` (api/handler.py); every other caller's row is named after the first
write its services did, with the body it passes as `Call.body`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.actor import Actor, AuditEntry, Credential, SyncTeamIdsLoader
from dutyline.api.transaction import RequestTransaction

if TYPE_CHECKING:
    from dutyline.api.auth import Caller
    from dutyline.api.ratelimit import RateLimiter
    from dutyline.api.runtime import AuditSink
    from dutyline.db.engine import Database
    from dutyline.kit.clock import Clock

log = structlog.get_logger("dutyline.api")

# The innermost unit open in this task (actors made meanwhile join it).
_CURRENT: ContextVar[Unit | None] = ContextVar("dutyline_unit", default=None)


class Ground(Protocol):
    """What a unit needs of the process: api/runtime.Runtime has it all."""

    @property
    def db(self) -> Database: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def audit(self) -> AuditSink: ...
    @property
    def limiter(self) -> RateLimiter: ...


@dataclass(frozen=True, slots=True)
class Call:
    """What the audit row says of the call beyond its actor: the request's id, the client's
    address and the body (already stripped of secrets)."""

    request_id: str = ""
    client_ip: str = ""
    body: str = ""


class Row(Protocol):
    """A caller's own audit row, instead of one named after the first write: the operation
    layer's (api/handler.py), which takes its actor's entries itself."""

    def wanted(self) -> bool:
        """Whether a successful unit writes the row."""
        ...

    async def ok(self, conn: AsyncConnection) -> None: ...

    def records_failures(self) -> bool:
        """Whether a failed unit writes the row (`failed`)."""
        ...

    async def failed(self, conn: AsyncConnection, outcome: str) -> None: ...


# --- the actors: made here only -----------------------------------------------------------


def _owned(actor: Actor) -> Actor:
    actor.bound = True
    current = _CURRENT.get()
    if current is not None:
        current.hold(actor)
    return actor


def system_actor(account_id: int, clock: Clock) -> Actor:
    """The service itself acting inside an account (engines, jobs, the CLI, reads a page
    does for the system); held by the unit open where it is made."""
    return _owned(Actor.system(account_id, clock))


def person_actor(account_id: int, person_id: int, clock: Clock, *, person_name: str = "",
                 credential: Credential = "system", is_admin: bool = False,
                 permissions: frozenset[str] = frozenset(),
                 team_ids: Callable[[], Awaitable[frozenset[int]]] | None = None,
                 team_ids_sync: SyncTeamIdsLoader | None = None) -> Actor:
    """One person acting outside a session or a key: a signed link (with `is_admin`, the
    link being the authorization: dispatch/system.py), an automation reading for its owner
    (with the teams it reads as)."""
    actor = Actor(account_id=account_id, person_id=person_id, clock=clock,
                  is_admin=is_admin, permissions=permissions, person_name=person_name,
                  credential=credential)
    return _owned(_with_teams(actor, team_ids, team_ids_sync))


def _with_teams(actor: Actor, team_ids: Callable[[], Awaitable[frozenset[int]]] | None,
                team_ids_sync: SyncTeamIdsLoader | None) -> Actor:
    if team_ids is not None:
        actor._load_team_ids = team_ids
    if team_ids_sync is not None:
        actor._load_team_ids_sync = team_ids_sync
    return actor


def caller_actor(caller: Caller, clock: Clock, credential: Credential, *,
                 team_ids: Callable[[], Awaitable[frozenset[int]]] | None = None,
                 team_ids_sync: SyncTeamIdsLoader | None = None) -> Actor:
    """The person an app key or a console session authenticated, with their roles."""
    actor = Actor(account_id=caller.account_id, person_id=caller.person_id, clock=clock,
                  is_admin=caller.is_admin, permissions=caller.permissions,
                  person_name=caller.person_name, credential=credential,
                  key_suffix=caller.key_suffix if credential == "app_key" else "")
    return _owned(_with_teams(actor, team_ids, team_ids_sync))


# --- the unit -----------------------------------------------------------------------------


async def limit(ground: Ground, key: str, headers: dict[str, str] | None = None) -> None:
    """Count a call on `key`'s windows (the rate-limit headers go into `headers`); refused
    with RequestTooFrequently (429) when a window is full."""
    decision = await ground.limiter.hit(key)
    answer = decision.headers()
    if headers is not None:
        headers.update(answer)
    if not decision.allowed:
        raise errors.RequestTooFrequently(retry_after=answer["Retry-After"])


class Unit:
    """One unit of work (the module's docstring); `unit(...)` makes it."""

    def __init__(self, ground: Ground, actor: Actor | None, *, write: bool,
                 call: Call | None = None, row: Row | None = None, limit: str | None = None,
                 headers: dict[str, str] | None = None,
                 conn: AsyncConnection | None = None) -> None:
        self.ground = ground
        outer = _CURRENT.get()
        # A unit opened inside another (a job's savepoint) tells the log what the outer did.
        self.call: Call = call or (outer.call if outer is not None else Call())
        self._write = write
        self._row = row
        self._limit = limit
        self._headers = headers
        self._joined = conn
        self._transaction: RequestTransaction | None = None
        self._actors: list[Actor] = []
        self._first = actor
        self._token: Any = None

    # --- who acts ---

    @property
    def actor(self) -> Actor:
        """The actor the unit was opened for (or the first it held)."""
        assert self._actors, "a unit opened without an actor holds none yet"
        return self._actors[0]

    def hold(self, actor: Actor) -> Actor:
        """Make `actor`'s writes part of this unit (its entries are flushed on commit)."""
        if all(a is not actor for a in self._actors):
            actor.units += 1
            self._actors.append(actor)
        return actor

    def system(self, account_id: int) -> Actor:
        """The service acting inside another account in this unit (a job's)."""
        return self.hold(system_actor(account_id, self.ground.clock))

    # --- the transaction ---

    @property
    def conn(self) -> AsyncConnection:
        """The unit's connection, inside its transaction (never commit it)."""
        if self._joined is not None:
            return self._joined
        assert self._transaction is not None, "the unit is not open"
        return self._transaction.conn

    async def begin_writes(self) -> None:
        """Commit what was read and go on writing (api/transaction.py); idempotent."""
        if self._transaction is not None:
            await self._transaction.begin_writes()

    async def limit(self, key: str, headers: dict[str, str] | None = None) -> None:
        """The caller's rate limit, when it is known only once the unit is open (an app
        key is authenticated inside it)."""
        await limit(self.ground, key, headers)

    async def __aenter__(self) -> Unit:
        if self._limit is not None:
            await limit(self.ground, self._limit, self._headers)
        if self._joined is None:
            self._transaction = RequestTransaction(self.ground.db, write=self._write)
            await self._transaction.__aenter__()
        self._token = _CURRENT.set(self)
        if self._first is not None:
            self.hold(self._first)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        _CURRENT.reset(self._token)
        failed = exc
        if failed is None:
            try:
                await self._flush()
            except BaseException as flush_failed:
                failed = flush_failed
        try:
            if self._transaction is not None:
                await self._transaction.__aexit__(
                    type(failed) if failed is not None else None, failed,
                    failed.__traceback__ if failed is not None else None)
        except BaseException as closing_failed:
            if failed is None:
                failed = closing_failed
        finally:
            attempted = self._release()
        if failed is not None and self._joined is None and isinstance(failed, Exception):
            await self._record_failure(failed, attempted)
        if failed is not None and failed is not exc:
            raise failed

    async def _flush(self) -> None:
        row = self._row
        wanted = row is not None and row.wanted()
        if not wanted and not any(a.audit_entries for a in self._actors):
            return
        await self.begin_writes()  # a read unit whose services wrote: as the API's outbound
        if row is not None and wanted:
            await row.ok(self.conn)
        call = self.call
        for actor in self._actors:
            await self.ground.audit.flush(self.conn, actor, request_id=call.request_id,
                                          client_ip=call.client_ip, body=call.body)

    def _release(self) -> tuple[Actor, AuditEntry] | None:
        """Let the actors go: what they noted and did not flush is dropped (rolled back);
        returns the write to record as failed, with its actor, if any."""
        attempted: tuple[Actor, AuditEntry] | None = None
        for actor in self._actors:
            actor.units -= 1
            rolled_back = actor.take_audit_entries()
            failed, actor.failed_write = actor.failed_write, None
            entry = failed or (rolled_back[0] if rolled_back else None)
            if attempted is None and entry is not None:
                attempted = (actor, entry)
        self._actors = []
        return attempted

    async def _record_failure(self, exc: Exception,
                              attempted: tuple[Actor, AuditEntry] | None) -> None:
        outcome = exc.code if isinstance(exc, errors.ApiError) else errors.InternalError.code
        if outcome == errors.RequestTooFrequently.code:
            return
        row = self._row
        wanted = row.records_failures() if row is not None else attempted is not None
        if not wanted:
            return
        try:
            async with self.ground.db.transaction(write=True) as conn:
                if row is not None:
                    await row.failed(conn, outcome)
                    return
                assert attempted is not None
                actor, entry = attempted
                await self.ground.audit.failed(
                    conn, actor, entry=entry, outcome=outcome,
                    request_id=self.call.request_id, client_ip=self.call.client_ip,
                    body=self.call.body)
        except Exception:
            log.exception("could not record a failed write in the audit log",
                          request_id=self.call.request_id)


def unit(ground: Ground, actor: Actor | None, *, write: bool, call: Call | None = None,
         row: Row | None = None, limit: str | None = None,
         headers: dict[str, str] | None = None, conn: AsyncConnection | None = None) -> Unit:
    """One unit of work for `actor` (the module's docstring). `write=False` opens a read
    transaction, which becomes a write one only to flush what its services noted; `conn`
    joins a transaction the caller owns (a job's) instead of opening one."""
    return Unit(ground, actor, write=write, call=call, row=row, limit=limit,
                headers=headers, conn=conn)
