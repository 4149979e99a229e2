"""Fault paths of the operation layer: content type, JSON, schema, size, paging, strings, 500."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import structlog
from sqlalchemy import func, select, update

from dutyline.api import handler
from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log, member, team
from dutyline.platform.team import service as team_service
from tests.api.test_envelope import assert_envelope
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api, make_api

pytestmark = pytest.mark.anyio

TEN_MB = 10 * 1024 * 1024


async def _team_count(api: Api) -> int:
    async with api.runtime.db.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(team))).scalar_one())


async def _post(api: Api, path: str, key: str, **kwargs: Any) -> dict[str, Any]:
    response = await api.raw("POST", path, params={"app_key": key}, **kwargs)
    body = assert_envelope(response)
    body["_status"] = response.status_code
    return body


# --- content type and JSON -------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/xml",
                                          "application/jsonp"])
async def test_non_json_content_type_with_a_body_is_invalid_content_type(
    api: Api, owner: Person, content_type: str
) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=b'{"team_name": "x"}',
                       headers={"Content-Type": content_type})
    assert (body["_status"], body["error"]["code"]) == (400, "InvalidContentType")
    assert await _team_count(api) == 0


async def test_missing_content_type_with_a_body_is_invalid_content_type(
    api: Api, owner: Person
) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=b'{"team_name": "x"}')
    assert body["error"]["code"] == "InvalidContentType"


async def test_json_content_type_with_charset_is_accepted(api: Api, owner: Person) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=b'{"team_name": "x"}',
                       headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert body["_status"] == 200
    assert await _team_count(api) == 1


async def test_empty_body_means_empty_object(api: Api, owner: Person) -> None:
    body = await _post(api, "/team/list", owner.key, content=b"")
    assert body["_status"] == 200
    assert body["data"]["p"] == 1


@pytest.mark.parametrize("raw", [b"{", b'{"team_name": "x",}', b"nul", b"{'a': 1}",
                                 b'{"team_name": "x"} trailing', b"\xff\xfe{}"])
async def test_malformed_json_is_invalid_content_type(api: Api, owner: Person,
                                                      raw: bytes) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=raw,
                       headers={"Content-Type": "application/json"})
    assert (body["_status"], body["error"]["code"]) == (400, "InvalidContentType")


@pytest.mark.parametrize("raw", [b"[]", b'[{"team_name": "x"}]', b'"x"', b"1", b"null"])
async def test_json_that_is_not_an_object_is_invalid_parameter(api: Api, owner: Person,
                                                               raw: bytes) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=raw,
                       headers={"Content-Type": "application/json"})
    assert (body["_status"], body["error"]["code"]) == (400, "InvalidParameter")
    assert await _team_count(api) == 0


# --- schema ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("payload", "field"), [
    ({"team_name": 5}, "team_name"),
    ({"team_name": "x", "person_ids": "1"}, "person_ids"),
    ({"team_name": "x", "person_ids": ["a"]}, "person_ids[0]"),
    ({"team_name": "x", "team_id": -1}, "team_id"),
    ({"team_name": "x", "reset_if_name_exist": "yes"}, "reset_if_name_exist"),
    ({"team_name": "x", "description": {"a": 1}}, "description"),
    ({"team_name": ""}, "team_name"),
    ({"team_name": "x" * 40}, "team_name"),
    ({}, "team_name"),
])
async def test_wrong_types_name_the_field(api: Api, owner: Person, payload: dict[str, Any],
                                          field: str) -> None:
    reply = await api.call("/team/upsert", payload, key=owner.key)
    assert reply.status == 400
    assert reply.code == "InvalidParameter"
    assert field in reply.message
    assert await _team_count(api) == 0


async def test_unknown_fields_are_ignored(api: Api, owner: Person) -> None:
    reply = await api.call("/team/upsert", {"team_name": "x", "brand_new_field": {"deep": [1]},
                                            "another": None}, key=owner.key)
    assert reply.status == 200
    assert reply.data["team_name"] == "x"
    listed = await api.call("/team/list", {"future_filter": True, "p": 1}, key=owner.key)
    assert listed.data["total"] == 1


# --- body size -------------------------------------------------------------------------------

def _big_body(size: int) -> bytes:
    return json.dumps({"team_name": "big", "description": "a" * size}).encode()


async def test_ten_megabytes_with_content_length_is_413(api: Api, owner: Person) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=_big_body(TEN_MB),
                       headers={"Content-Type": "application/json"})
    assert (body["_status"], body["error"]["code"]) == (413, "EntityTooLarge")
    assert str(1024 * 1024) in body["error"]["message"]
    assert await _team_count(api) == 0


async def test_ten_megabytes_chunked_without_content_length_is_413(
    api: Api, owner: Person
) -> None:
    payload = _big_body(TEN_MB)
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(payload), 64 * 1024):
            sent.append(start)
            yield payload[start:start + 64 * 1024]

    request = api.client.build_request("POST", "/team/upsert", params={"app_key": owner.key},
                                       content=chunks(),
                                       headers={"Content-Type": "application/json"})
    assert "content-length" not in request.headers
    response = await api.client.send(request)
    body = assert_envelope(response, status=413, code="EntityTooLarge")
    assert body["error"]["code"] == "EntityTooLarge"
    assert await _team_count(api) == 0


async def test_a_lying_content_length_is_not_trusted(api: Api, owner: Person) -> None:
    payload = _big_body(2 * 1024 * 1024)

    async def chunks() -> AsyncIterator[bytes]:
        yield payload

    request = api.client.build_request("POST", "/team/upsert", params={"app_key": owner.key},
                                       content=chunks(),
                                       headers={"Content-Type": "application/json",
                                                "Content-Length": "10"})
    response = await api.client.send(request)
    assert_envelope(response, status=413, code="EntityTooLarge")
    assert await _team_count(api) == 0


async def test_invalid_content_length_header_is_400(api: Api, owner: Person) -> None:
    response = await api.raw("POST", "/team/list", params={"app_key": owner.key}, content=b"{}",
                             headers={"Content-Type": "application/json",
                                      "Content-Length": "abc"})
    assert_envelope(response, status=400, code="BadRequest")


async def test_body_limit_is_configurable(settings: Settings) -> None:
    async with make_api(settings.with_(max_body_bytes=200)) as api:
        from tests.fixtures.accounts import new_account

        owner = await new_account(api)
        small = _big_body(100)
        assert len(small) <= 200
        ok = await _post(api, "/team/upsert", owner.key, content=small,
                         headers={"Content-Type": "application/json"})
        assert ok["_status"] == 200
        too_big = _big_body(201)
        refused = await _post(api, "/team/upsert", owner.key, content=too_big,
                              headers={"Content-Type": "application/json"})
        assert (refused["_status"], refused["error"]["code"]) == (413, "EntityTooLarge")
        assert "200" in refused["error"]["message"]
        assert await _team_count(api) == 1


async def test_body_just_under_default_limit_is_accepted(api: Api, owner: Person) -> None:
    # 1 MiB is the default; a 900 KB body is read in full and then validated (description
    # is at most 500 characters), so the answer is InvalidParameter, not EntityTooLarge.
    body = await _post(api, "/team/upsert", owner.key, content=_big_body(900_000),
                       headers={"Content-Type": "application/json"})
    assert (body["_status"], body["error"]["code"]) == (400, "InvalidParameter")
    assert "description" in body["error"]["message"]


# --- pagination ------------------------------------------------------------------------------

@pytest.mark.parametrize(("payload", "field"), [
    ({"p": 0}, "p"), ({"p": -1}, "p"), ({"p": 2**63}, "p"), ({"p": 10**30}, "p"),
    ({"limit": 0}, "limit"), ({"limit": -5}, "limit"), ({"limit": 101}, "limit"),
    ({"limit": 2**64}, "limit"), ({"p": 1.5}, "p"), ({"limit": None}, "limit"),
    ({"p": 101, "limit": 100}, "p"), ({"p": 10_000, "limit": 2}, "p"),
])
async def test_bad_pagination_is_400_naming_the_field(api: Api, owner: Person,
                                                      payload: dict[str, Any],
                                                      field: str) -> None:
    reply = await api.call("/team/list", payload, key=owner.key)
    assert reply.status == 400
    assert reply.code == "InvalidParameter"
    assert field in reply.message


async def test_pagination_window_edge_is_allowed(api: Api, owner: Person) -> None:
    reply = await api.call("/team/list", {"p": 100, "limit": 100}, key=owner.key)
    assert reply.status == 200
    assert reply.data["items"] == []
    assert (reply.data["p"], reply.data["limit"]) == (100, 100)


# --- strings ---------------------------------------------------------------------------------

CJK = "值班团队运维"
EMOJI = "🚨🔥👩‍💻"
RTL = "فريق المناوبة"


async def test_non_ascii_round_trips_in_every_string_field_of_team_upsert(
    api: Api, owner: Person
) -> None:
    email = f"{CJK}@例子.测试"
    phone = "+٩٦٦٥٠٠١٢٣"
    mate = await new_member(api, owner, name="Mate", email=email)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == mate.person_id)
                           .values(phone=phone))
    other = await new_member(api, owner, name="Other", email="o@x.example")
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(member).where(member.c.member_id == other.person_id)
                           .values(phone="+1555"))
    name = f"{CJK}{EMOJI}{RTL}"[:39]
    description = f"{RTL} — {CJK} {EMOJI} \u200f mixed ✓ Ω ñ"
    ref = f"ref-{EMOJI}-{CJK}"
    created = await api.call("/team/upsert", {
        "team_name": name, "description": description, "ref_id": ref,
        "emails": [email], "phones": [phone], "countryCode": "+٩٦",
    }, key=owner.key)
    assert created.status == 200, created.body
    assert created.data["team_name"] == name
    info = await api.call("/team/info", {"team_id": created.data["team_id"]}, key=owner.key)
    assert info.data["team_name"] == name
    assert info.data["description"] == description
    assert info.data["ref_id"] == ref
    assert info.data["person_ids"] == [mate.person_id]
    by_name = await api.call("/team/info", {"team_name": name}, key=owner.key)
    assert by_name.data["team_id"] == created.data["team_id"]
    by_ref = await api.call("/team/info", {"ref_id": ref}, key=owner.key)
    assert by_ref.data["team_id"] == created.data["team_id"]
    searched = await api.call("/team/list", {"query": CJK[:2]}, key=owner.key)
    assert [t["team_name"] for t in searched.data["items"]] == [name]
    # An unknown non-ASCII contact matches no member and is ignored (reference /team/upsert).
    unknown = await api.call("/team/upsert", {"team_name": "t2", "emails": [f"🚨{CJK}@x.y"]},
                             key=owner.key)
    assert unknown.status == 200, unknown.body
    t2 = await api.call("/team/info", {"team_id": unknown.data["team_id"]}, key=owner.key)
    assert t2.data["person_ids"] == []


@pytest.mark.parametrize("payload", [
    {"team_name": "a\u0000b"},
    {"team_name": "ok", "description": "x\u0000"},
    {"team_name": "ok", "ref_id": "\u0000"},
    {"team_name": "ok", "emails": ["a@b.c", "\u0000@b.c"]},
    {"team_name": "ok", "unknown": "\u0000"},
])
async def test_nul_or_lone_surrogate_is_400_and_nothing_stored(
    api: Api, owner: Person, payload: dict[str, Any]
) -> None:
    raw = json.dumps(payload).encode()  # escapes as \u0000 / \ud800, as clients send them
    body = await _post(api, "/team/upsert", owner.key, content=raw,
                       headers={"Content-Type": "application/json"})
    assert (body["_status"], body["error"]["code"]) == (400, "InvalidParameter")
    assert await _team_count(api) == 0


async def test_lone_surrogate_escape_is_400_and_nothing_stored(api: Api, owner: Person) -> None:
    # msgspec already refuses a lone surrogate escape as malformed JSON.
    raw = json.dumps({"team_name": "ok", "description": "\ud800"}).encode()
    assert b"\\ud800" in raw
    body = await _post(api, "/team/upsert", owner.key, content=raw,
                       headers={"Content-Type": "application/json"})
    assert body["_status"] == 400
    assert body["error"]["code"] in ("InvalidContentType", "InvalidParameter")
    assert await _team_count(api) == 0


async def test_raw_nul_byte_in_json_is_refused(api: Api, owner: Person) -> None:
    body = await _post(api, "/team/upsert", owner.key, content=b'{"team_name": "a\x00b"}',
                       headers={"Content-Type": "application/json"})
    assert body["_status"] == 400
    assert body["error"]["code"] in ("InvalidContentType", "InvalidParameter")
    assert await _team_count(api) == 0


# --- 500 -------------------------------------------------------------------------------------

@pytest.fixture
def log_buffer() -> Iterator[io.StringIO]:
    """The app's structlog pipeline (processors as configured) writing into a buffer.

    The module-level loggers cache themselves on first use, so the handler's logger is
    swapped for a fresh, uncached one for the duration of the test."""
    saved = structlog.get_config()
    buffer = io.StringIO()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=buffer),
                        cache_logger_on_first_use=False)
    original = handler.log
    handler.log = structlog.get_logger("dutyline.api")
    try:
        yield buffer
    finally:
        handler.log = original
        structlog.configure(**saved)


async def test_unhandled_exception_is_500_without_stack_and_logged_with_request_id(
    api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch, log_buffer: io.StringIO
) -> None:
    secret_detail = "boom-secret-detail-in-exception"

    async def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError(secret_detail)

    def boom_sync(*_: Any, **__: Any) -> Any:
        raise RuntimeError(secret_detail)

    # /team/list is a sync read (its unit of database work fails on the database thread).
    monkeypatch.setattr(team_service, "list_teams_sync", boom_sync)
    monkeypatch.setattr(team_service, "upsert_team", boom)
    response = await api.raw("POST", "/team/list", params={"app_key": owner.key}, json={},
                             headers={"Accept-Language": "en"})
    body = assert_envelope(response, status=500, code="InternalError")
    text = response.text
    assert "Traceback" not in text
    assert secret_detail not in text
    assert "RuntimeError" not in text
    assert "request_id" in body["error"]["message"]

    upsert = await api.raw("POST", "/team/upsert", params={"app_key": owner.key},
                           json={"team_name": "x"})
    up_body = assert_envelope(upsert, status=500, code="InternalError")
    assert await _team_count(api) == 0

    lines = [json.loads(line) for line in log_buffer.getvalue().splitlines() if line.strip()]
    errors_logged = [e for e in lines if e.get("request_id") == body["request_id"]]
    assert len(errors_logged) == 1
    event = errors_logged[0]
    assert event["level"] == "error"
    assert event["operation"] == "/team/list"
    assert secret_detail in event["exception"]  # the stack goes to the log, not the client
    assert any(e.get("request_id") == up_body["request_id"] for e in lines)
    assert owner.key not in log_buffer.getvalue()

    # The failed audited write is still recorded, with its outcome.
    async with api.runtime.db.connect() as conn:
        rows = (await conn.execute(select(audit_log).where(
            audit_log.c.request_id == up_body["request_id"]))).mappings().all()
    assert [r["outcome"] for r in rows] == ["InternalError"]
