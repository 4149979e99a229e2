"""Every query of pages, sections and components. Each is scoped by account_id (and by
page_id below a page): that is the visibility rule."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_import_ref,
    status_page,
    status_section,
    status_subscriber,
    status_template,
)


async def get_page(
    conn: AsyncConnection, account_id: int, page_id: int, *, for_update: bool = False
) -> Row[Any] | None:
    if not for_update:
        return await conn.run_sync(get_page_sync, account_id, page_id)
    # PostgreSQL: writes under one page queue here, so each recomputes statuses from
    # what the one before it committed. SQLite has one writer already (no FOR UPDATE).
    return (await conn.execute(_GET_PAGE.with_for_update(), {
        "account_id": account_id, "page_id": page_id})).first()


# -- reads: sync, for read operations' units of database work (api/operation.py); the async
# forms run the same functions. Statements are built once, with bound parameters.

_GET_PAGE = select(status_page).where(status_page.c.account_id == bindparam("account_id"),
                                      status_page.c.page_id == bindparam("page_id"))


def get_page_sync(conn: Connection, account_id: int, page_id: int) -> Row[Any] | None:
    return conn.execute(_GET_PAGE, {"account_id": account_id, "page_id": page_id}).first()


async def page_by_id(conn: AsyncConnection, page_id: int) -> Row[Any] | None:
    """Any account's page by id: for jobs, whose payload names the page they serve."""
    return (await conn.execute(select(status_page).where(status_page.c.page_id == page_id))
            ).first()


async def page_by_url_name(conn: AsyncConnection, url_name: str) -> Row[Any] | None:
    """Any account's page by its public address (url_name is unique across the server)."""
    stmt = select(status_page).where(status_page.c.url_name == url_name)
    return (await conn.execute(stmt)).first()


_COUNT_PAGES = select(func.count()).select_from(status_page).where(
    status_page.c.account_id == bindparam("account_id"))
_PAGES = (select(status_page).where(status_page.c.account_id == bindparam("account_id"))
          .order_by(status_page.c.created_at.desc(), status_page.c.page_id.desc())
          .offset(bindparam("offset")).limit(bindparam("limit")))


def list_pages_sync(
    conn: Connection, account_id: int, *, offset: int, limit: int
) -> tuple[int, list[Row[Any]]]:
    total = conn.execute(_COUNT_PAGES, {"account_id": account_id}).scalar_one()
    rows = conn.execute(_PAGES, {"account_id": account_id, "offset": offset, "limit": limit})
    return int(total), list(rows.all())


async def insert_page(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(status_page).values(**values))


async def update_page(conn: AsyncConnection, page_id: int, values: dict[str, Any]) -> None:
    await conn.execute(update(status_page).where(status_page.c.page_id == page_id).values(**values))


async def touch_page(conn: AsyncConnection, page_id: int, now_s: int) -> None:
    """Bump the page's updated_at (what /status-page/info and the feeds answer; the public
    cache follows the page's change signal instead). Never backwards: a write stamped with an
    older clock must not hide a newer one."""
    await conn.execute(
        update(status_page)
        .where(status_page.c.page_id == page_id, status_page.c.updated_at < now_s)
        .values(updated_at=now_s)
    )


async def delete_page(conn: AsyncConnection, page_id: int) -> None:
    for table in (status_change_update, status_change, status_component, status_section,
                  status_subscriber, status_template, status_import_ref):
        await conn.execute(delete(table).where(table.c.page_id == page_id))
    await conn.execute(delete(status_page).where(status_page.c.page_id == page_id))


def _in_display_order(table: Any, id_column: Any) -> Select[Any]:
    """Sections and components show by their order_id, then by age, then by id."""
    return select(table).order_by(table.c.order_id, table.c.created_at, id_column)


_SECTIONS_OF = _in_display_order(status_section, status_section.c.section_id).where(
    status_section.c.page_id.in_(bindparam("page_ids", expanding=True)))
_COMPONENTS_OF = _in_display_order(status_component, status_component.c.component_id).where(
    status_component.c.page_id.in_(bindparam("page_ids", expanding=True)))
_SECTIONS = _in_display_order(status_section, status_section.c.section_id).where(
    status_section.c.page_id == bindparam("page_id"))
_COMPONENTS = _in_display_order(status_component, status_component.c.component_id).where(
    status_component.c.page_id == bindparam("page_id"))


