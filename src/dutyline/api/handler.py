"""The request pipeline every operation runs through.

Order matters and is fixed: body size and type (cheap, before any lookup) -> app_key (401)
-> rate limit (429) -> permission (403) -> request schema (400) -> one transaction around the
handler and its audit row -> envelope. The permission is checked here first, before any work,
and again by the service itself (api/access.py), which is what a console or a link relies on;
the audit row takes the entries the services noted. All of it runs in one unit of work
(api/unit.py), the door every caller uses. Any failure becomes the error envelope; a failed
audited call is still recorded by the unit, in a transaction of its own, since its own
rolled back.

A sync read operation (api/operation.py) answers alike, in the same order, with its database
work as one unit (`Database.run_sync(write=False)`). A caller this process already knows is
limited, authorized and decoded first, then the unit runs the handler. An unknown key is
resolved inside the unit, before the handler, which runs only for an authorized caller and a
decoded request; the limit, the permission and the decoding are then answered in their usual
order from what the unit found, so a call refused by the limit may have read, never written."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.datastructures import Headers
from starlette.formparsers import MultiPartParser
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse

from dutyline.api import errors
from dutyline.api.auth import Caller
from dutyline.api.envelope import error_body, request_id_headers, success_body
from dutyline.api.i18n import negotiate
from dutyline.api.inputs import invalid_parameter
from dutyline.api.operation import (
    Context,
    Download,
    Handler,
    Operation,
    StreamedDownload,
    SyncHandler,
)
from dutyline.api.runtime import Runtime
from dutyline.api.unit import Call as UnitCall
from dutyline.api.unit import limit, unit
from dutyline.kit.ids import request_id as new_request_id

log = structlog.get_logger("dutyline.api")

Endpoint = Callable[[Request], Awaitable[Response]]

_JSON = "application/json"
# A JSON escape that could smuggle a NUL or a lone surrogate into a string; rare in real
# traffic, so the slow check below runs only when this matches.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def failure(runtime: Runtime, locale: str, rid: str,
            exc: errors.ApiError | None) -> tuple[int, str, bytes]:
    """(status, code, envelope) of a call that failed: with the ApiError it raised, or, for
    None, an unhandled error (500 InternalError, its text in the caller's language)."""
    if exc is None:
        code = "InternalError"
        message = runtime.translator.render(locale, errors.InternalError.default_message, {})
        return 500, code, error_body(rid, code, message)
    return exc.status, exc.code, error_body(
        rid, exc.code, runtime.translator.render(locale, exc.message, exc.fields))


class CallLog:
    """Built once per route: each call's metrics and its one structured access line. Shared
    by the operations and by alert ingestion, which answer alike."""

    def __init__(self, runtime: Runtime, path: str) -> None:
        self.path = path
        self.requests = runtime.metrics.requests
        self.latency = runtime.metrics.latency.labels(path)

    def record(self, rid: str, started: float, status: int, code: str, **who: Any) -> None:
        """`who` names the caller (account_id, person_id, a trigger's id) in the line."""
        elapsed = time.perf_counter() - started
        self.requests.labels(self.path, code).inc()
        self.latency.observe(elapsed)
        # Never the query string (it holds the app_key or integration key) or the body.
        log.info("request", request_id=rid, operation=self.path, status=status, code=code,
                 **who, ms=round(elapsed * 1000, 2))


async def rate_limit(runtime: Runtime, key: str, headers: dict[str, str]) -> None:
    """Count a call on `key`'s windows; the answer's rate-limit headers go into `headers`."""
    await limit(runtime, key, headers)


class Pipeline:
    """What every endpoint of the API does around its own steps: a request id, the caller's
    language, the envelope or the localized error, the metrics and the access line. The
    operations (OperationEndpoint: app_key) and alert ingestion (incident/ingest/endpoint.py:
    integration key) each supply `_run`, their authentication, limit, decoding and action;
    they may answer other than with the envelope (`_answer`) or note a failure (`_failed`)."""

    def __init__(self, runtime: Runtime, path: str) -> None:
        self.runtime = runtime
        self.path = path
        self.log = CallLog(runtime, path)

    async def __call__(self, request: Request) -> Response:
        started = time.perf_counter()
        call = Call(new_request_id(), negotiate(request.headers.get("accept-language")),
                    request.client.host if request.client else "")
        runtime = self.runtime
        headers = request_id_headers(call.rid)
        media_type = _JSON
        stream: AsyncIterator[bytes] | None = None
        try:
            result = await self._run(request, call, headers)
            status, code = 200, "OK"
            content, media_type, stream = await self._answer(request, call.rid, result,
                                                             headers)
        except errors.ApiError as exc:
            status, code, content = failure(runtime, call.locale, call.rid, exc)
            await self._failed(call, code)
        except ClientDisconnect:
            # The client hung up before its body was in: nothing ran and nobody reads an
            # answer, so it is neither an error nor a request served (no metric).
            log.info("client went away", request_id=call.rid, operation=self.path)
            return Response(status_code=400)
        except Exception:
            log.exception("unhandled error", request_id=call.rid, operation=self.path)
            status, code, content = failure(runtime, call.locale, call.rid, None)
            await self._failed(call, code)
        self.log.record(call.rid, started, status, code, **call.who)
        if stream is not None:
            return StreamingResponse(stream, status, headers, media_type=media_type)
        return Response(content, status, headers, media_type=media_type)

    async def _run(self, request: Request, call: Call, headers: dict[str, str]) -> Any:
        """Authenticate, limit, decode and act; the result goes into the envelope."""
        raise NotImplementedError

    async def _answer(self, request: Request, rid: str, result: Any, headers: dict[str, str],
                      ) -> tuple[bytes, str, AsyncIterator[bytes] | None]:
        """(content, media type, stream) of a success."""
        return success_body(rid, result), _JSON, None

    async def _failed(self, call: Call, code: str) -> None:
        """Called once for a call that failed, after its error envelope is made."""


class OperationEndpoint(Pipeline):
    """The endpoint of one operation: the steps of the module's docstring."""

    def __init__(self, op: Operation, runtime: Runtime) -> None:
        super().__init__(runtime, op.path)
        self.op = op
        self.decoder = msgspec.json.Decoder(op.request_type)
        self.empty_data: Any = None if op.empty == "null" else {}
        self.body_limit = op.max_body_bytes or runtime.settings.max_body_bytes

    def credential(self, request: Request) -> str:
        """The app_key, refused (401) before any connection is taken when it is missing or
        failed moments ago (platform/app_key/misses.py: only failures are remembered)."""
        app_key = request.query_params.get("app_key")
        if not app_key or len(app_key) > 256 or self.runtime.authenticator.recently_failed(
                app_key):
            raise errors.Unauthorized()
        return app_key

    async def authenticate(self, conn: AsyncConnection, app_key: str) -> Caller:
        """From this process's memory while the key's resolution still holds (platform/auth.py:
        every write that changes it moves the "auth" change signal), else one query on the
        request's own connection, inside its transaction."""
        caller = await self.runtime.authenticator.authenticate(conn, app_key)
        if caller is None:
            raise errors.Unauthorized()
        return caller

    async def admit(self, caller: Caller, headers: dict[str, str]) -> None:
        """The caller's rate limit (429), then the operation's permission (403)."""
        op = self.op
        if op.rate_scope != "none":
            await rate_limit(self.runtime, f"k:{caller.key_id}" if op.rate_scope == "app_key"
                             else f"a:{caller.account_id}", headers)
        if op.permissions and not caller.has_any(op.permissions):
            raise errors.AccessDenied()

    async def _run(self, request: Request, call: Call, headers: dict[str, str]) -> Any:
        """Authenticate, limit, check the permission, decode, and run the handler and its
        audit row in one unit of work (api/unit.py), which records a failure too."""
        op, runtime = self.op, self.runtime
        call.body = await read_body(request, self.body_limit)
        app_key = self.credential(request)
        if op.sync:
            return await self._run_sync(request, call, headers, app_key)
        # On SQLite a write transaction holds the process's one writer from its start: a write
        # authenticates, is limited, authorized and decoded in a read transaction first, and
        # takes the writer only to act (an unknown key never waits for it).
        write_first = op.write and not op.outbound and not runtime.db.is_sqlite
        row = OperationRow(runtime, op, call)
        async with unit(runtime, None, write=write_first, row=row,
                        call=UnitCall(call.rid, call.client_ip)) as work:
            caller = await self.authenticate(work.conn, app_key)
            call.identify(caller)
            await self.admit(caller, headers)
            raw: bytes | None = None
            if op.raw_body and _content_type(request) not in ("", _JSON):
                req, raw = await _decode_raw(op, request, call.body)
            else:
                req = _decode(op, self.decoder, request, call.body)
            if op.write and not op.outbound:
                await work.begin_writes()  # no-op where it writes from the start
            ctx = Context(work, caller, runtime, call.rid, call.locale, call.client_ip,
                          raw_body=raw)
            row.ctx = ctx
            handler: Handler = op.handler  # type: ignore[assignment]
            return await handler(ctx, req)

    async def _run_sync(self, request: Request, call: Call, headers: dict[str, str],
                        app_key: str) -> Any:
        """A sync read operation: its database work (and the key's lookup, when this process
        does not know the key) as one unit on the database (the module's docstring)."""
        op, runtime = self.op, self.runtime
        handler: SyncHandler = op.handler  # type: ignore[assignment]
        caller = runtime.authenticator.known(app_key)
        if caller is not None:
            call.identify(caller)
            await self.admit(caller, headers)
            req = _decode(op, self.decoder, request, call.body)
            ctx = Context(None, caller, runtime, call.rid, call.locale, call.client_ip)
            return await runtime.db.run_sync(lambda conn: handler(conn, ctx, req), write=False)
        refused: errors.ApiError | None = None
        try:
            req = _decode(op, self.decoder, request, call.body)
        except errors.ApiError as exc:
            req, refused = None, exc
        pending = runtime.authenticator.pending(app_key)

        def unit(conn: Connection) -> tuple[Caller | None, Any, errors.ApiError | None]:
            found = pending.resolve(conn)
            if found is None or refused is not None or (
                    op.permissions and not found.has_any(op.permissions)):
                return found, None, None
            ctx = Context(None, found, runtime, call.rid, call.locale, call.client_ip)
            try:
                return found, handler(conn, ctx, req), None
            except errors.ApiError as exc:  # answered after the limit and the permission
                return found, None, exc

        found, result, failed = await runtime.db.run_sync(unit, write=False)
        pending.settle(found)
        if found is None:
            raise errors.Unauthorized()
        call.identify(found)
        await self.admit(found, headers)
        if refused is not None:
            raise refused
        if failed is not None:
            raise failed
        return result

    async def _answer(self, request: Request, rid: str, result: Any, headers: dict[str, str],
                      ) -> tuple[bytes, str, AsyncIterator[bytes] | None]:
        """(content, media type, stream) of a success: the envelope, or a file."""
        if isinstance(result, StreamedDownload):
            if _wants_json(request):
                text = b"".join([chunk async for chunk in result.chunks()]).decode()
                return success_body(rid, text), _JSON, None
            headers["Content-Disposition"] = _attachment(result.filename)
            return b"", result.media_type, _logged(result.chunks(), rid, self.op.path)
        if isinstance(result, Download):
            if not _wants_json(request):
                headers["Content-Disposition"] = _attachment(result.filename)
                return result.content.encode(), result.media_type, None
            result = result.content
        return success_body(rid, self.empty_data if result is None else result), _JSON, None


@dataclass(slots=True)
class Call:
    """What one call has learnt so far, for its answer, its audit row and its access line."""

    rid: str
    locale: str
    client_ip: str
    caller: Caller | None = None
    body: bytes = b""
    # Who the access line names: the app key's account and person, or an integration's
    # account (a push); None until the credential is known.
    who: dict[str, Any] = field(default_factory=lambda: {"account_id": None,
                                                         "person_id": None})

    def identify(self, caller: Caller) -> None:
        self.caller = caller
        self.who = {"account_id": caller.account_id, "person_id": caller.person_id}


def make_endpoint(op: Operation, runtime: Runtime) -> Endpoint:
    # A bound method, not the instance: Starlette treats any other callable as a raw ASGI app.
    return OperationEndpoint(op, runtime).__call__


async def _logged(chunks: AsyncIterator[bytes], rid: str, path: str) -> AsyncIterator[bytes]:
    """A streamed answer that fails half-way can only stop: say so in the log."""
    try:
        async for chunk in chunks:
            yield chunk
    except Exception:
        log.exception("streamed response failed", request_id=rid, operation=path)
        raise


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _decode_raw(op: Operation, request: Request, body: bytes) -> tuple[Any, bytes]:
    """A file sent as the body itself (any non-JSON type) or as the `file` part of a
    multipart form; the other fields from the query string and the form's text fields."""
    params = {k: v for k, v in request.query_params.items() if k != "app_key"}
    data = body
    if _content_type(request) == "multipart/form-data":

        async def once() -> AsyncGenerator[bytes, None]:
            yield body

        try:
            form = await MultiPartParser(Headers(raw=request.headers.raw), once(),
                                         max_files=1, max_fields=20).parse()
        except Exception:
            raise errors.invalid("file", "is not a readable multipart/form-data body"
                                 ) from None
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise errors.invalid("file", "is required (a file part named file)")
        data = await upload.read()
        await form.close()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    try:
        return msgspec.convert(params, op.request_type, strict=False), data
    except msgspec.ValidationError as exc:
        raise invalid_parameter(str(exc)) from None


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return any(part.split(";", 1)[0].strip().lower() == _JSON for part in accept.split(","))


def _attachment(filename: str) -> str:
    """A Content-Disposition naming the file, with only characters safe in a quoted header
    value (others become '_')."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._- ") else "_"
                   for ch in filename) or "export"
    return f'attachment; filename="{safe}"'


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise errors.EntityTooLarge(limit=limit)
        except ValueError:
            raise errors.BadRequest("Invalid Content-Length header") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise errors.EntityTooLarge(limit=limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(
    op: Operation, decoder: msgspec.json.Decoder[Any], request: Request, body: bytes
) -> Any:
    if request.method == "GET":
        params = {k: v for k, v in request.query_params.items() if k != "app_key"}
        for name, value in params.items():  # the house rule of a JSON body's strings
            if "\x00" in value or not _is_utf8_encodable(value):
                raise errors.invalid(name, "must not contain NUL characters or unpaired "
                                           "surrogates")
        try:
            return msgspec.convert(params, op.request_type, strict=False)
        except msgspec.ValidationError as exc:
            raise invalid_parameter(str(exc)) from None
    return decode_json_body(decoder, request, body)


def decode_json_body(decoder: msgspec.json.Decoder[Any], request: Request, body: bytes) -> Any:
    """A POST body under the house rules (also used by routes outside the operation layer,
    like alert ingestion): JSON content type, 400 naming the field, no unstorable strings."""
    if not body.strip():
        body = b"{}"
    else:
        content_type = request.headers.get("content-type", "")
        if content_type.split(";", 1)[0].strip().lower() != _JSON:
            raise errors.InvalidContentType()
    try:
        value = decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise invalid_parameter(str(exc)) from None
    except msgspec.DecodeError:
        if _json_but_not_utf8(body):
            raise errors.invalid("body", "is not valid UTF-8") from None
        raise errors.InvalidContentType("The request body is not valid JSON") from None
    except UnicodeDecodeError:
        # msgspec before 0.23 lets this escape on bytes that are not UTF-8 in a string.
        raise errors.invalid("body", "is not valid UTF-8") from None
    except RecursionError:
        raise errors.invalid("body", "nests objects or arrays too deeply") from None
    if not body.isascii():
        # JSON text is UTF-8 (RFC 8259); msgspec checks only the strings it reads, so a
        # field it skips could carry anything. One C pass, only for non-ASCII bodies.
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise errors.invalid("body", "is not valid UTF-8") from None
    if _SUSPECT_ESCAPE.search(body):
        _reject_unstorable_strings(body)
    return value


def _json_but_not_utf8(body: bytes) -> bool:
    """A body msgspec refused that would be JSON if its bytes were UTF-8: msgspec 0.23 and
    later report bad bytes inside a string as a decode error, which is a wrong parameter
    (400 naming the body), not a body of another type. Only on the error path."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        try:
            msgspec.json.decode(body.decode("utf-8", "replace").encode())
        except (msgspec.DecodeError, RecursionError):
            return False
        return True
    return False


def _reject_unstorable_strings(body: bytes) -> None:
    """PostgreSQL text cannot hold NUL, and UTF-8 cannot hold a lone surrogate: refuse both
    as a 400 instead of failing at the database with a 500."""

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            if "\x00" in value or not _is_utf8_encodable(value):
                raise errors.invalid(
                    path or "body", "must not contain NUL characters or unpaired surrogates"
                )
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k, path)
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(msgspec.json.decode(body), "")


