"""Rules of status pages and their structure.

`url_name` is unique across the server (it is the public address). An internal page gets a
login token for its visitors, returned once and stored as a hash. Sections and components
belong to one page; a component's section must be a section of the same page. Deleting a
section that still holds components is refused (ReferenceExist): moving them somewhere
silently would change the public page in a way nobody asked for; move or delete them first.

Every service has the one shape `(conn, actor, *, domain arguments)`, raises ApiErrors,
reads the time from `actor.clock` and never commits: the API's endpoints and the Statuspage
migration (as `Actor.system`) both call them. Each write checks status page management and
notes its audit entry with the ids the API's row names (api/access.py); reads admit either
status page permission."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import STATUS_PAGE_EVENT_MANAGE, STATUS_PAGE_MANAGE
from dutyline.db.tables.status_page import status_component, status_section
from dutyline.kit.ids import hex_id, numeric_id
from dutyline.status_page import cache, tokens
from dutyline.status_page.page import repository as repo
from dutyline.status_page.page.schemas import (
    ComponentItem,
    PageInfo,
    PageItem,
    SectionItem,
)

PAGE = "status page"
SECTION = "section"
COMPONENT = "component"
COMPONENT_STATUSES = frozenset(
    {"operational", "degraded", "partial_outage", "full_outage", "under_maintenance"}
)


@dataclass(frozen=True)
class CreatedPage:
    page_id: int
    page_name: str
    url_name: str
    # Internal pages only; shown once.
    access_token: str


def _noted_only(_result: object) -> tuple[()]:
    # The result is no audit target (a login token, or an id noted beside its page's).
    return ()


@lru_cache(maxsize=1024)
def valid_time_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def public_url(base_url: str, url_name: str) -> str:
    return f"{base_url.rstrip('/')}/status/{url_name}"


async def require_page(
    conn: AsyncConnection, actor: Actor, *, page_id: int, lock: bool = False
) -> Any:
    """The actor's page, or 400 ResourceNotFound (another account's page included).
    `lock`: hold the page row until commit (writes that recompute statuses)."""
    row = await repo.get_page(conn, actor.account_id, page_id, for_update=lock)
    if row is None:
        raise errors.not_found(PAGE, page_id)
    return row


def require_page_sync(conn: Connection, actor: Actor, *, page_id: int) -> Any:
    """`require_page` inside a sync unit of database work (never locking: it reads)."""
    row = repo.get_page_sync(conn, actor.account_id, page_id)
    if row is None:
        raise errors.not_found(PAGE, page_id)
    return row


async def page_changed(conn: AsyncConnection, page_id: int) -> None:
    """What every write that visitors can see ends with (after `repo.touch_page`)."""
    await cache.invalidate(conn, page_id)


async def mark_page_changed(conn: AsyncConnection, actor: Actor, *, page_id: int) -> None:
    await repo.touch_page(conn, page_id, actor.now_s)
    await page_changed(conn, page_id)


def _clean_name(field: str, value: str) -> str:
    name = value.strip()
    if not name:
        raise errors.invalid(field, "is required")
    return name


async def _check_url_name(conn: AsyncConnection, url_name: str, page_id: int = 0) -> None:
    taken = await repo.page_by_url_name(conn, url_name)
    if taken is not None and taken.page_id != page_id:
        raise errors.invalid("url_name", "is already taken")


def _check_time_zone(time_zone: str) -> None:
    if not valid_time_zone(time_zone):
        raise errors.invalid("time_zone", "is not a known IANA time zone")


@writes("/status-page/create", STATUS_PAGE_MANAGE,
        targets=lambda created: [created.page_id])
async def create_page(
    conn: AsyncConnection, actor: Actor, *, page_name: str, url_name: str,
    page_type: str = "public", description: str = "", time_zone: str = "UTC",
) -> CreatedPage:
    """Create a page. `url_name` must already be lower-case [a-z0-9-] (the request schema
    checks it); taken by any account → 400 naming url_name."""
    name = _clean_name("page_name", page_name)
    if page_type not in ("public", "internal"):
        raise errors.invalid("page_type", "must be public or internal")
    _check_time_zone(time_zone)
    await _check_url_name(conn, url_name)
    token = tokens.new_token() if page_type == "internal" else ""
    page_id = numeric_id()
    now_s = actor.now_s
    try:
        await repo.insert_page(conn, {
            "page_id": page_id, "account_id": actor.account_id, "page_name": name,
            "url_name": url_name, "page_type": page_type, "description": description,
            "time_zone": time_zone, "status": "enabled",
            "access_token_hash": tokens.token_hash(token) if token else "",
            "created_at": now_s, "updated_at": now_s,
        })
    except IntegrityError:
        # Lost a race with a concurrent create of the same address.
        raise errors.invalid("url_name", "is already taken") from None
    await page_changed(conn, page_id)
    return CreatedPage(page_id, name, url_name, token)


@writes("/status-page/update", STATUS_PAGE_MANAGE, targets=_noted_only)
async def update_page(
    conn: AsyncConnection, actor: Actor, *, page_id: int, page_name: str | None = None,
    url_name: str | None = None, page_type: str | None = None, description: str | None = None,
    time_zone: str | None = None, rotate_access_token: bool = False,
) -> str:
    """Change a page's fields (None leaves one unchanged). Returns a new login token when
    this update issued one (page turned internal, or rotated), else ""."""
    row = await require_page(conn, actor, page_id=page_id)
    values: dict[str, Any] = {"updated_at": max(actor.now_s, row.updated_at)}
    if page_name is not None:
        values["page_name"] = _clean_name("page_name", page_name)
    if url_name is not None and url_name != row.url_name:
        await _check_url_name(conn, url_name, page_id)
        values["url_name"] = url_name
    if description is not None:
        values["description"] = description
    if time_zone is not None:
        _check_time_zone(time_zone)
        values["time_zone"] = time_zone
    new_type = page_type or row.page_type
    if page_type is not None and page_type not in ("public", "internal"):
        raise errors.invalid("page_type", "must be public or internal")
    if rotate_access_token and new_type != "internal":
        raise errors.invalid("rotate_access_token", "only internal pages have a login token")
    token = ""
    if new_type == "internal" and (rotate_access_token or row.page_type != "internal"):
        token = tokens.new_token()
        values["access_token_hash"] = tokens.token_hash(token)
    elif new_type == "public":
        values["access_token_hash"] = ""
    values["page_type"] = new_type
    try:
        await repo.update_page(conn, page_id, values)
    except IntegrityError:
        raise errors.invalid("url_name", "is already taken") from None
    await page_changed(conn, page_id)
    actor.note_audit_targets(page_id)
    return token


@writes("/status-page/delete", STATUS_PAGE_MANAGE, dangerous=True)
async def delete_page(conn: AsyncConnection, actor: Actor, *, page_id: int) -> None:
    """Delete a page with its structure, changes, timelines and subscribers."""
    await require_page(conn, actor, page_id=page_id)
    await repo.delete_page(conn, page_id)
    await page_changed(conn, page_id)
    actor.note_audit_targets(page_id)


@writes("/status-page/section/upsert", STATUS_PAGE_MANAGE, targets=_noted_only)
async def upsert_section(
    conn: AsyncConnection, actor: Actor, *, page_id: int, section_id: str = "",
    name: str, description: str = "", order_id: int | None = None,
) -> str:
    """Create a section (empty `section_id`) or update one of this page. Returns its id."""
    await require_page(conn, actor, page_id=page_id, lock=True)
    now_s = actor.now_s
    clean = _clean_name("name", name)
    if section_id:
        if await repo.get_section(conn, page_id, section_id) is None:
            raise errors.not_found(SECTION, section_id)
        values: dict[str, Any] = {"name": clean, "description": description,
                                  "updated_at": now_s}
        if order_id is not None:
            values["order_id"] = order_id
        await repo.update_section(conn, section_id, values)
    else:
        section_id = hex_id()
        order = order_id if order_id is not None else await repo.next_order(
            conn, status_section, page_id)
        await repo.insert_section(conn, {
            "section_id": section_id, "page_id": page_id, "account_id": actor.account_id,
            "name": clean, "description": description, "order_id": order,
            "created_at": now_s, "updated_at": now_s,
        })
    await mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, section_id)
    return section_id


@writes("/status-page/section/delete", STATUS_PAGE_MANAGE)
async def delete_section(
    conn: AsyncConnection, actor: Actor, *, page_id: int, section_id: str
) -> None:
    await require_page(conn, actor, page_id=page_id, lock=True)
    if await repo.get_section(conn, page_id, section_id) is None:
        raise errors.not_found(SECTION, section_id)
    if held := await repo.count_components_in(conn, page_id, section_id):
        raise errors.ReferenceExist(
            "Section {id} still holds {count} components; move or delete them first",
            id=section_id, count=held,
        )
    await repo.delete_section(conn, section_id)
    await mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, section_id)


@writes("/status-page/component/upsert", STATUS_PAGE_MANAGE, targets=_noted_only)
async def upsert_component(
    conn: AsyncConnection, actor: Actor, *, page_id: int, component_id: str = "",
    name: str, section_id: str | None = None, description: str | None = None,
    available_since_seconds: int | None = None, order_id: int | None = None,
    hide_uptime: bool | None = None, hide_all: bool | None = None, status: str | None = None,
) -> str:
    """Create a component (empty `component_id`) or update one of this page; None leaves a
    field unchanged (or takes its default on create). Returns the component's id."""
    await require_page(conn, actor, page_id=page_id, lock=True)
    now_s = actor.now_s
    clean = _clean_name("name", name)
    if section_id and await repo.get_section(conn, page_id, section_id) is None:
        raise errors.invalid("section_id", "is not a section of this page")
    if status is not None and status not in COMPONENT_STATUSES:
        raise errors.invalid("status", "is not a component status")
    values: dict[str, Any] = {"name": clean, "updated_at": now_s}
    optional = {"section_id": section_id, "description": description,
                "available_since_seconds": available_since_seconds, "order_id": order_id,
                "hide_uptime": hide_uptime, "hide_all": hide_all, "status": status}
    values.update({k: v for k, v in optional.items() if v is not None})
    if component_id:
        if await repo.get_component(conn, page_id, component_id) is None:
            raise errors.not_found(COMPONENT, component_id)
        await repo.update_component(conn, component_id, values)
    else:
        component_id = hex_id()
        if order_id is None:
            values["order_id"] = await repo.next_order(conn, status_component, page_id)
        values.setdefault("available_since_seconds", now_s)
        await repo.insert_component(conn, {
            "section_id": "", "description": "", "status": "operational",
            "hide_uptime": False, "hide_all": False, **values,
            "component_id": component_id, "page_id": page_id, "account_id": actor.account_id,
            "created_at": now_s,
        })
    await mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, component_id)
    return component_id