def _by_page_sync(conn: Connection, stmt: Select[Any],
                  page_ids: list[int]) -> dict[int, list[Row[Any]]]:
    found: dict[int, list[Row[Any]]] = {p: [] for p in page_ids}
    if page_ids:
        for r in conn.execute(stmt, {"page_ids": page_ids}).all():
            found[r.page_id].append(r)
    return found


def sections_sync(conn: Connection, page_id: int) -> list[Row[Any]]:
    return list(conn.execute(_SECTIONS, {"page_id": page_id}).all())


def components_sync(conn: Connection, page_id: int) -> list[Row[Any]]:
    return list(conn.execute(_COMPONENTS, {"page_id": page_id}).all())


def sections_of_sync(conn: Connection, page_ids: list[int]) -> dict[int, list[Row[Any]]]:
    """The sections of several pages (one query), each page's in display order."""
    return _by_page_sync(conn, _SECTIONS_OF, page_ids)


def components_of_sync(conn: Connection, page_ids: list[int]) -> dict[int, list[Row[Any]]]:
    """The components of several pages (one query), each page's in display order."""
    return _by_page_sync(conn, _COMPONENTS_OF, page_ids)


async def sections(conn: AsyncConnection, page_id: int) -> list[Row[Any]]:
    return await conn.run_sync(sections_sync, page_id)


async def components(conn: AsyncConnection, page_id: int) -> list[Row[Any]]:
    return await conn.run_sync(components_sync, page_id)


async def get_section(conn: AsyncConnection, page_id: int, section_id: str) -> Row[Any] | None:
    stmt = select(status_section).where(
        status_section.c.page_id == page_id, status_section.c.section_id == section_id
    )
    return (await conn.execute(stmt)).first()


async def next_order(conn: AsyncConnection, table: Any, page_id: int) -> int:
    top = (await conn.execute(
        select(func.max(table.c.order_id)).where(table.c.page_id == page_id)
    )).scalar_one()
    return 1 if top is None else int(top) + 1


async def insert_section(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(status_section).values(**values))


async def update_section(conn: AsyncConnection, section_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        update(status_section).where(status_section.c.section_id == section_id).values(**values)
    )


async def count_components_in(conn: AsyncConnection, page_id: int, section_id: str) -> int:
    return int((await conn.execute(
        select(func.count()).select_from(status_component).where(
            status_component.c.page_id == page_id, status_component.c.section_id == section_id)
    )).scalar_one())


async def delete_section(conn: AsyncConnection, section_id: str) -> None:
    await conn.execute(delete(status_section).where(status_section.c.section_id == section_id))


async def get_component(
    conn: AsyncConnection, page_id: int, component_id: str
) -> Row[Any] | None:
    stmt = select(status_component).where(
        status_component.c.page_id == page_id, status_component.c.component_id == component_id
    )
    return (await conn.execute(stmt)).first()


_COMPONENTS_BY_ID = select(status_component).where(
    status_component.c.page_id == bindparam("page_id"),
    status_component.c.component_id.in_(bindparam("component_ids", expanding=True)))


def components_by_id_sync(conn: Connection, page_id: int,
                          component_ids: set[str]) -> dict[str, Row[Any]]:
    if not component_ids:
        return {}
    rows = conn.execute(_COMPONENTS_BY_ID, {"page_id": page_id,
                                            "component_ids": sorted(component_ids)})
    return {r.component_id: r for r in rows}


async def components_by_id(
    conn: AsyncConnection, page_id: int, component_ids: set[str]
) -> dict[str, Row[Any]]:
    return await conn.run_sync(components_by_id_sync, page_id, component_ids)


async def insert_component(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(status_component).values(**values))


async def update_component(
    conn: AsyncConnection, component_id: str, values: dict[str, Any]
) -> None:
    await conn.execute(
        update(status_component)
        .where(status_component.c.component_id == component_id)
        .values(**values)
    )


async def set_component_statuses(
    conn: AsyncConnection, page_id: int, statuses: dict[str, str], now_s: int
) -> None:
    """Write recomputed statuses; rows already right are left alone."""
    for component_id, status in statuses.items():
        await conn.execute(
            update(status_component)
            .where(status_component.c.page_id == page_id,
                   status_component.c.component_id == component_id,
                   status_component.c.status != status)
            .values(status=status, updated_at=now_s)
        )


async def delete_component(conn: AsyncConnection, component_id: str) -> None:
    await conn.execute(
        delete(status_component).where(status_component.c.component_id == component_id)
    )
