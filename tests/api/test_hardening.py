"""Hardening of the operation layer: malformed bodies are 400, every answer names
its request in both request-id headers, 405s say what is allowed, redirects never echo the
Host header, and the files of the embedded database are private."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import pytest

from dutyline.api.envelope import REFERENCE_REQUEST_ID_HEADER, REQUEST_ID_HEADER
from dutyline.config import Settings
from dutyline.db.migrate import upgrade
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, make_api
from tests.incident.conftest import push, wire

pytestmark = pytest.mark.anyio

INVALID_UTF8 = b'{"query":"\xff\xfe"}'
TOO_DEEP = b'{"a":' * 999 + b"1" + b"}" * 999
JSON = {"content-type": "application/json"}
MALFORMED = [pytest.param(INVALID_UTF8, "UTF-8", id="invalid-utf8"),
             pytest.param(TOO_DEEP, "deeply", id="too-deep")]
# The bad bytes sit in a field each operation decodes (msgspec skips unknown fields unread).
STRING_FIELD = {"/incident/list": b"query", "/team/upsert": b"team_name",
                "/member/list": b"query", "/event/push/alert/standard": b"title_rule"}


def aimed(body: bytes, path: str) -> bytes:
    return body.replace(b'"query"', b'"' + STRING_FIELD[path] + b'"')


def assert_both_ids(response_headers: object, request_id: str) -> None:
    headers = response_headers  # httpx.Headers
    assert headers[REQUEST_ID_HEADER] == request_id  # type: ignore[index]
    assert headers[REFERENCE_REQUEST_ID_HEADER] == request_id  # type: ignore[index]


@pytest.mark.parametrize(("body", "words"), MALFORMED)
@pytest.mark.parametrize("path", ["/incident/list", "/team/upsert", "/member/list"])
async def test_malformed_json_is_400_on_operations(
    api: Api, owner: Person, path: str, body: bytes, words: str
) -> None:
    response = await api.raw("POST", path, params={"app_key": owner.key},
                             content=aimed(body, path), headers=JSON)
    assert response.status_code == 400, response.text
    reply = response.json()
    assert reply["error"]["code"] == "InvalidParameter"
    assert words in reply["error"]["message"]
    assert_both_ids(response.headers, reply["request_id"])


@pytest.mark.parametrize(("body", "words"), MALFORMED)
async def test_malformed_json_is_400_on_ingestion(
    api: Api, owner: Person, body: bytes, words: str
) -> None:
    wired = await wire(api, owner)
    reply = await push(api, wired.key, None, raw=aimed(body, "/event/push/alert/standard"),
                       headers=JSON)
    assert (reply.status, reply.code) == (400, "InvalidParameter")
    assert words in reply.message
    assert_both_ids(reply.headers, reply.body["request_id"])


async def test_every_kind_of_answer_carries_both_request_id_headers(
    api: Api, owner: Person
) -> None:
    ok = await api.raw("POST", "/team/list", params={"app_key": owner.key}, json={})
    unauthorized = await api.raw("POST", "/team/list", json={})
    missing = await api.raw("POST", "/no/such/route", json={})
    wrong_method = await api.raw("DELETE", "/team/list")
    bad_push = await api.raw("POST", "/event/push/alert/standard", json={})
    for response, status in [(ok, 200), (unauthorized, 401), (missing, 404),
                             (wrong_method, 405), (bad_push, 401)]:
        assert response.status_code == status
        assert_both_ids(response.headers, response.json()["request_id"])
    public = await api.raw("GET", "/status/no-such-page")
    assert public.status_code == 404
    assert public.headers[REQUEST_ID_HEADER] == public.headers[REFERENCE_REQUEST_ID_HEADER]


async def test_405_names_the_allowed_methods(api: Api) -> None:
    response = await api.raw("DELETE", "/team/list")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "MethodNotAllowed"
    assert response.headers["Allow"] == "POST"
    both = await api.raw("PUT", "/healthz")
    assert both.status_code == 405
    assert "GET" in both.headers["Allow"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8443"])
async def test_trailing_slash_redirect_never_names_the_host_header(
    api: Api, host: str
) -> None:
    response = await api.raw("GET", "/status/acme/?lang=en", headers={"Host": host})
    assert response.status_code in (301, 302, 303, 307, 308)
    location = response.headers["location"]
    assert location == "/status/acme?lang=en"
    assert "evil" not in location
    assert response.headers[REQUEST_ID_HEADER] == response.headers[REFERENCE_REQUEST_ID_HEADER]
    # A doubled slash must not become a protocol-relative address.
    sneaky = await api.raw("GET", "//evil.example/", headers={"Host": host})
    assert not sneaky.headers.get("location", "").startswith("//")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_data_directory_sqlite_files_and_secret_key_are_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"
    url = f"sqlite+aiosqlite:///{data}/dutyline.db"
    await anyio.to_thread.run_sync(upgrade, url)
    settings = Settings(database_url=url, run_workers=False, log_level="warning")
    key = settings.resolved_secret_key()
    assert key
    async with make_api(settings) as api:
        assert (await api.raw("GET", "/readyz")).status_code == 200
        assert _mode(data) == 0o700
        files = [p for p in data.iterdir() if p.name.startswith("dutyline.db")]
        assert data / "dutyline.db" in files
        for path in [*files, data / "secret.key"]:
            assert _mode(path) == 0o600, (path, oct(_mode(path)))


async def test_a_get_forms_query_parameters_obey_the_string_rules_of_a_body(
        api: Api, owner: Person) -> None:
    """PostgreSQL text holds no NUL: a query parameter carrying one is the body's 400
    naming the field, never a database error."""
    for path, name in (("/status-page/migration/status", "job_id"),
                       ("/status-page/info", "page_id")):
        reply = await api.raw("GET", path, params={"app_key": owner.key, name: "a\x00b"})
        assert reply.status_code == 400, (path, reply.text)
        assert reply.json()["error"]["code"] == "InvalidParameter"
        assert name in reply.json()["error"]["message"]
