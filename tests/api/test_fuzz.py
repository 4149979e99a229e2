"""Property-based fuzzing of every operation with schemathesis (4.x), in-process over ASGI.

Schemathesis reads our own /openapi.json, generates schema-valid and schema-violating bodies
for each operation and sends them with a valid app_key. Whatever it sends, the answer must be
the envelope with a request_id (data xor error), an error code from the 20, and no 5xx.
Bounded and derandomized, so the run is stable. `make test` runs a few examples of each
operation; the run marked `fuzz_long` (CI runs it after `make test`) runs many more.
`DUTYLINE_FUZZ_SEED=<int>` draws other examples from that seed (each seed its own stable
run), to search further than the fixed one. Each test records the requests it sent per
status as its `requests` property (`--junitxml` reports them)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dutyline.api.envelope import REQUEST_ID_HEADER
from dutyline.api.errors import STATUS_BY_CODE
from dutyline.app import create_app
from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.domains import all_routers
from dutyline.platform.account.service import create_account
from tests.fixtures import databases as dbs

OPERATIONS = [op.path for router in all_routers() for op in router.operations]
# Operations that also answer GET with query parameters: their GET form is fuzzed too.
GET_OPERATIONS = [op.path for router in all_routers() for op in router.operations
                  if "GET" in op.methods]
QUICK_EXAMPLES = 5  # per operation, in `make test`
LONG_EXAMPLES = 30  # per operation, in the `fuzz_long` run
# None: derandomized (the fixed examples CI runs).
SEED = int(os.environ["DUTYLINE_FUZZ_SEED"]) if os.environ.get("DUTYLINE_FUZZ_SEED") else None


async def _new_owner_key(database_url: str, name: str) -> str:
    db = Database(database_url)
    try:
        async with db.transaction() as conn:
            created = await create_account(conn, account_name=name, owner_name="Fuzzer",
                                           owner_email=f"{name}@fuzz.example",
                                           now_s=1_700_000_000)
    finally:
        await db.dispose()
    return created.app_key


def _backends() -> list[str]:
    return ["sqlite", "postgres"] if dbs.postgres_admin_url() else ["sqlite"]


@pytest.fixture(scope="module", params=_backends())
def fuzz_app(request: pytest.FixtureRequest, sqlite_template: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """The app loaded by schemathesis, on a database of its own, and that database's URL.
    Built once per backend: every operation is fuzzed in an account of its own, and accounts
    see nothing of each other. Schemathesis runs the app and its lifespan on its own
    event-loop thread; the lifespan is shut down afterwards."""
    admin = dbs.postgres_admin_url()
    if request.param == "sqlite":
        url = dbs.fresh_sqlite(sqlite_template, tmp_path_factory.mktemp("fuzz"))
    else:
        assert admin is not None
        url = dbs.create_postgres_database(admin)
    app = create_app(Settings(
        database_url=url, secret_key="test-secret-key", allow_private_network=True,
        rate_limit_per_second=100_000, rate_limit_per_minute=1_000_000, run_workers=False,
        log_level="warning"))
    try:
        yield schemathesis.openapi.from_asgi("/openapi.json", app), url
    finally:
        asgi.shutdown_lifespans()
        if admin is not None and request.param == "postgres":
            dbs.drop_postgres_database(admin, url)


@pytest.fixture
def fuzz_target(fuzz_app: tuple[Any, str]) -> tuple[Any, str]:
    """The schema, and the key of an Owner of an account made for this test alone."""
    schema, url = fuzz_app
    name = f"fuzz-{secrets.token_hex(6)}"
    return schema, asyncio.run(_new_owner_key(url, name))


def envelope_check(response: Any) -> None:
    assert response.headers.get(REQUEST_ID_HEADER) or response.headers.get(
        REQUEST_ID_HEADER.lower()), "no Service-Request-Id header"
    header = response.headers.get(REQUEST_ID_HEADER) or response.headers.get(
        REQUEST_ID_HEADER.lower())
    if isinstance(header, list):
        header = header[0]
    content_type = response.headers.get("content-type") or response.headers.get("Content-Type")
    if isinstance(content_type, list):
        content_type = content_type[0]
    assert (content_type or "").startswith("application/json"), (
        response.request.headers, response.headers)
    body = json.loads(response.content)
    assert isinstance(body, dict)
    assert isinstance(body.get("request_id"), str)
    assert body["request_id"] == header
    if response.status_code < 300:
        assert set(body) == {"request_id", "data"}, body
    else:
        assert set(body) == {"request_id", "error"}, body
        assert set(body["error"]) == {"code", "message"}, body
        code = body["error"]["code"]
        assert code in STATUS_BY_CODE, code
        assert STATUS_BY_CODE[code] == response.status_code, body
    assert response.status_code < 500, body


@pytest.mark.parametrize("path", OPERATIONS)
def test_fuzz_operation(fuzz_target: tuple[Any, str], path: str,
                        record_property: Any) -> None:
    fuzz(fuzz_target, path, QUICK_EXAMPLES, record=record_property)


@pytest.mark.fuzz_long
@pytest.mark.parametrize("path", OPERATIONS)
def test_fuzz_operation_long(fuzz_target: tuple[Any, str], path: str,
                             record_property: Any) -> None:
    fuzz(fuzz_target, path, LONG_EXAMPLES, record=record_property)


@pytest.mark.parametrize("path", GET_OPERATIONS)
def test_fuzz_get_form(fuzz_target: tuple[Any, str], path: str,
                       record_property: Any) -> None:
    fuzz(fuzz_target, path, QUICK_EXAMPLES * 2, method="GET", record=record_property)


def fuzz(fuzz_target: tuple[Any, str], path: str, max_examples: int,
         method: str = "POST", record: Any = None) -> None:
    schema, key = fuzz_target
    operation = schema[path][method]
    seen: dict[int, int] = {}
    try:
        # Each kind of input gets its share of the examples: drawn from one mix, a handful
        # could all come out valid, and the refusals would go unchecked.
        for mode, share in ((GenerationMode.NEGATIVE, max(1, max_examples // 2)),
                            (GenerationMode.POSITIVE,
                             max(1, max_examples - max_examples // 2))):
            _fuzz_mode(operation.as_strategy(mode, query={"app_key": key}), key, share, seen)
    finally:
        if record is not None:
            record("requests", json.dumps(seen, sort_keys=True))
    # Both kinds of input reached the handler: some succeeded or failed validation, none were
    # turned away at the door for a missing key.
    assert sum(seen.values()) >= max_examples // 2
    assert 401 not in seen, seen
    assert 400 in seen, seen


def _fuzz_mode(strategy: Any, key: str, max_examples: int, seen: dict[int, int]) -> None:
    @hypothesis.settings(
        max_examples=max_examples, deadline=None, derandomize=SEED is None, database=None,
        suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate],
        print_blob=False,
    )
    @hypothesis.seed(SEED or 0)
    @hypothesis.given(case=strategy)
    def run(case: Any) -> None:
        # Negative generation may drop or mangle the query; the key must always be sent.
        case.query = {**(case.query or {}), "app_key": key}
        # File exports answer text/csv unless JSON is asked for; the document (like the
        # reference) describes the envelope, so ask for it. tests/insight covers the CSV.
        response = case.call(headers={"Accept": "application/json"})
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        envelope_check(response)
        case.validate_response(response, checks=[
            not_a_server_error, status_code_conformance, content_type_conformance,
            response_schema_conformance,
        ])

    run()


# Two shapes the generators above never produce: bytes that are not UTF-8 inside a JSON
# string, and nesting past the decoder's recursion limit. Each is sent to every operation and
# to alert ingestion, with every field name of the operation's request (so the bad string
# lands in a field the decoder reads), and must be the envelope's 400.
MALFORMED_BODIES = {
    "invalid-utf8": b'{"query":"\xff\xfe"}',
    "too-deep": b'{"a":' * 999 + b"1" + b"}" * 999,
}


def _request_fields(path: str) -> list[str]:
    import msgspec

    (op,) = [op for router in all_routers() for op in router.operations if op.path == path]
    fields = getattr(op.request_type, "__struct_fields__", ())
    info = msgspec.inspect.type_info(op.request_type)
    strings = [f.name for f in getattr(info, "fields", ())
               if isinstance(f.type, msgspec.inspect.StrType)]
    return strings or list(fields) or ["query"]


@pytest.mark.anyio
@pytest.mark.parametrize("shape", sorted(MALFORMED_BODIES))
async def test_malformed_bodies_are_400_on_every_operation(api: Any, owner: Any,
                                                           shape: str) -> None:
    from tests.incident.conftest import wire

    bodies: list[tuple[str, dict[str, str], bytes]] = []
    for path in OPERATIONS:
        body = MALFORMED_BODIES[shape]
        for name in _request_fields(path)[:1]:
            bodies.append((path, {"app_key": owner.key},
                           body.replace(b'"query"', json.dumps(name).encode())))
    wired = await wire(api, owner)
    bodies.append(("/event/push/alert/standard", {"integration_key": wired.key},
                   MALFORMED_BODIES[shape].replace(b'"query"', b'"title_rule"')))
    for path, params, body in bodies:
        response = await api.raw("POST", path, params=params, content=body,
                                 headers={"content-type": "application/json"})
        assert response.status_code == 400, (path, response.text)
        envelope_check(response)
