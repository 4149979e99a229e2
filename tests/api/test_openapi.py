"""GET /openapi.json (valid OpenAPI 3.1 covering every operation, every operation and field
described, grouped by area as docs/api.md; its response schemas hold for real responses) and
GET /docs (the vendored Swagger UI over it, nothing loaded from elsewhere, no inline script)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from dutyline.api import openapi_words
from dutyline.api.openapi_words import undescribed
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "src" / "dutyline" / "api" / "static"


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
        self.inline_scripts = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data") and value:
                self.refs.append((tag, name, value))
            if name.startswith("on") or name == "style":
                self.inline_scripts += 1
        self._in_script = tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline_scripts += 1


async def test_docs_is_the_vendored_reference_with_nothing_from_elsewhere(api: Api) -> None:
    response = await api.raw("GET", "/docs")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "style-src 'self';" in csp
    assert "unsafe-inline" not in csp and "connect-src 'self'" in csp
    parser = _Assets()
    parser.feed(response.text)
    assert parser.inline_scripts == 0  # the CSP would refuse them anyway
    assert {(tag, attr) for tag, attr, _ in parser.refs} == {("link", "href"), ("script", "src")}
    names = set()
    for _, _, url in parser.refs:
        assert url.startswith("/docs/assets/"), url
        asset = await api.raw("GET", url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].startswith(("text/javascript", "text/css")), url
        assert "immutable" in asset.headers["cache-control"]
        names.add(url.split("?")[0].rsplit("/", 1)[1])
    assert names == {"swagger-ui.css", "reference.css", "swagger-ui-bundle.js", "reference.js"}
    for text in (response.text, (await api.raw("GET", parser.refs[-1][2])).text):
        assert not re.search(r"https?://", text), text[:200]
    missing = await api.raw("GET", "/docs/assets/nothing.js")
    assert missing.status_code == 404


def test_the_server_ships_the_reference_the_tests_check_against() -> None:
    from tests.fixtures.reference import PATH

    assert openapi_words.REFERENCE.read_bytes() == PATH.read_bytes()


def test_the_try_it_key_stays_in_the_page() -> None:
    init = (STATIC / "reference.js").read_text()
    assert "persistAuthorization: false" in init
    assert "validatorUrl: null" in init  # no badge fetched from the public validator
    assert 'url: "/openapi.json"' in init


def test_the_vendored_files_are_the_pinned_release_with_its_licence() -> None:
    vendored = STATIC / "reference"
    lock = json.loads((REPO / "tools" / "api-reference" / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/swagger-ui-dist"]["version"]
    assert (vendored / "VERSION").read_text().strip() == pinned
    assert "Apache License" in (vendored / "LICENSE").read_text()
    bundle = (vendored / "swagger-ui-bundle.js").read_text()
    assert pinned in bundle and "sourceMappingURL" not in bundle


async def test_every_operation_and_field_is_described(api: Api) -> None:
    spec = await _spec(api)
    assert undescribed(spec) == []
    for path, item in spec["paths"].items():
        post = item["post"]
        assert post["description"].strip(), path
        for parameter in item.get("get", {}).get("parameters", []):
            assert parameter["description"], (path, parameter["name"])
    schemas = spec["components"]["schemas"]
    # The reference's own words where the field is the reference's, by path and field name.
    reference = _reference_schemas()
    assert schemas["ScheduleUpsertRequest"]["properties"]["layers"]["description"] == (
        reference["ScheduleUpsertRequest"]["properties"]["layers"]["description"])
    # Ours for our own fields, with the unit: the AI SRE's API keeps milliseconds.
    rule = schemas["AutomationRuleItem"]["properties"]
    assert "Unix milliseconds" in rule["created_at"]["description"]
    assert "Unix seconds" in schemas["AppKeyItem"]["properties"]["created_at"]["description"]
    # Limits and enums are in the schema itself; an int64 no longer spells out its range.
    unit = schemas["LayerIn"]["properties"]["rotation_unit"]
    assert {"hour", "day", "week", "month"} <= set(unit["enum"])
    limit = schemas["TeamListRequest"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)
    assert "9223372036854775807" not in json.dumps(spec)


def test_a_field_without_words_is_found() -> None:
    spec = {"paths": {"/x": {"post": {"summary": "X"}}},
            "components": {"schemas": {"S": {"properties": {"a": {"type": "string"}}}}}}
    assert undescribed(spec) == ["POST /x", "S.a"]


async def test_operations_are_grouped_by_area_as_docs_api_md(api: Api) -> None:
    spec = await _spec(api)
    areas = [tag["name"] for tag in spec["tags"]]
    table = _api_md_areas()
    assert areas == list(table)
    listed_in: dict[str, set[str]] = {}
    for area, paths in table.items():
        for path in paths:
            listed_in.setdefault(path, set()).add(area)
    checked = 0
    for path, listing in listed_in.items():
        if path in spec["paths"]:
            # A path named in two rows (a cross-reference) sits in one of them.
            assert spec["paths"][path]["post"]["tags"][0] in listing, (path, listing)
            checked += 1
    assert checked >= 250
    for path, item in spec["paths"].items():
        assert item["post"]["tags"][0] in areas, path


def _api_md_areas() -> dict[str, list[str]]:
    """docs/api.md's table of operations: each area and the paths it lists."""
    text = (REPO / "docs" / "api.md").read_text()
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = line.split(" | ")
        if not line.startswith("| ") or len(cells) < 2 or cells[0] in ("| Area", "|---"):
            continue
        area = cells[0].removeprefix("| ").strip()
        if area.startswith("-"):
            continue
        paths = []
        for spec in re.findall(r"`(/[^`?]+)", cells[1]):
            head, _, verbs = spec.replace("\\|", "|").rpartition("/")
            paths += [f"{head}/{verb}" for verb in verbs.split("|")]
        found[area] = paths
    return found


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


def _reference_schemas() -> dict[str, Any]:
    from tests.fixtures.reference import reference

    schemas: dict[str, Any] = reference()["components"]["schemas"]
    return schemas


def _reference_paths() -> dict[str, Any]:
    from tests.fixtures.reference import reference

    paths: dict[str, Any] = reference()["paths"]
    return paths
