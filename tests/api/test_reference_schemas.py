"""Responses of the operations the reference OpenAPI also describes validate against its
schemas (the reference is the tie-breaker for field names and shapes). The request id
travels in both headers: the contract's Service-Request-Id and the reference's
Flashcat-Request-Id (its SuccessEnvelope mirrors request_id there)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from dutyline.api.envelope import REQUEST_ID_HEADER
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.reference import reference

pytestmark = pytest.mark.anyio


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    """Follow a top-level $ref to a reusable response object."""
    while "$ref" in node and node["$ref"].startswith("#/components/responses/"):
        node = reference()["components"]["responses"][node["$ref"].rsplit("/", 1)[-1]]
    return node


@cache
def _components() -> dict[str, Any]:
    """The reference's components, with OpenAPI discriminators JSON Schema can check.

    A `oneOf` whose `discriminator.propertyName` names a sibling of the property (as
    IncidentFeedItem's `detail`, chosen by the item's `type`) is a plain oneOf to jsonschema,
    and loose detail schemas then match several branches. It becomes one if/then per
    mapping: the detail of an `i_rslv` item must satisfy FeedDetailIncidentResolve."""
    components = copy.deepcopy(reference()["components"])
    for schema in components["schemas"].values():
        properties = schema.get("properties", {})
        for name, prop in list(properties.items()):
            tag = prop.get("discriminator", {}).get("propertyName")
            mapping = prop.get("discriminator", {}).get("mapping")
            if "oneOf" not in prop or tag not in properties or not mapping:
                continue
            properties[name] = {k: v for k, v in prop.items()
                                if k not in ("oneOf", "discriminator")}
            schema.setdefault("allOf", []).extend(
                {"if": {"properties": {tag: {"const": value}}, "required": [tag]},
                 "then": {"properties": {name: {"$ref": ref}}}}
                for value, ref in mapping.items())
    return components


def reference_validator(path: str, status: int) -> Draft202012Validator:
    operation = reference()["paths"][path]
    responses = (operation.get("post") or operation["get"])["responses"]
    response = _resolve(responses[str(status)])
    schema = response["content"]["application/json"]["schema"]
    # The reference's `#/components/...` refs resolve against a root that carries them.
    root = {"components": _components(), **schema}
    return Draft202012Validator(root)


def check(path: str, response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    errors = sorted(reference_validator(path, response.status_code).iter_errors(body), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    assert response.headers[REQUEST_ID_HEADER] == body["request_id"]
    assert response.headers["Flashcat-Request-Id"] == body["request_id"]
    return body


async def _post(api: Api, path: str, body: dict[str, Any], key: str | None) -> httpx.Response:
    params = {"app_key": key} if key else {}
    return await api.raw("POST", path, params=params, json=body)


async def test_team_responses_validate_against_the_reference(api: Api, owner: Person) -> None:
    mate = await new_member(api, owner, name="Mate")
    up = await _post(api, "/team/upsert", {"team_name": "SRE", "description": "d",
                                           "person_ids": [owner.person_id, mate.person_id],
                                           "ref_id": "r1"}, owner.key)
    team_id = check("/team/upsert", up)["data"]["team_id"]
    await _post(api, "/team/upsert", {"team_name": "Empty"}, owner.key)

    listed = check("/team/list", await _post(api, "/team/list", {}, owner.key))
    assert listed["data"]["total"] == 2
    check("/team/list", await _post(api, "/team/list", {"p": 5, "limit": 1}, owner.key))
    info = check("/team/info", await _post(api, "/team/info", {"team_id": team_id}, owner.key))
    assert sorted(info["data"]["person_ids"]) == sorted([owner.person_id, mate.person_id])
    infos = check("/team/infos", await _post(api, "/team/infos", {"team_ids": [team_id]},
                                               owner.key))
    assert [i["team_id"] for i in infos["data"]["items"]] == [team_id]
    check("/team/infos", await _post(api, "/team/infos", {"team_ids": [1]}, owner.key))


@pytest.mark.parametrize("path", ["/team/list", "/team/info", "/team/infos", "/team/upsert"])
async def test_team_error_responses_validate_against_the_reference(
    api: Api, owner: Person, path: str
) -> None:
    unauthorized = await _post(api, path, {}, None)
    assert unauthorized.status_code == 401
    check(path, unauthorized)
    bad = await _post(api, path, {"p": 0, "team_ids": "x", "team_id": -1, "team_name": 7},
                      owner.key)
    assert bad.status_code == 400
    check(path, bad)


def test_reference_describes_the_team_operations() -> None:
    paths = reference()["paths"]
    for path in ("/team/list", "/team/info", "/team/infos", "/team/upsert"):
        assert "200" in paths[path]["post"]["responses"], path


def test_the_reference_validator_is_not_vacuous() -> None:
    validator = reference_validator("/team/list", 200)
    assert not list(validator.iter_errors(
        {"request_id": "r", "data": {"p": 1, "limit": 20, "total": 0, "items": []}}))
    assert list(validator.iter_errors({"request_id": "r", "data": {"p": 1}}))
    assert list(validator.iter_errors({"request_id": "r", "data": {
        "p": 1, "limit": 20, "total": 1, "items": [{"team_id": "not-an-int"}]}}))
    assert list(reference_validator("/team/list", 401).iter_errors({"request_id": "r"}))


def test_feed_details_are_checked_by_their_type() -> None:
    """The discriminator rewrite makes the feed's detail schemas bite."""
    validator = reference_validator("/incident/feed", 200)

    def item(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
        return {"request_id": "r", "data": {"has_next_page": False, "items": [{
            "ref_id": "a" * 24, "type": kind, "detail": detail, "account_id": 1,
            "creator_id": 0, "created_at": 1, "updated_at": 1}]}}

    assert not list(validator.iter_errors(item("i_rslv", {"from": "event"})))
    assert list(validator.iter_errors(item("i_rslv", {})))  # `from` is required
    assert list(validator.iter_errors(item("i_rslv", {"from": "recovered"})))
    assert list(validator.iter_errors(item("i_r_desc", {"from": "a", "to": "b"})))
    assert list(validator.iter_errors(item("i_assign", {"to": ["x"]})))
