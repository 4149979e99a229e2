"""Sync read operations (api/operation.py): their database work runs as one unit through
`Database.run_sync`, and they answer exactly as an async operation does, in the same order
(401, 429, 403, 400, then the handler's own error), whether the key is already known to the
process or is looked up inside the unit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy import Connection, select
from starlette.applications import Starlette
from starlette.routing import Route

from dutyline.api import errors
from dutyline.api.access import access_of, reads_sync
from dutyline.api.actor import Actor
from dutyline.api.handler import make_endpoint
from dutyline.api.operation import Context, Router
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.ratelimit import MemoryRateLimiter, Window
from dutyline.db.tables.platform import member
from dutyline.kit.clock import FixedClock
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.signals import eventually, watching

pytestmark = pytest.mark.anyio


class Ask(msgspec.Struct, kw_only=True):
    n: int = 0


class Answer(msgspec.Struct, kw_only=True):
    account_id: int
    names: list[str]
    n: int


router = Router("t")
# What the handlers were called with, to prove which calls reached them.
reached: list[int] = []


@reads_sync(ACCOUNT_MANAGE)
def _guard(conn: Connection, actor: Actor) -> None:
    """The service whose permission the operation takes (api/access.py)."""


@router.post("/t/names", service=_guard)
def names(conn: Connection, ctx: Context, req: Ask) -> Answer:
    reached.append(req.n)
    if req.n < 0:
        raise errors.not_found("thing", req.n)
    rows = conn.execute(select(member.c.member_name).where(
        member.c.account_id == ctx.actor.account_id).order_by(member.c.member_name))
    return Answer(account_id=ctx.actor.account_id, names=list(rows.scalars()), n=req.n)


@pytest.fixture
async def tapi(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    """The test operation served with the app's runtime, through the operation layer."""
    [op] = router.operations
    app = Starlette(routes=[Route(op.path, make_endpoint(op, api.runtime), methods=["POST"])])
    reached.clear()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://t.test") as client:
        yield client


async def _call(client: httpx.AsyncClient, key: str, body: Any) -> tuple[int, Any]:
    response = await client.post("/t/names", params={"app_key": key}, json=body)
    assert response.headers["Service-Request-Id"]
    return response.status_code, response.json()


def test_a_sync_handler_is_marked_and_may_only_read() -> None:
    [op] = router.operations
    assert op.sync and (op.request_type, op.response_type) == (Ask, Answer)
    other = Router("t")
    with pytest.raises(TypeError, match="sync handler"):
        other.post("/t/write", write=True)(names)


@pytest.mark.parametrize("known", [False, True], ids=["looked-up", "known"])
async def test_a_sync_read_answers_in_the_usual_order(
    api: Api, tapi: httpx.AsyncClient, owner: Person, known: bool
) -> None:
    runtime = api.runtime
    plain = await new_member(api, owner, name="Plain")
    if known:
        await watching(runtime)
        for key in (owner.key, plain.key):

            async def resolved(key: str = key) -> bool:
                # The writes just made move the "auth" signal: a resolution made under an
                # older version is not kept, so call until one holds.
                await _call(tapi, key, {"n": 0})
                return runtime.authenticator.known(key) is not None

            await eventually(resolved, what="the key resolved from memory")
    else:
        assert runtime.authenticator.known(owner.key) is None
    reached.clear()

    status, body = await _call(tapi, "dk_no-such-key", {"n": 1})
    assert (status, body["error"]["code"]) == (401, "Unauthorized")
    # Without the permission: 403, even for a body that would not decode.
    for payload in ({"n": 1}, {"n": "x"}):
        status, body = await _call(tapi, plain.key, payload)
        assert (status, body["error"]["code"]) == (403, "AccessDenied")
    status, body = await _call(tapi, owner.key, {"n": "x"})
    assert (status, body["error"]["code"], body["error"].get("message", "") != "") == (
        400, "InvalidParameter", True)
    assert reached == []  # none of these ran the handler
    status, body = await _call(tapi, owner.key, {"n": -1})
    assert (status, body["error"]["code"]) == (400, "ResourceNotFound")
    status, body = await _call(tapi, owner.key, {"n": 7})
    assert status == 200
    assert body["data"] == {"account_id": owner.account_id, "names": ["Acme Owner", "Plain"],
                            "n": 7}
    assert reached == [-1, 7]


async def test_a_refused_call_over_the_limit_answers_429_before_the_permission(
    api: Api, tapi: httpx.AsyncClient, owner: Person
) -> None:
    runtime = api.runtime
    plain = await new_member(api, owner, name="Plain")
    runtime.limiter = MemoryRateLimiter((Window(1, 60.0),), runtime.clock)
    status, _ = await _call(tapi, owner.key, {"n": 1})
    assert status == 200
    for key in (owner.key, plain.key):  # one account, one window: both over the limit
        status, body = await _call(tapi, key, {"n": 2})
        assert (status, body["error"]["code"]) == (429, "RequestTooFrequently")


@pytest.mark.parametrize("path", ["/team/list", "/member/list", "/person/infos"])
async def test_a_read_operation_is_one_unit_of_database_work(
    api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    db = api.runtime.db
    units: list[bool] = []
    transactions: list[bool] = []
    real_run_sync, real_transaction = db.run_sync, db.transaction

    async def run_sync(fn: Any, *, write: bool = True) -> Any:
        units.append(write)
        return await real_run_sync(fn, write=write)

    def transaction(*, write: bool = True) -> Any:
        transactions.append(write)
        return real_transaction(write=write)

    monkeypatch.setattr(db, "run_sync", run_sync)
    monkeypatch.setattr(db, "transaction", transaction)
    body = {"person_ids": [owner.person_id]} if path == "/person/infos" else {}
    # A key this process has not resolved yet: looked up inside the same unit.
    assert api.runtime.authenticator.known(owner.key) is None
    reply = await api.call(path, body, key=owner.key)
    assert reply.status == 200, reply.body
    assert units == [False]
    # On SQLite the unit runs whole on a database thread; on PostgreSQL it is one connection
    # checkout, in autocommit: no request transaction around it either way.
    assert transactions == []


def test_a_sync_read_service_refuses_an_actor_without_its_permission() -> None:
    @reads_sync(ACCOUNT_MANAGE)
    def look(conn: Any, actor: Actor) -> str:
        return "seen"

    clock = FixedClock(1_700_000_000)
    with pytest.raises(errors.AccessDenied):
        look(None, Actor(account_id=1, person_id=7, clock=clock, credential="session"))
    holder = Actor(account_id=1, person_id=7, clock=clock, credential="session",
                   permissions=frozenset({ACCOUNT_MANAGE}))
    assert look(None, holder) == "seen"
    spec = access_of(look)
    assert spec is not None and spec.permissions == (ACCOUNT_MANAGE,)
