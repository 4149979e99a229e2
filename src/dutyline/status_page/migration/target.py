"""Writing what the source holds into the target page, one chunk at a time.

The page, its sections and components, and the subscribers go through the status page
services (their validation, ordering and cache invalidation apply; the subscriber import is
itself a bulk path). The history does not: a page's history is thousands of events with
several timeline entries each, and the timeline service recomputes an event (and its
components) after every entry, one round trip each. An import writes a finished history, so
each chunk of events is written with three multi-row INSERTs, and the timeline rules of
status_page/change/rules.py are applied by the mapping instead (mapping.map_change):

- an event's status is its latest entry's (entries by time, `seq` keeping the posting order
  of entries of the same second); its close time is the scheduled close, else the latest
  entry's time once resolved or completed, else 0;
- its affected components: every component an entry mentions, latest status, operational
  once closed; entries only set statuses their event type allows (a closing entry sets
  operational), anything else is left out with a warning;
- components mentioned by imported events that are still open are recomputed with the rules'
  own function, as any timeline write would.

`status_import_ref` maps each imported source object to ours, per target page, so a resumed
chunk or a rerun skips what exists instead of duplicating it.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor
from dutyline.kit.ids import hex_id, numeric_id
from dutyline.status_page.change import rules
from dutyline.status_page.migration import repository as repo
from dutyline.status_page.migration.mapping import (
    CLOSED,
    COMPONENT_STATUS,
    INCIDENT_STATUS,
    MAINTENANCE_STATUS,
    MappedChange,
    map_change,
    text,
    to_seconds,
    warn,
)
from dutyline.status_page.page import repository as page_repo
from dutyline.status_page.page import service as pages
from dutyline.status_page.subscriber import service as subscribers_service

Row = dict[str, Any]
_URL_NAME_CHARS = re.compile(r"[^a-z0-9]+")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def page_exists(conn: AsyncConnection, actor: Actor, *, page_id: int) -> bool:
    """Whether the page is the actor's account's (another account's page: as missing)."""
    return await page_repo.get_page(conn, actor.account_id, page_id) is not None


async def create_page(conn: AsyncConnection, actor: Actor, *, source: Row,
                      warnings: list[str]) -> int:
    """A new page named after the source, its address from the source's subdomain (with a
    random suffix when that address is taken)."""
    base = _URL_NAME_CHARS.sub("-", str(source.get("subdomain") or source.get("name") or "")
                               .lower()).strip("-")[:48].strip("-") or "imported"
    url_name = base
    if await page_repo.page_by_url_name(conn, url_name) is not None:
        url_name = f"{base}-{secrets.token_hex(3)}"
    time_zone = text(source.get("time_zone"), 64) or "UTC"
    if not pages.valid_time_zone(time_zone):
        warn(warnings, f"page time zone {time_zone!r} is not a known IANA time zone; UTC used")
        time_zone = "UTC"
    created = await pages.create_page(
        conn, actor, page_name=text(source.get("name"), 128).strip() or "Imported page",
        url_name=url_name, description=text(source.get("page_description"), 1024),
        time_zone=time_zone,
    )
    return int(created.page_id)


async def touch_page(conn: AsyncConnection, actor: Actor, *, page_id: int) -> None:
    await pages.mark_page_changed(conn, actor, page_id=page_id)


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


async def import_sections(conn: AsyncConnection, actor: Actor, *, page_id: int,
                          groups: list[Row]) -> int:
    fresh = _new_items(groups, await repo.known_refs(conn, page_id, "section",
                                                     (str(g.get("id")) for g in groups)))
    refs = []
    for g in fresh:
        section_id = await pages.upsert_section(
            conn, actor, page_id=page_id, name=text(g.get("name"), 255).strip() or "(unnamed)",
            description=text(g.get("description"), 1024), order_id=_int(g.get("position")))
        refs.append((str(g["id"]), section_id))
    await repo.remember_refs(conn, page_id, "section", refs)
    return len(refs)


async def import_components(conn: AsyncConnection, actor: Actor, *, page_id: int,
                            components: list[Row], warnings: list[str]) -> int:
    # A group can also be listed as a component (`group: true`); it is a section here.
    items = [c for c in components if not c.get("group")]
    fresh = _new_items(items, await repo.known_refs(conn, page_id, "component",
                                                    (str(c.get("id")) for c in items)))
    sections = await repo.known_refs(conn, page_id, "section",
                                {str(c.get("group_id")) for c in fresh if c.get("group_id")})
    refs: list[tuple[str, str]] = []
    for c in fresh:
        status = COMPONENT_STATUS.get(str(c.get("status")))
        if status is None:
            warn(warnings, f"component {c.get('id')} ({text(c.get('name'), 255)}) has unknown "
                           f"status {c.get('status')!r}; not imported")
            continue
        component_id = await pages.upsert_component(
            conn, actor, page_id=page_id, name=text(c.get("name"), 255).strip() or "(unnamed)",
            section_id=sections.get(str(c.get("group_id") or ""), ""),
            description=text(c.get("description"), 1024),
            available_since_seconds=to_seconds(c.get("start_date")),
            order_id=_int(c.get("position")), hide_uptime=c.get("showcase") is False,
            hide_all=False, status=status)
        refs.append((str(c["id"]), component_id))
    await repo.remember_refs(conn, page_id, "component", refs)
    return len(refs)


async def import_templates(conn: AsyncConnection, actor: Actor, *, page_id: int,
                           templates: list[Row], warnings: list[str]) -> int:
    fresh = _new_items(templates, await repo.known_refs(conn, page_id, "template",
                                                        (str(t.get("id")) for t in templates)))
    now = actor.now_s
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
            "template_id": hex_id(), "page_id": page_id, "account_id": actor.account_id,
            "name": text(t.get("name"), 255) or "(unnamed)", "title": text(t.get("title"), 512),
            "body": text(t.get("body"), 65_536), "update_status": status,
            "created_at": now, "updated_at": now,
        })
    await repo.insert_templates(conn, rows)
    await repo.remember_refs(conn, page_id, "template", [
        (str(t["id"]), r["template_id"]) for t, r in zip(fresh, rows, strict=True)])
    return len(rows)


