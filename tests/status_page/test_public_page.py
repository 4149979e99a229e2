"""The public status page: what a visitor sees, the feeds, internal pages, 404, caching."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from itertools import pairwise

import httpx
import pytest
from sqlalchemy import event, update

from dutyline.db.tables.status_page import status_page
from dutyline.status_page import cache as page_cache
from dutyline.status_page.public.routes import KeptViews
from dutyline.status_page.tokens import token_hash
from tests.fixtures.api import Api
from tests.fixtures.signals import eventually, watching
from tests.status_page.public_seed import (
    DAY,
    Seeded,
    parse_html,
    seed_page,
    set_component_status,
)

pytestmark = pytest.mark.anyio

ATOM = "{http://www.w3.org/2005/Atom}"


def now_of(api: Api) -> int:
    return int(api.runtime.clock.now())


@pytest.fixture
async def page(api: Api) -> Seeded:
    return await seed_page(api.runtime.db, now_s=now_of(api))


async def test_page_shows_status_components_changes_and_history(api: Api, page: Seeded) -> None:
    r = await api.raw("GET", "/status/acme")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["Service-Request-Id"]
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert "<script" not in r.text.lower().replace("&lt;script", "")
    doc = parse_html(r.text)
    assert doc.find("html").attrs["lang"] == "en"
    for landmark in ("header", "main", "footer"):
        assert doc.find_all(landmark), landmark
    assert doc.find("h1").text() == "Acme Cloud"
    # Worst component: Public API is degraded (maintenance ranks below degradation).
    overall = doc.find(id="overall-status")
    assert overall.text() == "Degraded performance" and overall.has_class("degraded")
    assert doc.find("title").text() == "Acme Cloud status: Degraded performance"

    cards = {card.find("h3").text(): card for card in doc.find_all("div", class_="card")
             if card.find_all("h3") and card.find_all("ul")}
    assert set(cards) == {"Core API", "Web <apps> & more"}  # escaped in, read back as text
    rows = {li.find("span", class_="name").text(): li for li in doc.find_all("li")
            if li.find_all("span", class_="name")}
    assert set(rows) == {"Public API", "Webhooks", "Dashboard", "Login", "Status emails"}
    assert "Degraded performance" in rows["Public API"].text()
    assert "Under maintenance" in rows["Login"].text()
    core = [li.find("span", class_="name").text() for li in cards["Core API"].find_all("li")]
    assert core == ["Public API", "Webhooks"]

    incidents = doc.find("section", **{"aria-labelledby": "incidents-heading"})
    assert "Elevated API error rates" in incidents.text()
    timeline = incidents.find("ol", class_="timeline")
    entries = [li.text() for li in timeline.find_all("li")]
    assert entries[0].startswith("Identified") and entries[1].startswith("Investigating")
    assert "Bad deploy <script>x</script>; rolling back" in entries[0]  # text, not markup
    assert "Affected: Public API (Degraded performance)" in incidents.text()
    maint = doc.find("section", **{"aria-labelledby": "maintenance-heading"})
    assert "Login provider upgrade" in maint.text() and "In progress" in maint.text()
    assert "Resolved" not in incidents.text()

    history = doc.find("section", **{"aria-labelledby": "history-heading"})
    days = history.find("ol", class_="days").find_all("li")
    assert len(days) == 90
    assert "2 incidents and 2 maintenances in the past 90 days" in history.text()
    labelled = {d.text().split(":")[0] for d in days if "No incidents" not in d.text()}
    now = now_of(api)
    starts = (now - 3600, now - 600, now - 3 * DAY, now - 10 * DAY)
    assert labelled == {datetime.fromtimestamp(t, UTC).date().isoformat() for t in starts}
    assert "Webhook delivery delays" in history.text()
    assert "Database failover test" in history.text()
    assert "Ancient outage" not in r.text
    # No subscription form without SMTP.
    assert not doc.find_all("form")


async def test_page_headings_are_in_order(api: Api, page: Seeded) -> None:
    doc = parse_html((await api.raw("GET", "/status/acme")).text)
    levels = [int(n.tag[1]) for n in doc.iter() if n.tag in {"h1", "h2", "h3", "h4"}]
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b - a <= 1 for a, b in pairwise(levels))


async def test_unknown_page_is_a_404_page(api: Api) -> None:
    r = await api.raw("GET", "/status/nope")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("text/html")
    doc = parse_html(r.text)
    assert doc.find("h1").text() == "Page not found"
    for path in ("/status/nope/history.rss", "/status/nope/history.atom"):
        assert (await api.raw("GET", path)).status_code == 404
    assert (await api.raw("POST", "/status/nope/subscribe", data={"email": "a@b.co"})
            ).status_code == 404


async def test_rss_feed(api: Api, page: Seeded) -> None:
    r = await api.raw("GET", "/status/acme/history.rss")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/rss+xml")
    root = ET.fromstring(r.content)
    assert root.tag == "rss" and root.attrib["version"] == "2.0"
    channel = root.find("channel")
    assert channel is not None
    for tag in ("title", "link", "description", "lastBuildDate"):
        assert channel.findtext(tag), tag
    items = channel.findall("item")
    titles = [i.findtext("title") for i in items]
    assert titles == [
        "Login provider upgrade (In progress)", "Elevated API error rates (Identified)",
        "Webhook delivery delays (Resolved)", "Database failover test (Completed)",
        "Ancient outage (Resolved)",
    ]
    dates = [parsedate_to_datetime(i.findtext("pubDate") or "") for i in items]
    assert dates == sorted(dates, reverse=True)
    first_incident = items[1]
    assert first_incident.findtext("link", "").endswith(
        f"/status/acme#change-{page.changes['Elevated API error rates']}")
    assert first_incident.find("guid") is not None
    body = first_incident.findtext("description") or ""
    # HTML carried as text; its own text escaped once more inside it.
    assert body.index("Identified") < body.index("Investigating")
    assert "&lt;script&gt;" in body and "<script>" not in body


async def test_atom_feed(api: Api, page: Seeded) -> None:
    r = await api.raw("GET", "/status/acme/history.atom")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/atom+xml")
    root = ET.fromstring(r.content)
    assert root.tag == f"{ATOM}feed"
    for tag in ("title", "id", "updated"):
        assert root.findtext(f"{ATOM}{tag}"), tag
    assert root.find(f"{ATOM}link[@rel='self']") is not None
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == 5
    for entry in entries:
        for tag in ("title", "id", "updated", "published"):
            assert entry.findtext(f"{ATOM}{tag}"), tag
        assert entry.find(f"{ATOM}content").attrib["type"] == "html"  # type: ignore[union-attr]
    published = [e.findtext(f"{ATOM}published") for e in entries]
    assert published == sorted(published, reverse=True)  # type: ignore[type-var]
    assert entries[0].findtext(f"{ATOM}title") == "Login provider upgrade (In progress)"


async def test_internal_page_needs_the_token(api: Api) -> None:
    seeded = await seed_page(api.runtime.db, now_s=now_of(api), url_name="ops",
                             page_type="internal")
    r = await api.raw("GET", "/status/ops")
    assert r.status_code == 401 and "Acme" not in r.text
    doc = parse_html(r.text)
    assert doc.find("h1").text() == "Sign in to see this page"
    assert doc.find("form").attrs["action"] == "/status/ops"
    for path in ("/status/ops/history.rss", "/status/ops/history.atom"):
        assert (await api.raw("GET", path)).status_code == 401
    assert (await api.raw("GET", "/status/ops", params={"token": "wrong"})).status_code == 401

    r = await api.raw("GET", "/status/ops", params={"token": seeded.access_token})
    assert r.status_code == 303 and r.headers["location"] == "/status/ops"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/status/ops" in cookie
    assert seeded.access_token not in r.headers["location"]
    # httpx keeps the cookie for the page's path only.
    r = await api.raw("GET", "/status/ops")
    assert r.status_code == 200 and "Acme Cloud" in r.text
    assert r.headers["cache-control"] == "private, no-cache"
    assert r.headers["vary"] == "Cookie"
    assert r.headers["x-robots-tag"] == "noindex"
    assert (await api.raw("GET", "/status/ops/history.rss")).status_code == 200
    # A feed reader without cookies may put the token in the feed's address.
    api.client.cookies.clear()
    assert (await api.raw("GET", "/status/ops")).status_code == 401
    r = await api.raw("GET", "/status/ops/history.atom", params={"token": seeded.access_token})
    assert r.status_code == 200
    # A cookie of another page does not open this one.
    api.client.cookies.set("dutyline_status_token", "x", path="/status/ops")
    assert (await api.raw("GET", "/status/ops")).status_code == 401


async def test_public_page_ignores_token_and_has_no_cookie(api: Api, page: Seeded) -> None:
    r = await api.raw("GET", "/status/acme", params={"token": "anything"})
    assert r.status_code == 200 and "set-cookie" not in r.headers
    assert r.headers["cache-control"] == "public, max-age=5"


async def test_disabled_page_is_not_found(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    assert (await api.raw("GET", "/status/acme")).status_code == 200
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(status_page).where(status_page.c.page_id == page.page_id)
                           .values(status="disabled"))
        await page_cache.invalidate(conn, page.page_id)
    assert (await api.raw("GET", "/status/acme")).status_code == 404


async def overall(api: Api) -> str:
    r = await api.raw("GET", "/status/acme")
    return parse_html(r.text).find(id="overall-status").text()


async def test_a_cached_view_holds_until_the_page_signal_moves(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    first = await api.raw("GET", "/status/acme")
    assert "Degraded performance" in parse_html(first.text).find(id="overall-status").text()
    await api.raw("GET", "/status/acme/history.atom")
    # A write that tells no cache (no writer of the product does that): the view holds...
    await set_component_status(api.runtime.db, page.components["Public API"], "operational",
                               page_id=page.page_id, announce="")
    assert (await api.raw("GET", "/status/acme")).text == first.text
    # ...and one that moves the page's signal shows on the very next view in this process.
    await set_component_status(api.runtime.db, page.components["Webhooks"], "operational",
                               page_id=page.page_id, announce="here")
    # Public API back to operational; Login still under maintenance is now the worst.
    assert await overall(api) == "Maintenance in progress"
    feed = await api.raw("GET", "/status/acme/history.rss")
    assert feed.status_code == 200


async def test_a_write_announced_by_another_process_shows_within_a_second(
    api: Api, page: Seeded
) -> None:
    await watching(api.runtime)
    assert await overall(api) == "Degraded performance"
    await set_component_status(api.runtime.db, page.components["Public API"], "full_outage",
                               page_id=page.page_id, announce="elsewhere")
    async def shows_it() -> bool:
        return await overall(api) == "Major outage"

    await eventually(shows_it, what="the other process's write on the page")


async def test_nothing_is_kept_while_the_signal_is_not_followed(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    api.runtime.signals._live = False  # as while the listener reconnects
    try:
        await api.raw("GET", "/status/acme")
        await set_component_status(api.runtime.db, page.components["Public API"], "full_outage",
                                   page_id=page.page_id, announce="")
        assert await overall(api) == "Major outage"
    finally:
        api.runtime.signals._live = True


async def test_etag_revalidation(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    r = await api.raw("GET", "/status/acme")
    etag = r.headers["etag"]
    again = await api.raw("GET", "/status/acme", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    assert again.headers["cache-control"] == "public, max-age=5"
    listed = await api.raw("GET", "/status/acme",
                           headers={"If-None-Match": f'"other", W/{etag}'})
    assert listed.status_code == 304
    await set_component_status(api.runtime.db, page.components["Login"], "operational",
                               page_id=page.page_id, announce="here")
    changed = await api.raw("GET", "/status/acme", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag


async def test_last_modified_revalidation(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    r = await api.raw("GET", "/status/acme")
    stamp = r.headers["last-modified"]
    assert parsedate_to_datetime(stamp).tzinfo is not None
    again = await api.raw("GET", "/status/acme", headers={"If-Modified-Since": stamp})
    assert again.status_code == 304 and again.content == b""
    # A change within the same second (the clock does not move here) still gets a later
    # Last-Modified: no If-Modified-Since can hide it.
    await set_component_status(api.runtime.db, page.components["Login"], "operational",
                               page_id=page.page_id, announce="here")
    changed = await api.raw("GET", "/status/acme", headers={"If-Modified-Since": stamp})
    assert changed.status_code == 200
    assert parsedate_to_datetime(changed.headers["last-modified"]) > parsedate_to_datetime(stamp)
    feed = await api.raw("GET", "/status/acme/history.rss", headers={"If-Modified-Since": "x"})
    assert feed.status_code == 200


async def test_empty_page(api: Api) -> None:
    seeded = Seeded(page_id=0, url_name="empty", access_token="")
    now = now_of(api)
    async with api.runtime.db.transaction() as conn:
        await conn.execute(status_page.insert().values(
            page_id=4242, account_id=1, page_name="Empty", url_name=seeded.url_name,
            created_at=now - DAY, updated_at=now - DAY,
        ))
    r = await api.raw("GET", "/status/empty")
    doc = parse_html(r.text)
    assert doc.find(id="overall-status").text() == "All systems operational"
    assert "No components yet." in r.text
    feed = ET.fromstring((await api.raw("GET", "/status/empty/history.rss")).content)
    assert feed.find("channel/item") is None


class Statements:
    """Every statement sent to the database, on both engines of the app's Database."""

    def __init__(self, api: Api) -> None:
        db = api.runtime.db
        self.engines = [db.engine.sync_engine]
        if db._sync is not None:
            self.engines.append(db._sync.engine)
        self.seen: list[str] = []

    def __call__(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        self.seen.append(statement)

    def __enter__(self) -> Statements:
        for engine in self.engines:
            event.listen(engine, "before_cursor_execute", self)
        return self

    def __exit__(self, *_: object) -> None:
        for engine in self.engines:
            event.remove(engine, "before_cursor_execute", self)


async def test_a_cached_view_touches_no_database(api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    paths = ("/status/acme", "/status/acme/history.rss", "/status/acme/history.atom")
    for path in paths * 2:  # an address seen for the first time is read twice
        assert (await api.raw("GET", path)).status_code == 200
    with Statements(api) as statements:
        for path in paths:
            r = await api.raw("GET", path)
            assert r.status_code == 200
            assert (await api.raw("GET", path, headers={"If-None-Match": r.headers["etag"]})
                    ).status_code == 304
    assert statements.seen == []
    # A write to the page: the next view reads again.
    async with api.runtime.db.transaction() as conn:
        await page_cache.invalidate(conn, page.page_id)
    with Statements(api) as statements:
        assert (await api.raw("GET", "/status/acme")).status_code == 200
    assert statements.seen


async def test_an_internal_page_in_memory_still_asks_every_visitor_for_its_token(
    api: Api,
) -> None:
    await watching(api.runtime)
    seeded = await seed_page(api.runtime.db, now_s=now_of(api), url_name="ops",
                             page_type="internal")
    for _ in range(3):  # cached for the holder of the token
        r = await api.raw("GET", "/status/ops/history.rss",
                          params={"token": seeded.access_token})
        assert r.status_code == 200
    assert r.headers["cache-control"] == "private, no-cache"
    # Served from memory, yet never to someone without the token, or with another.
    assert (await api.raw("GET", "/status/ops/history.rss")).status_code == 401
    assert (await api.raw("GET", "/status/ops/history.rss",
                          params={"token": "tok-other"})).status_code == 401
    api.client.cookies.set("dutyline_status_token", "tok-other", path="/status/ops")
    assert (await api.raw("GET", "/status/ops")).status_code == 401
    # The token rotated (as /status-page/update does): the old one fails on the next view.
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(status_page).where(status_page.c.page_id == seeded.page_id)
                           .values(access_token_hash=token_hash("tok-new")))
        await page_cache.invalidate(conn, seeded.page_id)
    assert (await api.raw("GET", "/status/ops/history.rss",
                          params={"token": seeded.access_token})).status_code == 401
    assert (await api.raw("GET", "/status/ops/history.rss",
                          params={"token": "tok-new"})).status_code == 200


def _kept_views(api: Api) -> KeptViews:
    (answer,) = api.runtime.front_answers
    kept = answer.__self__  # type: ignore[attr-defined]
    assert isinstance(kept, KeptViews)
    return kept


def _without_request_ids(r: httpx.Response) -> list[tuple[bytes, bytes]]:
    return [(k, v) for k, v in r.headers.raw
            if k.lower() not in (b"service-request-id", b"flashcat-request-id")]


async def test_a_kept_view_answers_exactly_like_the_ordinary_view(
        api: Api, page: Seeded) -> None:
    """A public page kept in memory is answered without Starlette's Request and Response:
    same status, body and headers in the same order (request ids aside), 200 and 304."""
    await watching(api.runtime)
    kept = _kept_views(api)
    for path in ("/status/acme", "/status/acme/history.rss", "/status/acme/history.atom"):
        for _ in range(2):  # an address seen for the first time is read twice
            await api.raw("GET", path)
        etag = (await api.raw("GET", path)).headers["etag"]
        for headers in ({}, {"If-None-Match": etag}, {"If-None-Match": f'"x", W/{etag}'}):
            before = kept.served
            fast = await api.raw("GET", path, headers=headers)
            assert kept.served == before + 1  # answered from memory, before routing
            ordinary = await api.raw("GET", path, params={"v": "1"}, headers=headers)
            assert kept.served == before + 1
            assert fast.status_code == ordinary.status_code == (304 if headers else 200)
            assert fast.content == ordinary.content
            assert _without_request_ids(fast) == _without_request_ids(ordinary)
            assert fast.headers["service-request-id"] == fast.headers["flashcat-request-id"]
            assert fast.headers["service-request-id"] != ordinary.headers["service-request-id"]


async def test_what_a_kept_view_cannot_decide_alone_goes_the_ordinary_way(
        api: Api, page: Seeded) -> None:
    await watching(api.runtime)
    kept = _kept_views(api)
    for _ in range(3):
        await api.raw("GET", "/status/acme")
    served = kept.served
    for path, headers in (("/status/acme/", {}), ("/status/acme/other", {}),
                          ("/status/acme", {"If-Modified-Since": "x"}),
                          ("/status/nowhere", {})):
        await api.raw("GET", path, headers=headers)
    assert (await api.raw("HEAD", "/status/acme")).status_code == 200
    assert kept.served == served
    # Urgent requests in flight: the view yields to them (api/priority.py), the ordinary way.
    token = api.runtime.priority.begin()
    try:
        yielded = api.runtime.priority.yielded
        task = asyncio.create_task(api.raw("GET", "/status/acme"))

        async def waiting() -> bool:
            return api.runtime.priority.yielded > yielded

        await eventually(waiting, what="the view yields to the urgent request")
    finally:
        api.runtime.priority.end(token)
    assert (await task).status_code == 200
    # A change: the next view reads and renders again, then is kept again.
    await set_component_status(api.runtime.db, page.components["Login"], "operational",
                               page_id=page.page_id, announce="here")
    changed = await api.raw("GET", "/status/acme")
    assert changed.status_code == 200
    assert parse_html(changed.text).find(id="overall-status").text() != ""
    # A disabled page is a 404 at once, though its rendering was kept.
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(status_page).where(status_page.c.page_id == page.page_id)
                           .values(status="disabled"))
        await page_cache.invalidate(conn, page.page_id)
    assert (await api.raw("GET", "/status/acme")).status_code == 404
