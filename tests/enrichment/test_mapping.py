"""/enrichment/mapping/schema/* and /enrichment/mapping/data/* through the API: records in the
reference's shapes, validation naming the field, permissions, other accounts, the CSV upload
(all or nothing, the first bad line named) and the streamed download (CSV, source labels then
result labels, formula cells neutralised)."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from dutyline.db.tables.enrichment import mapping_row, mapping_schema
from dutyline.db.tables.platform import audit_log
from dutyline.enrichment import service
from dutyline.enrichment.tabular import MAX_UPLOAD_BYTES
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

CMDB = {"schema_name": "CMDB Lookup", "description": "Enrich alerts with CMDB data",
        "source_labels": ["host"], "result_labels": ["owner", "team", "service"]}


async def post(api: Api, path: str, body: dict[str, Any], key: str,
               **kwargs: Any) -> httpx.Response:
    return await api.raw("POST", path, params={"app_key": key}, json=body, **kwargs)


async def create(api: Api, who: Person, body: dict[str, Any] | None = None) -> str:
    reply = await post(api, "/enrichment/mapping/schema/create", body or CMDB, who.key)
    assert reply.status_code == 200, reply.text
    return str(check("/enrichment/mapping/schema/create", reply)["data"]["schema_id"])


async def upload(api: Api, who: Person, schema_id: str, data: bytes, *,
                 truncate: bool | None = None, as_: str = "csv") -> httpx.Response:
    params: dict[str, Any] = {"app_key": who.key, "schema_id": schema_id}
    if truncate is not None:
        params["truncate"] = str(truncate).lower()
    if as_ == "multipart":
        return await api.raw("POST", "/enrichment/mapping/data/upload", params=params,
                             files={"file": ("cmdb.csv", data, "text/csv")})
    return await api.raw("POST", "/enrichment/mapping/data/upload", params=params,
                         content=data, headers={"content-type": "text/csv"})


async def download(api: Api, who: Person, schema_id: str,
                   accept: str | None = None) -> httpx.Response:
    headers = {"accept": accept} if accept else {}
    return await post(api, "/enrichment/mapping/data/download", {"schema_id": schema_id},
                      who.key, headers=headers)


async def rows(api: Api, schema_id: str) -> dict[str, list[str]]:
    import msgspec

    async with api.runtime.db.connect() as conn:
        found = (await conn.execute(select(mapping_row.c.row_key, mapping_row.c.vals).where(
            mapping_row.c.schema_id == schema_id))).all()
    return {r[0]: msgspec.json.decode(r[1]) for r in found}


async def test_schema_lifecycle_in_reference_shapes(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    info = check("/enrichment/mapping/schema/info", await post(
        api, "/enrichment/mapping/schema/info", {"schema_id": schema_id}, owner.key))["data"]
    assert info["schema_name"] == "CMDB Lookup"
    assert info["source_labels"] == ["host"]
    assert info["result_labels"] == ["owner", "team", "service"]
    assert info["status"] == "enabled" and info["team_id"] == 0
    assert info["creator_id"] == owner.person_id == info["updated_by"]

    second = await create(api, owner, {**CMDB, "schema_name": "Second"})
    listed = check("/enrichment/mapping/schema/list", await post(
        api, "/enrichment/mapping/schema/list", {}, owner.key))["data"]
    assert listed["total"] == 2
    assert {i["schema_id"] for i in listed["items"]} == {schema_id, second}

    team = await post(api, "/team/upsert", {"team_name": "SRE"}, owner.key)
    team_id = team.json()["data"]["team_id"]
    updated = await post(api, "/enrichment/mapping/schema/update", {
        "schema_id": schema_id, "schema_name": "CMDB v2", "team_id": team_id}, owner.key)
    check("/enrichment/mapping/schema/update", updated)
    info = (await post(api, "/enrichment/mapping/schema/info", {"schema_id": schema_id},
                       owner.key)).json()["data"]
    assert info["schema_name"] == "CMDB v2" and info["team_id"] == team_id
    assert info["description"] == CMDB["description"]  # left out: kept

    dup = await post(api, "/enrichment/mapping/schema/update", {
        "schema_id": schema_id, "schema_name": "Second"}, owner.key)
    assert dup.status_code == 400 and "schema_name" in dup.json()["error"]["message"]

    deleted = await post(api, "/enrichment/mapping/schema/delete", {"schema_id": schema_id},
                         owner.key)
    check("/enrichment/mapping/schema/delete", deleted)
    gone = await post(api, "/enrichment/mapping/schema/info", {"schema_id": schema_id},
                      owner.key)
    assert gone.status_code == 400 and gone.json()["error"]["code"] == "ResourceNotFound"
    async with api.runtime.db.connect() as conn:
        audited = (await conn.execute(select(audit_log.c.operation).where(
            audit_log.c.account_id == owner.account_id))).scalars().all()
    assert "enrichment.mapping.schema.delete" in audited


@pytest.mark.parametrize(("body", "field"), [
    ({**CMDB, "schema_name": ""}, "schema_name"),
    ({**CMDB, "schema_name": "x" * 40}, "schema_name"),
    ({**CMDB, "source_labels": []}, "source_labels"),
    ({**CMDB, "source_labels": ["a", "b", "c", "d"]}, "source_labels"),
    ({**CMDB, "result_labels": [f"r{i}" for i in range(11)]}, "result_labels"),
    ({**CMDB, "result_labels": ["host"]}, "result_labels"),
    ({**CMDB, "source_labels": ["a", "a"]}, "source_labels"),
    ({**CMDB, "source_labels": ["bad label"]}, "source_labels"),
    ({**CMDB, "team_id": 12345}, "team_id"),
    ({**CMDB, "description": "d" * 501}, "description"),
])
async def test_create_refuses_bad_schemas(api: Api, owner: Person, body: dict[str, Any],
                                          field: str) -> None:
    reply = await post(api, "/enrichment/mapping/schema/create", body, owner.key)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["code"] == "InvalidParameter"
    assert field in reply.json()["error"]["message"]
    async with api.runtime.db.connect() as conn:
        assert (await conn.execute(select(func.count()).select_from(mapping_schema))
                ).scalar_one() == 0


async def test_duplicate_name_is_refused(api: Api, owner: Person) -> None:
    await create(api, owner)
    again = await post(api, "/enrichment/mapping/schema/create", CMDB, owner.key)
    assert again.status_code == 400 and "schema_name" in again.json()["error"]["message"]


async def test_data_upsert_list_delete_truncate(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    docs = [{"host": "server01", "owner": "alice", "team": "sre", "service": "api"},
            {"host": "server02", "owner": "bob", "team": "platform", "service": "gateway"}]
    up = check("/enrichment/mapping/data/upsert", await post(
        api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": docs},
        owner.key))
    assert up["data"]["keys"] == ["server01", "server02"]
    listed = check("/enrichment/mapping/data/list", await post(
        api, "/enrichment/mapping/data/list", {"schema_id": schema_id, "orderby": "created_at",
                                               "asc": True, "limit": 1}, owner.key))["data"]
    assert listed["total"] == 2 and listed["has_next_page"] is True
    assert listed["items"][0]["key"] == "server01"
    assert listed["items"][0]["fields"] == docs[0]
    one = (await post(api, "/enrichment/mapping/data/list", {
        "schema_id": schema_id, "query": {"host": "server02"}}, owner.key)).json()["data"]
    assert [i["key"] for i in one["items"]] == ["server02"] and one["total"] == 1
    bad_query = await post(api, "/enrichment/mapping/data/list", {
        "schema_id": schema_id, "query": {"owner": "bob"}}, owner.key)
    assert bad_query.status_code == 400 and "query" in bad_query.json()["error"]["message"]

    # Replacing a row keeps its key and takes the new values.
    await post(api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
        {**docs[0], "owner": "carol"}]}, owner.key)
    assert (await rows(api, schema_id))["server01"] == ["server01", "carol", "sre", "api"]

    deleted = await post(api, "/enrichment/mapping/data/delete", {
        "schema_id": schema_id, "keys": ["server01", "nope"]}, owner.key)
    check("/enrichment/mapping/data/delete", deleted)
    assert set(await rows(api, schema_id)) == {"server02"}
    truncated = await post(api, "/enrichment/mapping/data/truncate", {"schema_id": schema_id},
                           owner.key)
    check("/enrichment/mapping/data/truncate", truncated)
    assert await rows(api, schema_id) == {}


@pytest.mark.parametrize(("doc", "field"), [
    ({"host": "h", "owner": "o", "team": "t"}, "docs[1].service"),
    ({"host": "h", "owner": "o", "team": "t", "service": "s", "extra": "x"}, "docs[1]"),
    ({"host": "", "owner": "o", "team": "t", "service": "s"}, "docs[1].host"),
    ({"host": "h" * 256, "owner": "o", "team": "t", "service": "s"}, "docs[1].host"),
    ({"host": "h", "owner": 5, "team": "t", "service": "s"}, "docs[1].owner"),
])
async def test_upsert_is_all_or_nothing(api: Api, owner: Person, doc: dict[str, Any],
                                        field: str) -> None:
    schema_id = await create(api, owner)
    good = {"host": "ok", "owner": "o", "team": "t", "service": "s"}
    reply = await post(api, "/enrichment/mapping/data/upsert",
                       {"schema_id": schema_id, "docs": [good, doc]}, owner.key)
    assert reply.status_code == 400, reply.text
    assert field in reply.json()["error"]["message"]
    assert await rows(api, schema_id) == {}


async def test_multi_label_keys_are_unambiguous(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner, {"schema_name": "Pairs",
                                          "source_labels": ["a", "b"], "result_labels": ["r"]})
    reply = await post(api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
        {"a": "x|y", "b": "z", "r": "1"}, {"a": "x", "b": "y|z", "r": "2"}]}, owner.key)
    keys = reply.json()["data"]["keys"]
    assert len(set(keys)) == 2
    found = (await post(api, "/enrichment/mapping/data/list", {
        "schema_id": schema_id, "query": {"a": "x", "b": "y|z"}}, owner.key)).json()["data"]
    assert found["items"][0]["fields"]["r"] == "2"


CSV_OK = b"host,owner,team,service\nserver01,alice,sre,api\nserver02,bob,platform,gateway\n"


@pytest.mark.parametrize("as_", ["csv", "multipart", "json"])
async def test_upload_loads_rows_and_replaces_by_default(api: Api, owner: Person,
                                                         as_: str) -> None:
    schema_id = await create(api, owner)
    await post(api, "/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
        {"host": "old", "owner": "o", "team": "t", "service": "s"}]}, owner.key)
    if as_ == "json":
        reply = await post(api, "/enrichment/mapping/data/upload",
                           {"schema_id": schema_id, "file": CSV_OK.decode()}, owner.key)
    else:
        reply = await upload(api, owner, schema_id, CSV_OK, as_=as_)
    check("/enrichment/mapping/data/upload", reply)
    assert await rows(api, schema_id) == {
        "server01": ["server01", "alice", "sre", "api"],
        "server02": ["server02", "bob", "platform", "gateway"]}


async def test_upload_without_truncate_merges_and_columns_may_be_reordered(
        api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    reply = await upload(api, owner, schema_id,
                         b"service,host,team,owner\r\nweb,server03,sre,dan\r\n", truncate=False)
    assert reply.status_code == 200, reply.text
    found = await rows(api, schema_id)
    assert set(found) == {"server01", "server02", "server03"}
    assert found["server03"] == ["server03", "dan", "sre", "web"]


@pytest.mark.parametrize(("data", "message"), [
    (b"host,owner,team\nserver01,a,b\n", "line 1"),
    (b"host,owner,team,service,extra\nh,a,b,c,d\n", "line 1"),
    (b"host,owner,team,service\nh1,a,b,c\nh2,a,b\n", "line 3"),
    (b"host,owner,team,service\nh1,a,b,c\nh2,a,b,c,d\n", "line 3"),
    (b"host,owner,team,service\nh1,a,b,c\nh2,\xff\xfe,b,c\n", "UTF-8"),
    (b"host,owner,team,service\nh1,a,b,c\n,a,b,c\n", "line 3"),
    (b"host,owner,team,service\nh1,a,b,c\nh2,a,b,\"unclosed\n", "line"),
    (b"host,owner,team,service\nh1,a,\x00,c\n", "NUL"),
    (b"", "file"),
])
async def test_bad_csv_writes_nothing(api: Api, owner: Person, data: bytes,
                                      message: str) -> None:
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    before = await rows(api, schema_id)
    reply = await upload(api, owner, schema_id, data)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["code"] == "InvalidParameter"
    assert message in reply.json()["error"]["message"], reply.json()
    assert await rows(api, schema_id) == before  # nothing truncated, nothing half-written


async def test_oversize_upload_is_413_and_writes_nothing(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    line = b"h,a,b,c\n"
    data = b"host,owner,team,service\n" + line * (MAX_UPLOAD_BYTES // len(line) + 10_000)
    reply = await upload(api, owner, schema_id, data)
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "EntityTooLarge"
    assert set(await rows(api, schema_id)) == {"server01", "server02"}


async def test_formula_cells_are_neutralised_and_round_trip(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner)
    data = (b"host,owner,team,service\n"
            b"=cmd|' /C calc'!A0,+1,-2,@SUM(A1)\n"
            b"plain,\"a,b\",\"quote\"\"d\",\xe5\xbc\xa0\xe4\xb8\x89\n")
    assert (await upload(api, owner, schema_id, data)).status_code == 200
    stored = await rows(api, schema_id)
    assert stored["=cmd|' /C calc'!A0"] == ["=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)"]
    got = await download(api, owner, schema_id)
    assert got.status_code == 200
    table = list(csv.reader(io.StringIO(got.text)))
    assert table[0] == ["host", "owner", "team", "service"]
    assert ["'=cmd|' /C calc'!A0", "'+1", "'-2", "'@SUM(A1)"] in table
    assert ["plain", "a,b", 'quote"d', "张三"] in table
    # What we wrote loads back to the same values.
    truncate = await post(api, "/enrichment/mapping/data/truncate", {"schema_id": schema_id},
                          owner.key)
    assert truncate.status_code == 200
    assert (await upload(api, owner, schema_id, got.content)).status_code == 200
    assert await rows(api, schema_id) == stored


async def test_download_as_file_and_as_envelope(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner, {**CMDB, "schema_name": "cmdb/prod"})
    await upload(api, owner, schema_id, CSV_OK)
    got = await download(api, owner, schema_id)
    assert got.status_code == 200
    assert got.headers["content-type"].startswith("text/csv")
    assert got.headers["content-disposition"] == 'attachment; filename="cmdb_prod.csv"'
    assert got.headers["service-request-id"]
    assert got.text == CSV_OK.decode()
    as_json = await download(api, owner, schema_id, accept="application/json")
    body = check("/enrichment/mapping/data/download", as_json)
    assert body["data"] == CSV_OK.decode()
    empty = await create(api, owner, {**CMDB, "schema_name": "empty"})
    assert (await download(api, owner, empty)).text == "host,owner,team,service\n"


async def test_download_streams_every_row_in_batches(api: Api, owner: Person) -> None:
    schema_id = await create(api, owner, {"schema_name": "big", "source_labels": ["k"],
                                          "result_labels": ["v"]})
    lines = [f"k{i:05d},v{i}" for i in range(2500)]
    await upload(api, owner, schema_id, ("k,v\n" + "\n".join(lines)).encode())
    chunks = [c async for c in service.stream_csv(api.runtime.db, schema_id, ["k", "v"],
                                                  batch=1000)]
    assert len(chunks) == 1 + 3  # the header, then one chunk per batch
    text = b"".join(chunks).decode().splitlines()
    assert text[0] == "k,v" and text[1:] == lines
    got = await download(api, owner, schema_id)
    assert got.text.splitlines()[1:] == lines


async def test_permissions_and_other_accounts(api: Api, owner: Person,
                                              other_owner: Person) -> None:
    schema_id = await create(api, owner)
    await upload(api, owner, schema_id, CSV_OK)
    member = await new_member(api, owner)  # built-in Member: mapping data view only
    assert (await download(api, member, schema_id)).status_code == 200
    assert (await post(api, "/enrichment/mapping/data/list", {"schema_id": schema_id},
                       member.key)).status_code == 200
    for path, body in (("/enrichment/mapping/schema/create", CMDB),
                       ("/enrichment/mapping/data/truncate", {"schema_id": schema_id}),
                       ("/enrichment/mapping/data/upsert", {"schema_id": schema_id, "docs": [
                           {"host": "h", "owner": "o", "team": "t", "service": "s"}]})):
        denied = await post(api, path, body, member.key)
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "AccessDenied"
    assert (await upload(api, member, schema_id, CSV_OK)).status_code == 403

    # A custom role with only integration view may read; with none of the four, nothing.
    perms = (await post(api, "/role/permission/list", {}, owner.key)).json()["data"]["items"]
    by_name = {p["permission_name"]: p["id"] for p in perms}
    for name, status in (("integration_view", 200), ("channel_view", 403)):
        role = await post(api, "/role/upsert", {"role_name": f"only {name}",
                                                "permission_ids": [by_name[name]]}, owner.key)
        person = await new_member(api, owner, name=f"P {name}", builtin=None,
                                  role_ids=[role.json()["data"]["role_id"]])
        assert (await download(api, person, schema_id)).status_code == status

    for path in ("/enrichment/mapping/schema/info", "/enrichment/mapping/data/download",
                 "/enrichment/mapping/data/truncate", "/enrichment/mapping/schema/delete"):
        reply = await post(api, path, {"schema_id": schema_id}, other_owner.key)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "ResourceNotFound"
    listed = await post(api, "/enrichment/mapping/schema/list", {}, other_owner.key)
    assert listed.json()["data"] == {"total": 0, "items": []}
    assert len(await rows(api, schema_id)) == 2
    assert (await post(api, "/enrichment/mapping/schema/list", {}, "nope")).status_code == 401


async def test_bad_ids_and_unknown_schemas(api: Api, owner: Person) -> None:
    for body in ({"schema_id": "xyz"}, {"schema_id": 5}, {}):
        reply = await post(api, "/enrichment/mapping/data/download", body, owner.key)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "InvalidParameter"
    reply = await post(api, "/enrichment/mapping/data/download", {"schema_id": "a" * 24},
                       owner.key)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "ResourceNotFound"
    reply = await upload(api, owner, "a" * 24, CSV_OK)
    assert reply.json()["error"]["code"] == "ResourceNotFound"
    reply = await api.raw("POST", "/enrichment/mapping/data/upload",
                          params={"app_key": owner.key}, content=CSV_OK,
                          headers={"content-type": "text/csv"})
    assert reply.status_code == 400 and "schema_id" in reply.json()["error"]["message"]


async def test_large_multipart_upload(api: Api, owner: Person) -> None:
    """A file part well over a megabyte (Starlette's per-field limit is for text fields)."""
    schema_id = await create(api, owner)
    data = b"host,owner,team,service\n" + b"".join(
        b"host-%07d,o,t,s\n" % i for i in range(150_000))
    assert len(data) > 2_000_000
    reply = await upload(api, owner, schema_id, data, as_="multipart")
    assert reply.status_code == 200, reply.text
    assert len(await rows(api, schema_id)) == 150_000