async def import_changes(conn: AsyncConnection, actor: Actor, *, page_id: int,
                         incidents: list[Row], warnings: list[str]) -> tuple[int, int]:
    """One page of /incidents (incidents and maintenances) -> (incidents, maintenances) added."""
    fresh = _new_items(incidents, await repo.known_refs(conn, page_id, "change",
                                                        (str(i.get("id")) for i in incidents)))
    if not fresh:
        return 0, 0
    now, account_id = actor.now_s, actor.account_id
    components = await repo.imported_components(conn, page_id)
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
                "description": u.description,
                "component_changes": rules.encode_component_changes(u.component_changes),
                "seq": seq, "created_at": now,
            })
    if changes:
        await repo.insert_history(conn, changes, updates)
        await repo.remember_refs(conn, page_id, "change", refs)
    # Open events decide their components' statuses, as after any timeline write.
    moved = {a["component_id"] for m in mapped if m.status not in CLOSED
             for a in m.affected_components}
    await rules.recompute_components(conn, page_id, moved, now)
    maintenances = sum(1 for m in mapped if m.type == "maintenance")
    return len(mapped) - maintenances, maintenances


def _change_row(m: MappedChange, change_id: int, page_id: int, account_id: int,
                now: int) -> Row:
    return {
        "change_id": change_id, "page_id": page_id, "account_id": account_id, "type": m.type,
        "title": m.title, "description": "", "status": m.status,
        "affected_components": _dumps(m.affected_components), "responder_ids": "[]",
        "linked_change_ids": "[]", "start_at_seconds": m.start_at_seconds,
        "close_at_seconds": m.close_at_seconds,
        "scheduled_close_at_seconds": m.scheduled_close_at_seconds,
        "is_retrospective": m.is_retrospective,
        # History is imported silently: subscribers were told when it happened.
        "notify_subscribers": False, "auto_update_by_schedule": m.auto_update_by_schedule,
        "created_at": m.created_at or now, "updated_at": now,
    }


async def import_subscribers(conn: AsyncConnection, actor: Actor, *, page_id: int,
                             subscribers: list[Row], secret_key: str,
                             warnings: list[str]) -> tuple[int, int]:
    """E-mail subscribers only, confirmed (they confirmed at the source) -> (added, skipped).
    An address already on the page, whatever its state (an unsubscribed one included), is
    left alone and counted as skipped, as the subscriber import does."""
    wanted = [subscribers_service.SubscriberIn(email=str(s.get("email") or ""))
              for s in subscribers if s.get("mode") == "email"]
    # sms, webhook, slack...: not ours to import, neither added nor skipped.
    if not wanted:
        return 0, 0
    result = await subscribers_service.import_subscribers(
        conn, actor, page_id=page_id, subscribers=wanted, secret_key=secret_key,
        source="migration")
    for email, reason in result.invalid:
        warn(warnings, f"subscriber {email!r} skipped: {reason}")
    return result.imported, result.duplicates + len(result.invalid)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and -(2**31) <= value < 2**31 else 0