@writes("/status-page/component/delete", STATUS_PAGE_MANAGE)
async def delete_component(
    conn: AsyncConnection, actor: Actor, *, page_id: int, component_id: str
) -> None:
    """Delete a component. Timeline entries that mention it keep their history; reads skip
    components that no longer exist."""
    await require_page(conn, actor, page_id=page_id, lock=True)
    if await repo.get_component(conn, page_id, component_id) is None:
        raise errors.not_found(COMPONENT, component_id)
    await repo.delete_component(conn, component_id)
    await mark_page_changed(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id, component_id)


def page_item(row: Any, base_url: str) -> PageItem:
    return PageItem(
        page_id=row.page_id, page_name=row.page_name, url_name=row.url_name,
        page_type=row.page_type, description=row.description, time_zone=row.time_zone,
        status=row.status, public_url=public_url(base_url, row.url_name),
        created_at=row.created_at, updated_at=row.updated_at,
    )


def component_fields(row: Any) -> dict[str, Any]:
    """The one mapper of a component row: the fields every component record shows
    (ComponentFields); each record adds the status that fits where it appears."""
    return {
        "component_id": row.component_id, "section_id": row.section_id, "name": row.name,
        "description": row.description, "available_since_seconds": row.available_since_seconds,
        "order_id": row.order_id, "hide_uptime": bool(row.hide_uptime),
        "hide_all": bool(row.hide_all),
    }


