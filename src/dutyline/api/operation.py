"""Operations: the one shape every endpoint has (POST, app_key, JSON in, envelope out).

A domain declares its operations on a `Router`; the app turns each into a Starlette route
through api/handler.py. The same declarations feed the OpenAPI document.

A read operation is written as a plain function of a sync connection, the way to write a
fast one:

    @router.post("/team/list")
    def team_list(conn: Connection, ctx: Context, req: TeamListRequest) -> TeamListResponse:
        total, items = service.list_teams_sync(conn, ctx.actor, ...)

Its whole database work (and the caller's authentication, when the key is not already known
to this process) runs as one unit through `Database.run_sync(write=False)`: whole on a SQLite
read thread, or in one connection checkout on PostgreSQL, instead of a thread hop or a round
trip through the async adapters per statement. Its services are sync functions of the same
`(conn, actor, *, args)` shape, with statements built once at import and rows read straight
into the response structs; the console calls them through `run_sync` too, and their async
forms wrap them with `AsyncConnection.run_sync`. Such an operation reads only: no write, no
audit row of its own, no outbound call, no file answer."""

from __future__ import annotations

import inspect
import typing
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from dutyline.api.access import access_of
from dutyline.api.actor import Actor, AuditEntry
from dutyline.api.unit import caller_actor

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncConnection

    from dutyline.api.auth import Caller
    from dutyline.api.runtime import Runtime
    from dutyline.api.unit import Unit

RateScope = Literal["account", "app_key", "none"]


class Empty(msgspec.Struct):
    """A request with no fields."""


@dataclass(slots=True)
class Context:
    """What a handler gets: its unit of work (api/unit.py), who calls, and the process's
    runtime. A sync read handler has no unit here: it gets its connection as its first
    argument."""

    transaction: Unit | None
    caller: Caller
    runtime: Runtime
    request_id: str
    locale: str
    client_ip: str = ""
    # Ids the operation touched; handlers add to it and the audit log records it.
    audit_targets: list[Any] = field(default_factory=list)
    _team_ids: frozenset[int] | None = None
    _actor: Actor | None = None
    # For `raw_body=True` operations sent a non-JSON body (a CSV upload): the file's bytes.
    raw_body: bytes | None = None

    @property
    def conn(self) -> AsyncConnection:
        """The request's connection, inside its transaction (never commit it)."""
        assert self.transaction is not None, "a sync read handler is given its connection"
        return self.transaction.conn

    async def begin_writes(self) -> None:
        """For `outbound=True` operations: end the read phase, start writing (see
        api/transaction.py). Re-check what was read before, it may have changed."""
        assert self.transaction is not None, "a sync read handler never writes"
        await self.transaction.begin_writes()

    async def caller_team_ids(self) -> frozenset[int]:
        """The caller's teams, loaded once per request and only when an operation asks."""
        if self._team_ids is None:
            self._team_ids = await self.runtime.authenticator.team_ids(self.conn, self.caller)
        return self._team_ids

    def _caller_team_ids_sync(self, conn: Connection) -> frozenset[int]:
        if self._team_ids is None:
            self._team_ids = self.runtime.authenticator.team_ids_sync(conn, self.caller)
        return self._team_ids

    @property
    def actor(self) -> Actor:
        """The caller as services see it (api/actor.py); built once per request, by the
        door, inside the request's unit of work (which flushes what its services note)."""
        if self._actor is None:
            self._actor = caller_actor(self.caller, self.runtime.clock, "app_key",
                                       team_ids=self.caller_team_ids,
                                       team_ids_sync=self._caller_team_ids_sync)
        return self._actor

    def has_audit_entries(self) -> bool:
        return self._actor is not None and bool(self._actor.audit_entries)

    def take_audit_entries(self) -> list[AuditEntry]:
        """What the call's services noted for the audit log (none if no service ran)."""
        return [] if self._actor is None else self._actor.take_audit_entries()

    @property
    def now(self) -> float:
        return self.runtime.clock.now()

    @property
    def now_s(self) -> int:
        return int(self.runtime.clock.now())

    @property
    def now_ms(self) -> int:
        return int(self.runtime.clock.now() * 1000)


@dataclass(frozen=True, slots=True)
class Download:
    """A file answer (CSV exports). Sent as the file itself, with `Content-Disposition:
    attachment`; a client that asks for JSON (`Accept: application/json`) gets the envelope
    with the text in `data` instead, as every file export and download does."""

    filename: str
    content: str
    media_type: str = "text/csv; charset=utf-8"


@dataclass(frozen=True, slots=True)
class StreamedDownload:
    """A file answer too large to build in memory: `chunks()` yields it piece by piece once
    the request's transaction has committed (it opens its own reads). As the file itself, it
    is streamed; a client asking for JSON gets the envelope with the whole text in `data`."""

    filename: str
    chunks: Callable[[], AsyncIterator[bytes]]
    media_type: str = "text/csv; charset=utf-8"


