"""Every operation answers with the envelope and a matching Service-Request-Id header."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from dutyline.api.envelope import REQUEST_ID_HEADER
from dutyline.api.errors import STATUS_BY_CODE
from dutyline.api.operation import Operation
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


def assert_envelope(response: httpx.Response, *, status: int | None = None,
                    code: str | None = None) -> dict[str, Any]:
    """The contract's envelope: request_id always (and in the header); data xor error."""
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict)
    rid = body["request_id"]
    assert isinstance(rid, str)
    assert rid
    assert response.headers[REQUEST_ID_HEADER] == rid
    if status is not None:
        assert response.status_code == status, body
    if response.status_code < 300:
        assert set(body) == {"request_id", "data"}, body
    else:
        assert set(body) == {"request_id", "error"}, body
        error = body["error"]
        assert set(error) == {"code", "message"}
        assert error["code"] in STATUS_BY_CODE
        assert error["code"] != "OK"
        assert STATUS_BY_CODE[error["code"]] == response.status_code
        assert isinstance(error["message"], str)
        assert error["message"]
        if code is not None:
            assert error["code"] == code, body
    return body


def _operations(api: Api) -> list[Operation]:
    ops: list[Operation] = api.app.state.operations
    assert ops, "no operations registered"
    return ops


async def test_every_operation_without_app_key_is_401(api: Api) -> None:
    for op in _operations(api):
        for method in op.methods:
            kwargs: dict[str, Any] = {"json": {}} if method == "POST" else {}
            response = await api.raw(method, op.path, **kwargs)
            assert_envelope(response, status=401, code="Unauthorized")


async def test_every_operation_with_a_wrong_key_is_401(api: Api, owner: Person) -> None:
    wrong = ["nope", owner.key + "x", owner.key[:-1], "k" * 300, " "]
    for op in _operations(api):
        for key in wrong:
            response = await api.raw("POST", op.path, params={"app_key": key}, json={})
            assert_envelope(response, status=401, code="Unauthorized")


async def test_every_operation_with_a_valid_key_answers_an_envelope(
    api: Api, owner: Person
) -> None:
    for op in _operations(api):
        for method in op.methods:
            kwargs: dict[str, Any] = {"json": {}} if method == "POST" else {}
            response = await api.raw(method, op.path, params={"app_key": owner.key}, **kwargs)
            body = assert_envelope(response)
            # A valid key and an empty body: a success, or a 400 naming what is missing; never
            # a server error or an auth failure.
            assert response.status_code in (200, 400), (op.path, body)


async def test_request_ids_are_unique(api: Api, owner: Person) -> None:
    seen: set[str] = set()
    for i in range(30):
        key = owner.key if i % 3 else "bad"
        response = await api.raw("POST", "/team/list", params={"app_key": key}, json={})
        seen.add(assert_envelope(response)["request_id"])
        response = await api.raw("POST", "/no/such/route", json={})
        seen.add(assert_envelope(response)["request_id"])
    assert len(seen) == 60


async def test_success_has_data_and_no_error(api: Api, owner: Person) -> None:
    response = await api.raw("POST", "/team/list", params={"app_key": owner.key}, json={})
    body = assert_envelope(response, status=200)
    assert body["data"]["items"] == []
    upsert = await api.raw("POST", "/team/upsert", params={"app_key": owner.key},
                           json={"team_name": "x"})
    team_id = assert_envelope(upsert, status=200)["data"]["team_id"]
    deleted = await api.raw("POST", "/team/delete", params={"app_key": owner.key},
                            json={"team_id": team_id})
    # An empty success is data: {} (decisions §1), not absent and not null.
    assert assert_envelope(deleted, status=200)["data"] == {}


@pytest.mark.parametrize("method", ["POST", "GET", "PUT", "DELETE"])
async def test_unknown_path_is_404_route_not_found(api: Api, method: str) -> None:
    response = await api.raw(method, "/definitely/not/here", params={"app_key": "x"})
    body = assert_envelope(response, status=404, code="RouteNotFound")
    assert "/definitely/not/here" in body["error"]["message"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
async def test_wrong_method_is_405_method_not_allowed(api: Api, owner: Person,
                                                      method: str) -> None:
    post_only = [op for op in _operations(api) if op.methods == ("POST",)]
    assert post_only
    for op in post_only:
        response = await api.raw(method, op.path, params={"app_key": owner.key})
        body = assert_envelope(response, status=405, code="MethodNotAllowed")
        assert op.path in body["error"]["message"]
        assert method in body["error"]["message"]


async def test_error_envelope_is_exactly_two_fields_even_with_extra_query(api: Api) -> None:
    response = await api.raw("POST", "/team/list", params={"app_key": "", "debug": "1"},
                             json={})
    assert_envelope(response, status=401, code="Unauthorized")