def component_item(row: Any) -> ComponentItem:
    return ComponentItem(**component_fields(row), status=row.status)


@reads_sync(STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)
def list_pages_sync(
    conn: Connection, actor: Actor, *, offset: int, limit: int, deps: Deps
) -> tuple[int, list[PageInfo]]:
    """(total, one page of the account's pages with their structure), newest first."""
    total, rows = repo.list_pages_sync(conn, actor.account_id, offset=offset, limit=limit)
    page_ids = [r.page_id for r in rows]
    sections = repo.sections_of_sync(conn, page_ids)
    components = repo.components_of_sync(conn, page_ids)
    return total, [_page_info(page_item(r, deps.base_url), sections[r.page_id],
                              components[r.page_id]) for r in rows]


def _page_info(item: PageItem, sections: list[Any], components: list[Any]) -> PageInfo:
    return PageInfo(
        **{f: getattr(item, f) for f in item.__struct_fields__},
        sections=[section_item(s) for s in sections],
        components=[component_item(c) for c in components],
    )


def section_item(row: Any) -> SectionItem:
    return SectionItem(section_id=row.section_id, name=row.name, description=row.description,
                       order_id=row.order_id)


@reads_sync(STATUS_PAGE_MANAGE, STATUS_PAGE_EVENT_MANAGE)
def page_info_sync(conn: Connection, actor: Actor, *, page_id: int, deps: Deps) -> PageInfo:
    row = require_page_sync(conn, actor, page_id=page_id)
    return _page_info(page_item(row, deps.base_url), repo.sections_sync(conn, page_id),
                      repo.components_sync(conn, page_id))
