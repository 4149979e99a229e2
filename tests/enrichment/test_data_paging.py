"""/enrichment/mapping/data/list paging: page numbers and the keyset cursor
(`search_after_ctx`) walk the same order, every row exactly once, ties on the sort column
broken by the row key; cursors of another schema, order or account are refused."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from dutyline.db.tables.enrichment import mapping_row
from tests.api.test_reference_schemas import check
from tests.enrichment.test_mapping import CMDB, create, post
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

LIST = "/enrichment/mapping/data/list"


async def _schema_with_rows(api: Api, who: Person, n: int, name: str = "CMDB") -> str:
    schema_id = await create(api, who, {**CMDB, "schema_name": name})
    docs = [{"host": f"h{i:02d}", "owner": "o", "team": "t", "service": "s"} for i in range(n)]
    assert (await post(api, "/enrichment/mapping/data/upsert",
                       {"schema_id": schema_id, "docs": docs}, who.key)).status_code == 200
    # Spread updated_at over a few values so the order has ties (broken by the key) and
    # distinct values; created_at stays one value for every row (ties only).
    async with api.runtime.db.connect() as conn:
        for i in range(n):
            await conn.execute(update(mapping_row).where(
                mapping_row.c.schema_id == schema_id, mapping_row.c.row_key == f"h{i:02d}",
            ).values(updated_at=1_700_000_000 + i % 4))
        await conn.commit()
    return schema_id


def _expected(n: int, orderby: str, asc: bool) -> list[str]:
    def sort_key(key: str) -> tuple[int, str]:
        i = int(key[1:])
        return (i % 4 if orderby == "updated_at" else 0, key)

    return sorted((f"h{i:02d}" for i in range(n)), key=sort_key, reverse=not asc)


async def _walk(api: Api, who: Person, body: dict[str, Any]) -> tuple[list[str], int]:
    seen: list[str] = []
    pages, cursor = 0, ""
    while True:
        reply = await post(api, LIST, {**body, **({"search_after_ctx": cursor} if cursor
                                                  else {})}, who.key)
        data = check(LIST, reply)["data"]
        pages += 1
        assert data["total"] == 23
        seen += [item["key"] for item in data["items"]]
        assert data["has_next_page"] is bool(data["search_after_ctx"])
        if not data["has_next_page"]:
            return seen, pages
        cursor = data["search_after_ctx"]


@pytest.mark.parametrize(("orderby", "asc"), [("updated_at", False), ("updated_at", True),
                                              ("created_at", True)])
async def test_cursor_walks_every_row_once_in_order(api: Api, owner: Person, orderby: str,
                                                    asc: bool) -> None:
    schema_id = await _schema_with_rows(api, owner, 23)
    body = {"schema_id": schema_id, "orderby": orderby, "asc": asc, "limit": 5}
    seen, pages = await _walk(api, owner, body)
    assert seen == _expected(23, orderby, asc)
    assert pages == 5
    # Page numbers walk the same order (the cursor of page 1 equals going to page 2).
    by_page: list[str] = []
    for p in range(1, 6):
        data = (await post(api, LIST, {**body, "p": p}, owner.key)).json()["data"]
        by_page += [item["key"] for item in data["items"]]
        assert data["has_next_page"] is (p < 5)
    assert by_page == seen


async def test_cursor_ignores_page_number_and_sees_rows_written_meanwhile(
        api: Api, owner: Person) -> None:
    schema_id = await _schema_with_rows(api, owner, 23)
    body = {"schema_id": schema_id, "orderby": "created_at", "asc": True, "limit": 10}
    first = (await post(api, LIST, body, owner.key)).json()["data"]
    # A row deleted before the cursor position does not shift the next page (it would with
    # an offset).
    assert (await post(api, "/enrichment/mapping/data/delete",
                       {"schema_id": schema_id, "keys": ["h00"]}, owner.key)).status_code == 200
    second = (await post(api, LIST, {**body, "p": 3,
                                     "search_after_ctx": first["search_after_ctx"]},
                         owner.key)).json()["data"]
    assert [i["key"] for i in second["items"]] == [f"h{i:02d}" for i in range(10, 20)]


async def test_foreign_or_broken_cursors_are_refused(api: Api, owner: Person,
                                                     other_owner: Person) -> None:
    schema_id = await _schema_with_rows(api, owner, 23)
    other_schema = await _schema_with_rows(api, owner, 23, name="Other")
    body = {"schema_id": schema_id, "limit": 5}
    cursor = (await post(api, LIST, body, owner.key)).json()["data"]["search_after_ctx"]
    assert cursor
    for bad in ({"search_after_ctx": "not a cursor!"},
                {"search_after_ctx": cursor[:-3]},
                {"search_after_ctx": cursor, "asc": True},
                {"search_after_ctx": cursor, "orderby": "created_at"},
                {"search_after_ctx": cursor, "schema_id": other_schema}):
        reply = await post(api, LIST, {**body, **bad}, owner.key)
        assert reply.status_code == 400, (bad, reply.text)
        error = reply.json()["error"]
        assert error["code"] == "InvalidParameter" and "search_after_ctx" in error["message"]
    # Another account cannot read the schema at all, cursor or not.
    theirs = await post(api, LIST, {**body, "search_after_ctx": cursor}, other_owner.key)
    assert theirs.status_code == 400
    assert theirs.json()["error"]["code"] == "ResourceNotFound"
