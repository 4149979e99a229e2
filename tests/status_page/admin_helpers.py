"""Helpers of the status page admin API tests: a page with sections and components."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

_names = itertools.count(1)


@dataclass(frozen=True)
class Page:
    page_id: int
    url_name: str
    section_id: str
    components: list[str]


async def ok(api: Api, path: str, body: dict[str, Any], key: str) -> Any:
    reply = await api.call(path, body, key=key)
    assert reply.status == 200, (path, reply.body)
    return reply.data


async def make_page(api: Api, who: Person, *, components: int = 2,
                    page_type: str = "public") -> Page:
    url_name = f"page-{next(_names)}-{who.account_id % 10_000}"
    page_id = (await ok(api, "/status-page/create", {
        "page_name": "Acme Status", "url_name": url_name, "page_type": page_type},
        who.key))["page_id"]
    section_id = (await ok(api, "/status-page/section/upsert",
                           {"page_id": page_id, "name": "Core"}, who.key))["section_id"]
    ids = []
    for i in range(components):
        ids.append((await ok(api, "/status-page/component/upsert", {
            "page_id": page_id, "section_id": section_id, "name": f"Service {i}"},
            who.key))["component_id"])
    return Page(page_id, url_name, section_id, ids)


async def component_statuses(api: Api, who: Person, page_id: int) -> dict[str, str]:
    info = await ok(api, "/status-page/info", {"page_id": page_id}, who.key)
    return {c["component_id"]: c["status"] for c in info["components"]}


async def make_incident(api: Api, who: Person, page: Page, *,
                        updates: list[dict[str, Any]] | None = None,
                        **extra: Any) -> int:
    body = {"page_id": page.page_id, "type": "incident", "title": "API errors",
            "status": "investigating",
            "updates": updates or [{"description": "Looking",
                                    "component_changes": [{"component_id": page.components[0],
                                                           "status": "degraded"}]}],
            **extra}
    return int((await ok(api, "/status-page/change/create", body, who.key))["change_id"])


async def change_info(api: Api, who: Person, page_id: int, change_id: int) -> Any:
    return await ok(api, "/status-page/change/info", {"page_id": page_id,
                                                      "change_id": change_id}, who.key)


async def member_with(api: Api, owner: Person, permission_id: int, name: str) -> Person:
    """A member whose only role grants one permission (201 pages, 202 events)."""
    from tests.fixtures.accounts import new_member

    role_id = (await ok(api, "/role/upsert", {"role_name": f"R{permission_id}{name}"[:39],
                                              "permission_ids": [permission_id]},
                        owner.key))["role_id"]
    return await new_member(api, owner, name=name, builtin=None, role_ids=[role_id])


def check_reference_schema(name: str, value: Any) -> None:
    """`value` validates against the reference's components/schemas/<name>."""
    from jsonschema import Draft202012Validator

    from tests.fixtures.reference import reference

    root = {"components": reference()["components"],
            "$ref": f"#/components/schemas/{name}"}
    problems = sorted(Draft202012Validator(root).iter_errors(value), key=str)
    assert not problems, [f"{list(e.absolute_path)}: {e.message}" for e in problems]


async def jobs_of(api: Api, kind: str) -> list[dict[str, Any]]:
    """Payloads of the jobs of one kind, oldest first."""
    import json

    from sqlalchemy import select

    from dutyline.db.tables.work import job

    async with api.runtime.db.transaction() as conn:
        rows = (await conn.execute(select(job.c.payload).where(job.c.kind == kind)
                                   .order_by(job.c.id))).all()
    return [json.loads(r.payload) for r in rows]
