"""CSV exports (header row, Content-Disposition, cells that would run as spreadsheet formulas
neutralised with a leading ', column choice, HTML-to-text) and the alert label ranking."""

from __future__ import annotations

import csv
import io
from typing import Any

import msgspec
import pytest
from sqlalchemy import insert

from dutyline.db.tables.incident import alert
from dutyline.kit.ids import hex_id
from tests.api.test_reference_schemas import check
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.insight.conftest import START, ok

pytestmark = pytest.mark.anyio

END = START + 86_400


def _window(**extra: Any) -> dict[str, Any]:
    return {"start_time": START, "end_time": END, **extra}


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


async def test_incident_export(capi: Api, acme: Person, clock: FakeClock) -> None:
    await ok(capi, "/incident/create", {
        "incident_severity": "Critical", "title": "=HYPERLINK(\"http://x\")",
        "description": "<p>disk <b>full</b> &amp; slow</p>"}, acme)
    clock.advance(60)  # a distinct start time: the export is ordered by it
    await ok(capi, "/incident/create", {"incident_severity": "Info", "title": "@sum"}, acme)
    reply = await capi.raw("POST", "/insight/incident/export", params={"app_key": acme.key},
                           json=_window(asc=True))
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/csv")
    assert reply.headers["content-disposition"] == 'attachment; filename="insight-incidents.csv"'
    assert reply.headers["service-request-id"]
    header, first, second = _rows(reply.text)
    assert header[:4] == ["incident_id", "title", "description", "team_id"]
    row = dict(zip(header, first, strict=True))
    assert row["title"] == "'=HYPERLINK(\"http://x\")"
    assert row["description"] == "<p>disk <b>full</b> &amp; slow</p>"
    assert row["severity"] == "Critical"
    assert row["responders"] == ""
    assert dict(zip(header, second, strict=True))["title"] == "'@sum"

    chosen = await capi.raw("POST", "/insight/incident/export", params={"app_key": acme.key},
                            json=_window(asc=True, export_fields=["severity", "description"],
                                         description_html_to_text=True, severities=["Critical"]))
    assert _rows(chosen.text) == [["severity", "description"], ["Critical", "disk full & slow"]]

    as_json = await capi.raw("POST", "/insight/incident/export", params={"app_key": acme.key},
                             json=_window(export_fields=["severity"]),
                             headers={"Accept": "application/json"})
    assert as_json.headers["content-type"] == "application/json"
    body = msgspec.json.decode(as_json.content)
    assert body["data"] == "severity\r\nInfo\r\nCritical\r\n"
    assert "content-disposition" not in as_json.headers


@pytest.mark.parametrize(("path", "first"), [
    ("/insight/channel/export", ["ts", "hours", "channel_id", "channel_name"]),
    ("/insight/team/export", ["ts", "hours", "team_id", "team_name"]),
    ("/insight/responder/export", ["ts", "hours", "responder_id", "responder_name"]),
])
async def test_figure_exports(capi: Api, acme: Person, path: str, first: list[str]) -> None:
    team = (await ok(capi, "/team/upsert", {"team_name": "-ops",
                                            "person_ids": [acme.person_id]}, acme)).data
    channel = (await ok(capi, "/channel/create", {"channel_name": "+payments",
                                                  "team_id": team["team_id"]}, acme)).data
    created = await ok(capi, "/incident/create", {
        "incident_severity": "Critical", "title": "db down", "channel_id": channel["channel_id"],
        "assigned_to": {"person_ids": [acme.person_id]}}, acme)
    assert created.status == 200
    reply = await capi.raw("POST", path, params={"app_key": acme.key},
                           json=_window(aggregate_unit="day"))
    assert reply.status_code == 200
    assert reply.headers["content-disposition"].startswith("attachment; filename=")
    header, row = _rows(reply.text)
    assert header[:4] == first
    assert "total_incident_cnt" in header
    got = dict(zip(header, row, strict=True))
    assert got["total_incident_cnt"] == "1"
    assert got["ts"] == str(START - 3600)  # local midnight in Europe/Paris
    assert got["hours"] == ""
    name = {"channel": "'+payments", "team": "'-ops", "responder": "Acme Owner"}[
        path.split("/")[2]]
    assert got[header[3]] == name
    picked = await capi.raw("POST", path, params={"app_key": acme.key}, json=_window(
        export_fields=["total_incident_cnt", header[3]]))
    assert _rows(picked.text) == [["total_incident_cnt", header[3]], ["1", name]]


async def _alert(api: Api, who: Person, t: int, events: int, **labels: str) -> None:
    async with api.runtime.db.transaction() as conn:
        await conn.execute(insert(alert).values(
            alert_id=hex_id(), account_id=who.account_id, channel_id=0, integration_id=0,
            alert_key=hex_id(), title="cpu", alert_severity="Critical",
            alert_status="Critical", event_cnt=events, start_time=t, last_time=t,
            labels=msgspec.json.encode(labels).decode(), created_at=t, updated_at=t))


async def test_topk_by_label(capi: Api, acme: Person) -> None:
    t = START + 3600
    for _ in range(3):
        await _alert(capi, acme, t, 1, check="cpu-high", resource="web-1")
    await _alert(capi, acme, t, 9, check="disk-full", resource="web-1")
    await _alert(capi, acme, t, 1, resource="db-1")
    await _alert(capi, acme, END + 10, 1, check="cpu-high")  # after the window
    path = "/insight/alert/topk-by-label"
    reply = await capi.raw("POST", path, params={"app_key": acme.key},
                           json=_window(label="check"))
    assert check(path, reply)["data"]["items"] == [
        {"label": "cpu-high", "total_alert_cnt": 3, "total_alert_event_cnt": 3},
        {"label": "disk-full", "total_alert_cnt": 1, "total_alert_event_cnt": 9}]
    by_events = await ok(capi, path, _window(label="check", orderby="total_alert_event_cnt",
                                             k=1), acme)
    assert [i["label"] for i in by_events.data["items"]] == ["disk-full"]
    resources = await ok(capi, path, _window(label="resource", asc=True), acme)
    assert [(i["label"], i["total_alert_cnt"]) for i in resources.data["items"]] == [
        ("db-1", 1), ("web-1", 4)]
    split = await ok(capi, path, _window(label="resource", split_hours=True), acme)
    # 01:00 UTC on Friday 27 March is 02:00 in Paris: sleep hours.
    assert {i["hours"] for i in split.data["items"]} == {"sleep"}
