"""Rows of a realistic status page, written straight to the tables, for the public-page tests
(they test the public side, so they do not depend on the admin API's rules)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

from sqlalchemy import insert, update
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db import signals
from dutyline.db.engine import Database
from dutyline.db.tables.status_page import (
    status_change,
    status_change_update,
    status_component,
    status_page,
    status_section,
)
from dutyline.kit.ids import hex_id, numeric_id
from dutyline.status_page import cache as page_cache
from dutyline.status_page.tokens import token_hash

DAY = 86_400


@dataclass
class Seeded:
    page_id: int
    url_name: str
    access_token: str
    components: dict[str, str] = field(default_factory=dict)  # name -> component_id
    changes: dict[str, int] = field(default_factory=dict)  # title -> change_id


async def _change(
    conn: AsyncConnection, seeded: Seeded, account_id: int, *, type_: str, title: str,
    status: str, start: int, close: int = 0, description: str = "",
    affected: list[dict[str, str]] | None = None,
    timeline: list[tuple[int, str, str]] | None = None,
) -> int:
    change_id = numeric_id()
    await conn.execute(insert(status_change).values(
        change_id=change_id, page_id=seeded.page_id, account_id=account_id, type=type_,
        title=title, description=description, status=status,
        affected_components=json.dumps(affected or []), start_at_seconds=start,
        close_at_seconds=close, created_at=start, updated_at=start,
    ))
    for seq, (at, st, text) in enumerate(timeline or []):
        await conn.execute(insert(status_change_update).values(
            update_id=hex_id(), change_id=change_id, page_id=seeded.page_id,
            account_id=account_id, at_seconds=at, status=st, description=text,
            component_changes="[]", seq=seq, created_at=at,
        ))
    seeded.changes[title] = change_id
    return change_id


async def seed_page(
    db: Database, *, now_s: int, url_name: str = "acme", page_type: str = "public",
    account_id: int = 1, page_name: str = "Acme Cloud",
) -> Seeded:
    seeded = Seeded(page_id=numeric_id(), url_name=url_name, access_token=f"tok-{hex_id()}")
    async with db.transaction() as conn:
        await conn.execute(insert(status_page).values(
            page_id=seeded.page_id, account_id=account_id, page_name=page_name,
            url_name=url_name, page_type=page_type,
            description="Live status of the Acme Cloud services",
            access_token_hash=token_hash(seeded.access_token) if page_type == "internal" else "",
            created_at=now_s - 200 * DAY, updated_at=now_s - 100,
        ))
        sections = {"Core API": hex_id(), "Web <apps> & more": hex_id()}
        for order, (name, section_id) in enumerate(sections.items()):
            await conn.execute(insert(status_section).values(
                section_id=section_id, page_id=seeded.page_id, account_id=account_id,
                name=name, order_id=order, created_at=now_s, updated_at=now_s,
            ))
        comps = [
            ("Public API", "Core API", "degraded"),
            ("Webhooks", "Core API", "operational"),
            ("Dashboard", "Web <apps> & more", "operational"),
            ("Login", "Web <apps> & more", "under_maintenance"),
            ("Status emails", "", "operational"),
        ]
        for order, (name, section, status) in enumerate(comps):
            component_id = hex_id()
            seeded.components[name] = component_id
            await conn.execute(insert(status_component).values(
                component_id=component_id, page_id=seeded.page_id,
                section_id=sections.get(section, ""), account_id=account_id, name=name,
                status=status, order_id=order, created_at=now_s, updated_at=now_s,
            ))
        api_id = seeded.components["Public API"]
        await _change(
            conn, seeded, account_id, type_="incident", title="Elevated API error rates",
            status="identified", start=now_s - 3600,
            description="Some requests fail with 5xx.",
            affected=[{"component_id": api_id, "status": "degraded"}],
            timeline=[(now_s - 3600, "investigating", "We are looking into errors."),
                      (now_s - 1800, "identified", "Bad deploy <script>x</script>; rolling back")],
        )
        await _change(
            conn, seeded, account_id, type_="maintenance", title="Login provider upgrade",
            status="ongoing", start=now_s - 600, close=now_s + 3000,
            affected=[{"component_id": seeded.components["Login"],
                       "status": "under_maintenance"}],
            timeline=[(now_s - 7200, "scheduled", "Planned upgrade."),
                      (now_s - 600, "ongoing", "Upgrade started.")],
        )
        await _change(
            conn, seeded, account_id, type_="incident", title="Webhook delivery delays",
            status="resolved", start=now_s - 3 * DAY, close=now_s - 3 * DAY + 5400,
            timeline=[(now_s - 3 * DAY, "investigating", "Queues are backed up."),
                      (now_s - 3 * DAY + 5400, "resolved", "Delivery is back to normal.")],
        )
        await _change(
            conn, seeded, account_id, type_="maintenance", title="Database failover test",
            status="completed", start=now_s - 10 * DAY, close=now_s - 10 * DAY + 1800,
            timeline=[(now_s - 10 * DAY + 1800, "completed", "Done.")],
        )
        # Older than the 90-day window: in the feeds, not in the page's history.
        await _change(
            conn, seeded, account_id, type_="incident", title="Ancient outage",
            status="resolved", start=now_s - 120 * DAY, close=now_s - 120 * DAY + 60,
            timeline=[(now_s - 120 * DAY + 60, "resolved", "Fixed.")],
        )
    return seeded


async def set_component_status(
    db: Database, component_id: str, status: str, *, page_id: int, announce: str
) -> None:
    """Write a component's status. `announce`: "" (a write that tells no cache: none of the
    product's writers do that), "here" (as this process's writers do: the page's change
    signal, moved at once here), "elsewhere" (as another process's writer: only what reaches
    this process through the database, the NOTIFY or the signal row)."""
    async with db.transaction() as conn:
        await conn.execute(update(status_component)
                           .where(status_component.c.component_id == component_id)
                           .values(status=status))
        if announce == "here":
            await page_cache.invalidate(conn, page_id)
        elif announce == "elsewhere":
            name = signals.page_signal(page_id)
            if conn.dialect.name == "postgresql":
                await conn.execute(sql_text("SELECT pg_notify(:c, :n)"),
                                   {"c": signals.CHANNEL, "n": name})
            else:
                for row in (name, signals.ANY):
                    await conn.execute(sql_text(
                        "INSERT INTO change_signal (name, version) VALUES (:n, 1) ON CONFLICT "
                        "(name) DO UPDATE SET version = change_signal.version + 1"), {"n": row})


# --- reading HTML with the standard library ------------------------------------------------

_VOID = {"meta", "link", "input", "br", "img", "hr", "source", "area", "base", "col", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join(" ".join(parts).split())

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        return [n for n in self.iter() if (tag is None or n.tag == tag)
                and all(n.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())]

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag}> with {attrs}"
        return found[0]

    def has_class(self, name: str) -> bool:
        return name in self.attrs.get("class", "").split()


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return
        raise AssertionError(f"stray </{tag}>")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(text: str) -> Node:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    assert len(builder.stack) == 1, f"unclosed: {[n.tag for n in builder.stack[1:]]}"
    return builder.root