def _is_utf8_encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(slots=True)
class OperationRow:
    """The operation's own audit row (api/unit.Row): one per audited call, named after the
    operation, with its redacted body, the targets the handler added and what its services
    noted; a failed audited call's row has the error's code as its outcome."""

    runtime: Runtime
    op: Operation
    call: Call
    ctx: Context | None = None

    def wanted(self) -> bool:
        ctx = self.ctx
        return ctx is not None and (self.op.audited or ctx.has_audit_entries())

    async def ok(self, conn: AsyncConnection) -> None:
        ctx, op, call = self.ctx, self.op, self.call
        assert ctx is not None
        entries = ctx.take_audit_entries()
        await self.runtime.audit.record(
            conn, caller=ctx.caller, operation=op.operation_name, request_id=call.rid,
            client_ip=call.client_ip, body=call.body, request_type=op.request_type,
            targets=ctx.audit_targets, outcome="OK", is_write=op.write or bool(entries),
            is_dangerous=op.dangerous, entries=entries)

    def records_failures(self) -> bool:
        return self.op.audited and self.call.caller is not None

    async def failed(self, conn: AsyncConnection, outcome: str) -> None:
        op, call = self.op, self.call
        assert call.caller is not None
        await self.runtime.audit.record(
            conn, caller=call.caller, operation=op.operation_name, request_id=call.rid,
            client_ip=call.client_ip, body=call.body, request_type=op.request_type,
            targets=[], outcome=outcome, is_write=op.write, is_dangerous=op.dangerous)
