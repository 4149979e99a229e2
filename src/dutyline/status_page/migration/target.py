"""Writing what the source holds into the target page, one chunk at a time.

Why a bulk path and not one service call per row: a page's history is thousands of changes
with several timeline entries each, and the timeline service recomputes a change's status
(and its components') after every entry, one round trip each. An import writes a finished
history instead, so this module writes each chunk with a handful of multi-row statements and
keeps the same invariants itself:

- a change's `status` is its latest timeline entry's (entries sorted by time, `seq` breaking
  ties in source order), and `close_at_seconds` follows from it;
- components take the source's *current* status; history never changes a component's status
  (the source's current statuses already reflect its open incidents);
- subscribers are unique per (page, e-mail), lower-cased; an existing row, whatever its state
  (an unsubscribed address included), is left alone and counted as skipped;
- every write bumps the page's `updated_at` and its in-process cache version, as the status
  page services do, so public pages re-render.

`status_import_ref` maps each imported source object to ours, per target page, so a resumed
chunk or a rerun skips what exists instead of duplicating it.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert, select, update
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
from dutyline.kit.ids import hex_id, numeric_id
from dutyline.status_page import cache
from dutyline.status_page.migration.mapping import (
    COMPONENT_STATUS,
    INCIDENT_STATUS,
    MAINTENANCE_STATUS,
    MappedChange,
    map_change,
    text,
    to_seconds,
    warn,
)
from dutyline.status_page.tokens import unsubscribe_token_hash

Row = dict[str, Any]
_URL_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TERMINAL = {"resolved", "completed"}


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def page_of_account(conn: AsyncConnection, account_id: int, page_id: int) -> Row | None:
    """The page when it belongs to the account (another account's page: None, as missing)."""
    row = (await conn.execute(
        select(status_page.c.page_id, status_page.c.url_name)
        .where(status_page.c.page_id == page_id, status_page.c.account_id == account_id)
    )).first()
    return None if row is None else dict(row._mapping)


async def create_page(conn: AsyncConnection, *, account_id: int, source: Row, now: int) -> int:
    """A new page named after the source, its address from the source's subdomain."""
    base = _URL_NAME_CHARS.sub("-", str(source.get("subdomain") or source.get("name") or "")
                               .lower()).strip("-")[:48]
    if not base or not base[0].isalpha():
        base = f"page-{base}".rstrip("-")[:48]
    url_name = base
    taken = (await conn.execute(
        select(status_page.c.url_name).where(status_page.c.url_name == url_name)
    )).first()
    if taken is not None:
        url_name = f"{base}-{secrets.token_hex(3)}"
    page_id = numeric_id()
    time_zone = text(source.get("time_zone"), 64) or "UTC"
    await conn.execute(insert(status_page).values(
        page_id=page_id, account_id=account_id,
        page_name=text(source.get("name"), 128) or "Imported status page",
        url_name=url_name, page_type="public",
        description=text(source.get("page_description"), 1024), time_zone=time_zone,
        created_at=now, updated_at=now,
    ))
    return page_id


async def touch_page(conn: AsyncConnection, page_id: int, now: int) -> None:
    await conn.execute(update(status_page).where(status_page.c.page_id == page_id)
                       .values(updated_at=now))
    cache.invalidate(page_id)


async def known_refs(
    conn: AsyncConnection, page_id: int, kind: str, source_ids: Iterable[str] | None = None
) -> dict[str, str]:
    """source id -> our id, for the given source ids (all of the kind when None)."""
    query = select(status_import_ref.c.source_id, status_import_ref.c.target_id).where(
        status_import_ref.c.page_id == page_id, status_import_ref.c.kind == kind)
    if source_ids is not None:
        wanted = list(source_ids)
        if not wanted:
            return {}
        query = query.where(status_import_ref.c.source_id.in_(wanted))
    return {r.source_id: r.target_id for r in await conn.execute(query)}


async def _remember(conn: AsyncConnection, page_id: int, kind: str,
                    pairs: list[tuple[str, str]]) -> None:
    if pairs:
        await conn.execute(insert(status_import_ref), [
            {"page_id": page_id, "kind": kind, "source_id": s, "target_id": t} for s, t in pairs
        ])


def _new_items(items: list[Row], known: dict[str, str]) -> list[Row]:
    """Items not imported yet, each source id once (a list that shifted between two page
    reads can repeat an item)."""
    seen: set[str] = set()
    fresh = []
    for item in items:
        sid = str(item.get("id") or "")
        if sid and sid not in known and sid not in seen:
            seen.add(sid)
            fresh.append(item)
    return fresh


async def import_sections(conn: AsyncConnection, page_id: int, account_id: int,
                          groups: list[Row], now: int) -> int:
    fresh = _new_items(groups, await known_refs(conn, page_id, "section",
                                                (str(g.get("id")) for g in groups)))
    rows: list[Row] = [{
        "section_id": hex_id(), "page_id": page_id, "account_id": account_id,
        "name": text(g.get("name"), 255) or "(unnamed)",
        "description": text(g.get("description"), 1024),
        "order_id": _int(g.get("position")), "created_at": now, "updated_at": now,
    } for g in fresh]
    if rows:
        await conn.execute(insert(status_section), rows)
        await _remember(conn, page_id, "section",
                        [(str(g["id"]), r["section_id"]) for g, r in zip(fresh, rows, strict=True)])
    return len(rows)


async def import_components(conn: AsyncConnection, page_id: int, account_id: int,
                            components: list[Row], now: int, warnings: list[str]) -> int:
    # A group can also be listed as a component (`group: true`); it is a section here.
    items = [c for c in components if not c.get("group")]
    fresh = _new_items(items, await known_refs(conn, page_id, "component",
                                               (str(c.get("id")) for c in items)))
    sections = await known_refs(conn, page_id, "section",
                                {str(c.get("group_id")) for c in fresh if c.get("group_id")})
    rows: list[Row] = []
    refs: list[tuple[str, str]] = []
    for c in fresh:
        status = COMPONENT_STATUS.get(str(c.get("status")))
        if status is None:
            warn(warnings, f"component {c.get('id')} ({text(c.get('name'), 255)}) has unknown "
                           f"status {c.get('status')!r}; not imported")
            continue
        component_id = hex_id()
        row = {
            "component_id": component_id, "page_id": page_id, "account_id": account_id,
            "section_id": sections.get(str(c.get("group_id") or ""), ""),
            "name": text(c.get("name"), 255) or "(unnamed)",
            "description": text(c.get("description"), 1024), "status": status,
            "order_id": _int(c.get("position")),
            "available_since_seconds": to_seconds(c.get("start_date")),
            "hide_uptime": c.get("showcase") is False, "hide_all": False,
            "created_at": now, "updated_at": now,
        }
        rows.append(row)
        refs.append((str(c["id"]), component_id))
    if rows:
        await conn.execute(insert(status_component), rows)
        await _remember(conn, page_id, "component", refs)
    return len(rows)


async def import_templates(conn: AsyncConnection, page_id: int, account_id: int,
                           templates: list[Row], now: int, warnings: list[str]) -> int:
    fresh = _new_items(templates, await known_refs(conn, page_id, "template",
                                                   (str(t.get("id")) for t in templates)))
    rows: list[Row] = []
    for t in fresh:
        raw_status = t.get("update_status")
        status = ""
        if raw_status:
            status = INCIDENT_STATUS.get(str(raw_status)) or MAINTENANCE_STATUS.get(
                str(raw_status), "")
            if not status:
                warn(warnings, f"template {t.get('id')} ({text(t.get('name'), 255)}): unknown "
                               f"update_status {raw_status!r} left empty")
        rows.append({
            "template_id": hex_id(), "page_id": page_id, "account_id": account_id,
            "name": text(t.get("name"), 255) or "(unnamed)", "title": text(t.get("title"), 512),
            "body": text(t.get("body"), 65_536), "update_status": status,
            "created_at": now, "updated_at": now,
        })
    if rows:
        await conn.execute(insert(status_template), rows)
        pairs = [(str(t["id"]), r["template_id"]) for t, r in zip(fresh, rows, strict=True)]
        await _remember(conn, page_id, "template", pairs)
    return len(rows)


async def _component_index(conn: AsyncConnection, page_id: int) -> dict[str, tuple[str, str]]:
    """source component id -> (our component id, name), for the page's imported components."""
    query = (
        select(status_import_ref.c.source_id, status_component.c.component_id,
               status_component.c.name)
        .join(status_component, status_component.c.component_id == status_import_ref.c.target_id)
        .where(status_import_ref.c.page_id == page_id, status_import_ref.c.kind == "component")
    )
    return {r.source_id: (r.component_id, r.name) for r in await conn.execute(query)}


async def import_changes(conn: AsyncConnection, page_id: int, account_id: int,
                         incidents: list[Row], now: int, warnings: list[str]) -> tuple[int, int]:
    """One page of /incidents (incidents and maintenances) -> (incidents, maintenances) added."""
    fresh = _new_items(incidents, await known_refs(conn, page_id, "change",
                                                   (str(i.get("id")) for i in incidents)))
    if not fresh:
        return 0, 0
    components = await _component_index(conn, page_id)
    mapped = [m for i in fresh if (m := map_change(i, components, warnings)) is not None]
    changes, updates, refs = [], [], []
    for m in mapped:
        change_id = numeric_id()
        changes.append(_change_row(m, change_id, page_id, account_id, now))
        refs.append((m.source_id, str(change_id)))
        for seq, u in enumerate(m.updates, start=1):
            updates.append({
                "update_id": hex_id(), "change_id": change_id, "page_id": page_id,
                "account_id": account_id, "at_seconds": u.at_seconds, "status": u.status,
                "description": u.description, "component_changes": _dumps(u.component_changes),
                "seq": seq, "created_at": now,
            })
    if changes:
        await conn.execute(insert(status_change), changes)
        await conn.execute(insert(status_change_update), updates)
        await _remember(conn, page_id, "change", refs)
    maintenances = sum(1 for m in mapped if m.type == "maintenance")
    return len(mapped) - maintenances, maintenances


def _change_row(m: MappedChange, change_id: int, page_id: int, account_id: int,
                now: int) -> Row:
    scheduled_close = m.close_at_seconds if m.type == "maintenance" else 0
    if m.status in _TERMINAL:
        close = m.close_at_seconds if m.type == "incident" and m.close_at_seconds else (
            m.updates[-1].at_seconds)
    else:
        close = scheduled_close
    return {
        "change_id": change_id, "page_id": page_id, "account_id": account_id, "type": m.type,
        "title": m.title, "description": "", "status": m.status,
        "affected_components": _dumps(m.affected_components), "responder_ids": "[]",
        "linked_change_ids": "[]", "start_at_seconds": m.start_at_seconds,
        "close_at_seconds": close, "scheduled_close_at_seconds": scheduled_close,
        "is_retrospective": m.is_retrospective,
        # History is imported silently: subscribers were told when it happened.
        "notify_subscribers": False, "auto_update_by_schedule": m.auto_update_by_schedule,
        "created_at": m.created_at or now, "updated_at": now,
    }


async def import_subscribers(conn: AsyncConnection, page_id: int, account_id: int,
                             subscribers: list[Row], now: int, secret_key: str,
                             warnings: list[str]) -> tuple[int, int]:
    """E-mail subscribers only, confirmed (they confirmed at the source) -> (added, skipped)."""
    emails: list[str] = []
    skipped = 0
    for s in subscribers:
        if s.get("mode") != "email":
            continue  # sms, webhook, slack...: not ours to import, neither added nor skipped
        email = str(s.get("email") or "").strip().lower()
        if not _EMAIL.match(email) or len(email) > 255:
            warn(warnings, f"subscriber {s.get('id')}: e-mail address is not valid; skipped")
            skipped += 1
            continue
        emails.append(email)
    unique = list(dict.fromkeys(emails))
    skipped += len(emails) - len(unique)
    existing = set()
    if unique:
        existing = set((await conn.execute(
            select(status_subscriber.c.email).where(status_subscriber.c.page_id == page_id,
                                                    status_subscriber.c.email.in_(unique))
        )).scalars())
    rows = []
    for email in unique:
        if email in existing:
            skipped += 1
            continue
        sid = hex_id()
        rows.append({
            "subscriber_id": sid, "page_id": page_id, "account_id": account_id, "email": email,
            "status": "confirmed", "confirm_token_hash": "",
            "unsubscribe_token_hash": unsubscribe_token_hash(secret_key, sid),
            "source": "migration", "created_at": now, "updated_at": now,
        })
    if rows:
        await conn.execute(insert(status_subscriber), rows)
    return len(rows), skipped


def _int(value: Any) -> int:
    return value if isinstance(value, int) and -(2**31) <= value < 2**31 else 0
