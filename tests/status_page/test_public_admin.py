"""The public page driven through the admin API's real write path: every write shows on the
next view (the writers invalidate and bump updated_at), and an internal page's token from
/status-page/create opens it."""

from __future__ import annotations

import pytest

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.status_page.admin_helpers import make_incident, make_page, ok
from tests.status_page.public_seed import parse_html

pytestmark = pytest.mark.anyio


def overall(html: str) -> str:
    return parse_html(html).find(id="overall-status").text()


async def test_each_admin_write_shows_on_the_next_view(api: Api, owner: Person) -> None:
    page = await make_page(api, owner, components=2)
    path = f"/status/{page.url_name}"
    r = await api.raw("GET", path)
    assert r.status_code == 200 and overall(r.text) == "All systems operational"
    assert "Service 0" in r.text and "Service 1" in r.text

    change_id = await make_incident(api, owner, page)
    r = await api.raw("GET", path)
    assert overall(r.text) == "Degraded performance"
    assert "API errors" in r.text and "Looking" in r.text

    await ok(api, "/status-page/change/timeline/create", {
        "page_id": page.page_id, "change_id": change_id, "status": "resolved",
        "description": "All good again",
        "component_changes": [{"component_id": page.components[0], "status": "operational"}],
    }, owner.key)
    r = await api.raw("GET", path)
    assert overall(r.text) == "All systems operational"
    doc = parse_html(r.text)
    assert not doc.find_all("section", **{"aria-labelledby": "incidents-heading"})
    assert "All good again" in doc.find("section", **{"aria-labelledby": "history-heading"}).text()
    rss = await api.raw("GET", f"{path}/history.rss")
    assert "API errors (Resolved)" in rss.text

    await ok(api, "/status-page/component/upsert", {
        "page_id": page.page_id, "section_id": page.section_id, "name": "Brand new service"},
        owner.key)
    assert "Brand new service" in (await api.raw("GET", path)).text


async def test_internal_page_token_from_the_api(api: Api, owner: Person) -> None:
    created = await ok(api, "/status-page/create", {
        "page_name": "Ops", "url_name": "ops-internal", "page_type": "internal"}, owner.key)
    assert (await api.raw("GET", "/status/ops-internal")).status_code == 401
    r = await api.raw("GET", "/status/ops-internal", params={"token": created["access_token"]})
    assert r.status_code == 303
    assert (await api.raw("GET", "/status/ops-internal")).status_code == 200
