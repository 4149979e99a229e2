"""Rules of the subscriber API: list, import, export.

Only email subscriptions exist here (`im` is refused). Listing and export show confirmed
subscribers; pending (unconfirmed) and unsubscribed ones are nobody's audience. An import
asserts the subscribers' consent, so they arrive confirmed; an address the page already knows
in any state is skipped and counted, so an import never resubscribes someone who left.
Per-event subscriptions (`change_ids`) are not kept: such a row is reported invalid rather
than silently widened to every event. All of it needs status page management: the addresses
are personal data."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import STATUS_PAGE_MANAGE
from dutyline.kit.ids import hex_id
from dutyline.status_page import tokens
from dutyline.status_page.page import repository as page_repo
from dutyline.status_page.page import service as pages
from dutyline.status_page.subscriber import repository as repo
from dutyline.status_page.subscriber.address import normalize_email
from dutyline.status_page.subscriber.schemas import SubscribedComponentItem, SubscriberItem

# Checks against the database in chunks: bounded IN lists on both backends.
_CHUNK = 500
EXPORT_COLUMNS = ("Method", "Recipient", "Components", "Subscribe All", "Locale")


@dataclass(frozen=True)
class SubscriberIn:
    email: str
    component_ids: Sequence[str] = field(default_factory=tuple)
    locale: str = ""


@dataclass
class ImportResult:
    imported: int = 0
    duplicates: int = 0
    invalid: list[tuple[str, str]] = field(default_factory=list)


@writes("/status-page/subscriber/import", STATUS_PAGE_MANAGE)
async def import_subscribers(
    conn: AsyncConnection, actor: Actor, *, page_id: int, subscribers: Sequence[SubscriberIn],
    secret_key: str, method: str = "email", source: str = "import",
) -> ImportResult:
    """Add confirmed email subscribers to the actor's page. Invalid addresses and unknown
    component ids are reported per row; addresses already known are skipped and counted."""
    if method != "email":
        raise errors.invalid("method", "only email subscribers are supported")
    await pages.require_page(conn, actor, page_id=page_id)
    actor.note_audit_targets(page_id)
    now_s = actor.now_s
    result = ImportResult()
    known_components = {c.component_id for c in await page_repo.components(conn, page_id)}
    wanted: dict[str, SubscriberIn] = {}
    for s in subscribers:
        email = normalize_email(s.email)
        if email is None:
            result.invalid.append((s.email, "is not an email address"))
        elif any(c not in known_components for c in s.component_ids):
            result.invalid.append((s.email, "names a component that is not on this page"))
        elif email in wanted:
            result.duplicates += 1
        else:
            wanted[email] = s
    emails = list(wanted)
    for start in range(0, len(emails), _CHUNK):
        chunk = emails[start:start + _CHUNK]
        taken = await repo.existing_emails(conn, page_id, chunk)
        rows = []
        for email in chunk:
            if email in taken:
                result.duplicates += 1
                continue
            subscriber_id = hex_id()
            rows.append({
                "subscriber_id": subscriber_id, "page_id": page_id,
                "account_id": actor.account_id,
                "email": email, "status": repo.CONFIRMED, "source": source,
                "unsubscribe_token_hash": tokens.unsubscribe_token_hash(secret_key,
                                                                        subscriber_id),
                "locale": wanted[email].locale,
                "component_ids": json.dumps(sorted(set(wanted[email].component_ids))),
                "created_at": now_s, "updated_at": now_s,
            })
        await repo.insert_subscribers(conn, rows)
        result.imported += len(rows)
    return result


def _known_ids(field_name: str, ids: list[str], components: dict[str, Any]) -> list[str]:
    """Filter ids must be the page's components (which also keeps them LIKE-safe)."""
    if any(cid not in components for cid in ids):
        raise errors.invalid(field_name, "names a component that is not on this page")
    return list(dict.fromkeys(ids))


def _items(rows: list[Any], components: dict[str, Any]) -> list[SubscriberItem]:
    items = []
    for r in rows:
        followed = json.loads(r.component_ids or "[]")
        items.append(SubscriberItem(
            recipient=r.email, method="email", all=not followed, locale=r.locale,
            components=[
                SubscribedComponentItem(**pages.component_fields(c))
                for cid in followed if (c := components.get(cid)) is not None
            ],
        ))
    return items


@reads_sync(STATUS_PAGE_MANAGE)
def list_subscribers_sync(
    conn: Connection, actor: Actor, *, page_id: int, component_ids: Sequence[str],
    offset: int, limit: int,
) -> tuple[int, list[SubscriberItem]]:
    """(total, one page of the page's confirmed subscribers following any of these
    components, or all of them), by address."""
    pages.require_page_sync(conn, actor, page_id=page_id)
    components = {c.component_id: c for c in page_repo.components_sync(conn, page_id)}
    wanted = _known_ids("component_ids", list(component_ids), components)
    total, rows = repo.confirmed_page_sync(
        conn, page_id, component_ids=wanted, offset=offset, limit=limit)
    return total, _items(rows, components)


def _cell(value: str) -> str:
    # A spreadsheet runs a cell starting with = + - @ as a formula; a leading quote defuses it.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


@reads(STATUS_PAGE_MANAGE, audited=True)
async def export_csv(
    conn: AsyncConnection, actor: Actor, *, page_id: int, component_ids: Sequence[str]
) -> str:
    """Every confirmed subscriber as CSV: Method, Recipient, Components, Subscribe All,
    Locale (components by name, separated by ';')."""
    await pages.require_page(conn, actor, page_id=page_id)
    components = {c.component_id: c for c in await page_repo.components(conn, page_id)}
    wanted = _known_ids("component_ids", list(component_ids), components)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    offset = 0
    while True:
        _, rows = await repo.confirmed_page(conn, page_id, component_ids=wanted,
                                            offset=offset, limit=_CHUNK)
        for item in _items(rows, components):
            writer.writerow([item.method, _cell(item.recipient),
                             _cell(";".join(c.name for c in item.components)),
                             "true" if item.all else "false", _cell(item.locale)])
        if len(rows) < _CHUNK:
            break
        offset += _CHUNK
    return out.getvalue()
