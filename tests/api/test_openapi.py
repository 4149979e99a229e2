"""GET /openapi.json (valid OpenAPI 3.1 covering every operation; its response schemas hold
for real responses) and GET /docs (every operation, nothing loaded from the internet)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio


async def _spec(api: Api) -> dict[str, Any]:
    response = await api.raw("GET", "/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    spec: dict[str, Any] = response.json()
    return spec


def _response_validator(spec: dict[str, Any], path: str, status: int) -> Draft202012Validator:
    responses = spec["paths"][path]["post"]["responses"]
    assert str(status) in responses, f"{path} answers {status}, which its spec does not list"
    schema = responses[str(status)]["content"]["application/json"]["schema"]
    return Draft202012Validator({"components": spec["components"], **schema})


def _assert_matches(spec: dict[str, Any], path: str, response: httpx.Response) -> None:
    validator = _response_validator(spec, path, response.status_code)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(
        response.json())]
    assert not errors, (path, response.status_code, errors)


async def test_openapi_is_valid_3_1(api: Api) -> None:
    spec = await _spec(api)
    assert spec["openapi"].startswith("3.1")
    validate(spec)  # raises on an invalid document
    schemes = spec["components"]["securitySchemes"]
    assert schemes["AppKeyAuth"] == {"type": "apiKey", "in": "query", "name": "app_key"}


async def test_openapi_covers_every_registered_operation(api: Api) -> None:
    spec = await _spec(api)
    ops = api.app.state.operations
    assert set(spec["paths"]) == {op.path for op in ops}
    operation_ids = [spec["paths"][op.path]["post"]["operationId"] for op in ops]
    assert len(set(operation_ids)) == len(ops)
    error_codes = spec["components"]["schemas"]["ErrorCode"]["enum"]
    # The contract's 20 codes, and the four of the monitor tool operations.
    assert len(error_codes) == 24
    for op in ops:
        post = spec["paths"][op.path]["post"]
        assert {"200", "400", "401", "429", "500"} <= set(post["responses"]), op.path
        if op.permissions:
            assert "403" in post["responses"], op.path
        assert post["security"] == [{"AppKeyAuth": []}]
        assert "application/json" in post["requestBody"]["content"]


async def test_real_responses_match_the_served_schemas(api: Api, owner: Person) -> None:
    spec = await _spec(api)
    member = await new_member(api, owner, name="Reader")
    team = await api.call("/team/upsert", {"team_name": "T", "person_ids": [owner.person_id]},
                          key=owner.key)
    team_id = team.data["team_id"]
    bodies: dict[str, list[dict[str, Any]]] = {
        "/team/list": [{}, {"p": 2, "limit": 1}, {"p": 0}],
        "/team/info": [{"team_id": team_id}, {"team_id": 1}, {}],
        "/team/infos": [{"team_ids": [team_id]}, {}],
        "/team/upsert": [{"team_name": "U"}, {"team_name": ""}],
        "/team/delete": [{"team_name": "U"}, {"team_id": 1}],
    }
    checked = 0
    for op in api.app.state.operations:
        for body in [*bodies.get(op.path, []), {}]:
            for key in (owner.key, member.key, "wrong"):
                response = await api.raw("POST", op.path, params={"app_key": key}, json=body)
                _assert_matches(spec, op.path, response)
                checked += 1
    assert checked >= 3 * len(api.app.state.operations)


async def test_schema_validator_is_not_vacuous(api: Api) -> None:
    spec = await _spec(api)
    ok = _response_validator(spec, "/team/list", 200)
    assert list(ok.iter_errors({"request_id": "r", "data": {"p": 1}}))
    assert list(ok.iter_errors({"data": {"p": 1, "limit": 1, "total": 0, "items": []}}))
    err = _response_validator(spec, "/team/list", 400)
    assert list(err.iter_errors({"request_id": "r", "error": {"code": "Nope", "message": "m"}}))


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data") and value:
                self.refs.append((tag, name, value))


async def test_docs_lists_every_operation_without_external_assets(api: Api) -> None:
    response = await api.raw("GET", "/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    for op in api.app.state.operations:
        assert f"POST {op.path}" in page, op.path
    parser = _Assets()
    parser.feed(page)
    assert ("a", "href", "/openapi.json") in parser.refs
    for tag, attr, value in parser.refs:
        assert tag == "a", (tag, attr, value)  # no <script src>, <link href>, <img src>
        assert value.startswith(("#", "/openapi.json")), value
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", page, re.I)
    assert "@import" not in page
    assert "url(" not in page


async def test_the_get_forms_and_the_csv_answers_are_documented(api: Api, owner: Person) -> None:
    spec = await _spec(api)
    reference = {p for p, o in _reference_paths().items() if "get" in o}
    served_get = {p for p, o in spec["paths"].items() if "get" in o}
    assert reference & set(spec["paths"]) <= served_get
    info = spec["paths"]["/status-page/change/info"]["get"]
    params = {p["name"]: p for p in info["parameters"]}
    assert params["page_id"]["in"] == "query" and params["page_id"]["required"]
    assert params["page_id"]["schema"]["type"] == "integer"
    active = spec["paths"]["/status-page/change/active/list"]["get"]["parameters"]
    assert [p["name"] for p in active] == ["page_id", "type"]
    assert info["security"] == [{"AppKeyAuth": []}]
    # The documented GET form works as documented: query parameters, the envelope.
    made = await api.call("/status-page/create", {"page_name": "Acme", "url_name": "acme-x"},
                          key=owner.key)
    assert made.status == 200, made.body
    got = await api.raw("GET", "/status-page/info", params={
        "app_key": owner.key, "page_id": made.data["page_id"]})
    assert got.status_code == 200 and got.json()["data"]["page_id"] == made.data["page_id"]
    for path in ("/insight/incident/export", "/enrichment/mapping/data/download"):
        content = spec["paths"][path]["post"]["responses"]["200"]["content"]
        assert content["text/csv"] == {"schema": {"type": "string"}}
        assert "application/json" in content


def _reference_paths() -> dict[str, Any]:
    from tests.fixtures.reference import reference

    paths: dict[str, Any] = reference()["paths"]
    return paths