Handler = Callable[[Context, Any], Awaitable[Any]]
# A read operation's whole database work as one sync unit: (conn, ctx, request) -> response.
SyncHandler = Callable[["Connection", Context, Any], Any]
H = TypeVar("H", bound=Handler | SyncHandler)


@dataclass(frozen=True)
class Operation:
    path: str
    handler: Handler | SyncHandler
    request_type: type[Any]
    response_type: Any
    # Any one of these permission names admits the caller; empty: any valid key.
    permissions: tuple[str, ...] = ()
    rate_scope: RateScope = "account"
    write: bool = False
    # Writes are audited by default; reads only when they say so.
    audited: bool = False
    dangerous: bool = False
    methods: tuple[str, ...] = ("POST",)
    summary: str = ""
    tag: str = ""
    # What a success with no payload answers: {} for most, null for /safari/* toggles.
    empty: Literal["object", "null"] = "object"
    # A write that first talks to a remote server: it runs in a read transaction until the
    # handler calls ctx.begin_writes() (api/transaction.py).
    outbound: bool = False
    # Body limit of this operation (0: the server's `max_body_bytes`).
    max_body_bytes: int = 0
    # Also accept a non-JSON body (text/csv, multipart/form-data with a `file` part): the
    # request's fields then come from the query string (and form fields) and the bytes are
    # handed to the handler as `ctx.raw_body`.
    raw_body: bool = False
    # Answers a file (Download/StreamedDownload): text/csv, or the envelope with its text.
    download: bool = False
    # A sync read handler `(conn, ctx, req)`, run as one unit (the module's docstring).
    sync: bool = False

    @property
    def operation_name(self) -> str:
        """A stable audit name: `/team/upsert` -> `team.upsert`."""
        return self.path.strip("/").replace("/", ".")


_FROM_ANNOTATIONS: Any = object()


def _annotated_types(handler: Handler | SyncHandler) -> tuple[type[Any], Any]:
    """The request and response types an endpoint states in its signature, so that a
    declaration names them once: `async def info(ctx, req: XRequest) -> XItem`. No request
    parameter: `Empty`; `-> None`: no payload; `-> Download` (or `StreamedDownload`): the file,
    whose JSON form is
    its text. A handler built by a factory (`-> Any`) names its response in the decorator.
    A sync read handler takes its connection first: `def list(conn, ctx, req: XRequest)`."""
    hints = typing.get_type_hints(handler)
    names = list(inspect.signature(handler).parameters)
    at = 2 if _is_sync(handler) else 1
    request = hints[names[at]] if len(names) > at else Empty
    response = hints.get("return")
    if response is type(None):
        response = None
    elif response is Download or response is StreamedDownload:
        response = str
    return request, response


def _answers_a_file(handler: Handler | SyncHandler) -> bool:
    return typing.get_type_hints(handler).get("return") in (Download, StreamedDownload)


def _is_sync(handler: Handler | SyncHandler) -> bool:
    return not inspect.iscoroutinefunction(handler)


class Router:
    """Collects one domain's operations."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.operations: list[Operation] = []

    def post(
        self,
        path: str,
        *,
        request: type[Any] | None = None,
        response: Any = _FROM_ANNOTATIONS,
        service: Any = None,
        rate_scope: RateScope = "account",
        write: bool = False,
        also_get: bool = False,
        summary: str = "",
        empty: Literal["object", "null"] = "object",
        outbound: bool = False,
        max_body_bytes: int = 0,
        raw_body: bool = False,
    ) -> Callable[[H], H]:
        # Permission and audit are the service's (api/access.py), declared there once: the
        # operation refuses a caller without the service's permission before decoding, and
        # audits as the service says (a write, an audited read, a dangerous one).
        access = access_of(service) if service is not None else None
        if service is not None and access is None:
            raise TypeError(f"{path}: service= names no guarded service (api/access.py)")
        permissions = access.permissions if access is not None else ()
        dangerous = access.dangerous if access is not None else False
        audited = write or (access is not None and access.audited)

        def register(handler: H) -> H:
            annotated_request, annotated_response = _annotated_types(handler)
            sync = _is_sync(handler)
            if sync and (write or audited or outbound or raw_body or _answers_a_file(handler)):
                raise TypeError(f"{path}: a sync handler is a plain read (no write, audit, "
                                "outbound call, raw body or file)")
            self.operations.append(
                Operation(
                    path=path,
                    handler=handler,
                    request_type=request or annotated_request,
                    response_type=(annotated_response if response is _FROM_ANNOTATIONS
                                   else response),
                    permissions=permissions,
                    rate_scope=rate_scope,
                    write=write,
                    audited=audited,
                    dangerous=dangerous,
                    methods=("POST", "GET") if also_get else ("POST",),
                    summary=summary or (handler.__doc__ or "").strip().split("\n")[0],
                    tag=self.tag,
                    empty=empty,
                    outbound=outbound,
                    max_body_bytes=max_body_bytes,
                    raw_body=raw_body,
                    download=_answers_a_file(handler),
                    sync=sync,
                )
            )
            return handler

        return register
