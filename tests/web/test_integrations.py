"""A channel's integrations in the console: adding one per alert source (its push address,
key and snippet shown once and never again), the key pushing real alerts, rotating the key,
the last events with their outcome, the test alert, permissions and other accounts' ids;
and the Alertmanager snippet checked by the real `amtool`."""

from __future__ import annotations

import functools
import html
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from dutyline.db.tables.platform import audit_log
from tests.fixtures.accounts import Person, new_account, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import incident_ids, ok

pytestmark = pytest.mark.anyio

KEY = re.compile(r"ik_[A-Za-z0-9_-]{40,}")
SNIPPET_OF = {
    "prometheus": "webhook_configs:",
    "grafana": "contactPoints:",
    "webhook": "/event/push/alert/webhook?integration_key=",
    "standard": "/event/push/alert/standard?integration_key=",
}
AM_PUSH = {"alerts": [{"status": "firing", "fingerprint": "fp-disk",
                       "labels": {"alertname": "DiskFull", "severity": "critical"},
                       "annotations": {"summary": "Disk full on db-1"}}]}


async def _channel(api: Api, who: Person, name: str = "Storage") -> int:
    return int((await ok(api, "/channel/create", {"channel_name": name}, who))["channel_id"])


async def _add(console: Browser, channel_id: int, source: str,
               name: str = "Prod") -> tuple[str, int, str]:
    """(the once-shown page's text, the integration's id, its key)."""
    page = await console.post(f"/console/channels/{channel_id}/integrations/new",
                              {"source": source, "integration_name": name})
    assert page.status_code == 200, page.text
    assert page.headers["cache-control"] == "no-store"
    text = html.unescape(page.text)
    [key] = set(KEY.findall(text))
    found = re.search(rf"/console/channels/{channel_id}/integrations/(\d+)\"", text)
    assert found is not None
    return text, int(found.group(1)), key


async def _push(api: Api, key: str, path: str = "prometheus", body: Any = None,
                **params: str) -> Any:
    return await api.client.post(f"/event/push/alert/{path}",
                                 params={"integration_key": key, **params},
                                 json=AM_PUSH if body is None else body)


async def _audit(api: Api, account_id: int) -> list[tuple[str, str]]:
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                  .where(audit_log.c.account_id == account_id,
                                         audit_log.c.is_write).order_by(audit_log.c.id))
        return [(r.operation, r.credential) for r in rows]


@pytest.mark.parametrize("source", ["prometheus", "grafana", "webhook", "standard"])
async def test_adding_an_integration_shows_its_key_and_snippet_once(
        api: Api, owner: Person, console: Browser, source: str) -> None:
    channel_id = await _channel(api, owner)
    base = f"/console/channels/{channel_id}/integrations"
    form = await console.get(f"{base}/new?source={source}")
    assert form.status_code == 200
    assert f'value="{source}" checked' in form.text
    text, integration_id, key = await _add(console, channel_id, source)
    base_url = api.runtime.settings.base_url.rstrip("/")
    assert SNIPPET_OF[source] in text
    assert f"{base_url}/event/push/alert/" in text and key in text
    assert "curl -X POST" in text
    # Never again: not on the integration's page, not in the list, not in the audit log.
    page = await console.get(f"{base}/{integration_id}")
    listed = await console.get(base)
    for later in (page, listed):
        assert later.status_code == 200
        assert key not in later.text and key[-6:] in later.text
    assert KEY.search(html.unescape(page.text)) is None
    assert await _audit(api, owner.account_id) == [("channel.create", "app_key"),
                                                   ("integration.create", "session")]
    async with api.runtime.db.transaction(write=False) as conn:
        rows = [str(tuple(r)) for r in await conn.execute(select(audit_log))]
    assert not any(key in row for row in rows)


async def test_the_shown_key_opens_an_incident_and_the_page_says_so(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, key = await _add(console, channel_id, "prometheus")
    before = set(await incident_ids(api, owner))
    pushed = await _push(api, key)
    assert pushed.status_code == 200, pushed.text
    [incident_id] = [i for i in await incident_ids(api, owner) if i not in before]
    # The same alert again joins its incident.
    assert (await _push(api, key)).status_code == 200
    page = await console.get(f"/console/channels/{channel_id}/integrations/{integration_id}")
    text = page.text
    assert text.count("Disk full on db-1") == 2
    assert "Opened an incident" in text and "Joined an open incident" in text
    assert f'href="/console/incidents/{incident_id}"' in text
    assert "Prometheus Alertmanager" in text


async def test_rotating_the_key_refuses_the_old_one_at_once(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, old = await _add(console, channel_id, "standard")
    page = f"/console/channels/{channel_id}/integrations/{integration_id}"
    assert (await _push(api, old)).status_code == 200  # and remembered by the process
    confirm = await console.get(page + "/rotate")
    assert confirm.status_code == 200 and old[-6:] in confirm.text
    shown = await console.post(page + "/rotate", {"source": "prometheus"})
    assert shown.status_code == 200 and shown.headers["cache-control"] == "no-store"
    [new] = set(KEY.findall(html.unescape(shown.text)))
    assert new != old and "webhook_configs:" in shown.text
    assert (await _push(api, old)).status_code == 401
    # Even a push with nothing to store: the old key is refused, not remembered.
    assert (await _push(api, old, body={"alerts": []})).status_code == 401
    assert (await _push(api, new)).status_code == 200
    after = await console.get(page)
    assert new not in after.text and new[-6:] in after.text
    assert ("integration.rotate-key", "session") in await _audit(api, owner.account_id)
    # The API's extension operation does the same.
    rotated = await ok(api, "/integration/rotate-key", {"integration_id": integration_id}, owner)
    assert (await _push(api, new)).status_code == 401
    assert (await _push(api, rotated["integration_key"])).status_code == 200


async def test_the_last_events_say_what_became_of_them_refusals_included(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, key = await _add(console, channel_id, "webhook")
    page = f"/console/channels/{channel_id}/integrations/{integration_id}"
    good = {"title": "Queue stuck", "status": "firing", "id": "q-1"}
    assert (await _push(api, key, "webhook", good)).status_code == 200
    recovered = {"title": "Queue stuck", "status": "resolved", "id": "q-1"}
    assert (await _push(api, key, "webhook", recovered, alert_key="id")).status_code == 200
    # A body without the mapped title is refused, with the reason.
    refused = await _push(api, key, "webhook", {"status": "firing"})
    assert refused.status_code == 400
    await ok(api, "/channel/disable", {"channel_id": channel_id}, owner)
    assert (await _push(api, key, "webhook", good)).status_code == 400
    text = html.unescape((await console.get(page)).text)
    assert text.count("Refused") == 2
    assert "nothing at 'title' in the body" in text
    assert "does not accept alerts" in text
    assert "Opened an incident" in text and "Generic JSON webhook" in text
    # A wrong key is nobody's event: nothing recorded, nothing written.
    assert (await _push(api, "ik_" + "x" * 43, "webhook", good)).status_code == 401


async def test_a_test_alert_goes_through_ingestion_and_shows_its_outcome(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, _key = await _add(console, channel_id, "grafana")
    page = f"/console/channels/{channel_id}/integrations/{integration_id}"
    before = set(await incident_ids(api, owner))
    sent = await console.post(page + "/test-alert", {"event_status": "Warning"})
    assert sent.status_code == 303 and sent.headers["location"] == page + "#events"
    [incident_id] = [i for i in await incident_ids(api, owner) if i not in before]
    shown = await console.get(page)
    assert f"The test alert opened the incident {incident_id}." in shown.text
    assert "Test alert from dutyline" in shown.text and "Test alert" in shown.text
    incident = await ok(api, "/incident/info", {"incident_id": incident_id}, owner)
    assert incident["incident_severity"] == "Warning"
    assert ("integration.test-alert", "session") in await _audit(api, owner.account_id)
    # A disabled channel refuses it, in words.
    await ok(api, "/channel/disable", {"channel_id": channel_id}, owner)
    refused = await console.post(page + "/test-alert", {"event_status": "Critical"})
    assert refused.status_code == 303
    assert "does not accept alerts" in (await console.get(page)).text


async def test_errors_show_at_their_field(api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    new = f"/console/channels/{channel_id}/integrations/new"
    blank = await console.post(new, {"source": "grafana", "integration_name": ""})
    assert blank.status_code == 400
    assert 'id="e-integration_name"' in blank.text and 'value="grafana" checked' in blank.text
    no_source = await console.post(new, {"integration_name": "Prod"})
    assert no_source.status_code == 400 and 'id="e-source"' in no_source.text
    assert 'value="Prod"' in no_source.text
    await _add(console, channel_id, "grafana", name="Prod")
    taken = await console.post(new, {"source": "grafana", "integration_name": "Prod"})
    assert taken.status_code == 400 and "already exists" in taken.text


async def test_deleting_an_integration_stops_its_key(api: Api, owner: Person,
                                                     console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, key = await _add(console, channel_id, "prometheus")
    page = f"/console/channels/{channel_id}/integrations/{integration_id}"
    assert (await console.get(page + "/delete")).status_code == 200
    done = await console.post(page + "/delete")
    assert done.status_code == 303
    assert done.headers["location"] == f"/console/channels/{channel_id}/integrations"
    assert (await _push(api, key)).status_code == 401
    listed = await console.get(done.headers["location"])
    assert "is deleted" in listed.text and "No integration yet" in listed.text
    gone = await console.get(page)
    assert gone.status_code == 400 and "not found" in gone.text


async def test_a_read_only_member_sees_no_controls_and_forged_posts_are_refused(
        api: Api, owner: Person, console: Browser) -> None:
    channel_id = await _channel(api, owner)
    _, integration_id, key = await _add(console, channel_id, "prometheus")
    base = f"/console/channels/{channel_id}/integrations"
    page = f"{base}/{integration_id}"
    plain = await new_member(api, owner, name="Plain", builtin="member")
    b = await signed_in(api, plain)
    try:
        listed = await b.get(base)
        assert listed.status_code == 200 and "Prod" in listed.text
        assert "/new" not in listed.text
        shown = await b.get(page)
        assert shown.status_code == 200
        for control in ("/rotate", "/delete", "/test-alert"):
            assert control not in shown.text
        for form in (base + "/new", page + "/rotate", page + "/delete"):
            assert (await b.get(form)).status_code == 403
        refused = [await b.post(base + "/new", {"source": "grafana", "integration_name": "X"}),
                   await b.post(page + "/rotate"), await b.post(page + "/delete"),
                   await b.post(page + "/test-alert")]
        assert [r.status_code for r in refused] == [403] * 4
        assert all("Not allowed" in r.text for r in refused)
    finally:
        await b.aclose()
    assert (await _push(api, key)).status_code == 200  # still the same key


async def test_another_accounts_ids_are_not_found(api: Api, owner: Person,
                                                  console: Browser) -> None:
    mine = await _channel(api, owner)
    other = await new_account(api, "Globex")
    theirs = await _channel(api, other, "Theirs")
    their_integration = (await ok(api, "/integration/create", {
        "channel_id": theirs, "integration_name": "Theirs"}, other))["integration_id"]
    _, my_integration, _ = await _add(console, mine, "standard")
    for path in (f"/console/channels/{theirs}/integrations",
                 f"/console/channels/{theirs}/integrations/{their_integration}",
                 f"/console/channels/{mine}/integrations/{their_integration}",
                 f"/console/channels/{theirs}/integrations/{my_integration}",
                 f"/console/channels/{mine}/integrations/{their_integration}/rotate",
                 f"/console/channels/{mine}/integrations/nonsense"):
        # Not found, as through the API (ResourceNotFound: 400).
        missing = await console.get(path)
        assert missing.status_code == 400 and "not found" in missing.text, path
        assert "Theirs" not in missing.text
    for path in (f"/console/channels/{mine}/integrations/{their_integration}/rotate",
                 f"/console/channels/{mine}/integrations/{their_integration}/test-alert",
                 f"/console/channels/{mine}/integrations/{their_integration}/delete",
                 f"/console/channels/{theirs}/integrations/new"):
        refused = await console.post(path, {"source": "grafana", "integration_name": "X"})
        assert refused.status_code == 400 and "not found" in refused.text, path


def _amtool() -> str:
    found = shutil.which("amtool")
    if found:
        return found
    if os.environ.get("DUTYLINE_TEST_PROMETHEUS") == "1":
        pytest.fail("amtool is not installed, and DUTYLINE_TEST_PROMETHEUS=1 requires it")
    pytest.skip("amtool is not installed (apt-get install -y prometheus-alertmanager)")


async def test_the_alertmanager_snippet_passes_amtool_check_config(
        api: Api, owner: Person, console: Browser, tmp_path: Path) -> None:
    amtool = _amtool()
    channel_id = await _channel(api, owner)
    page = await console.post(f"/console/channels/{channel_id}/integrations/new",
                              {"source": "prometheus", "integration_name": "Prod's \"AM\""})
    found = re.search(r'<pre id="snippet-alertmanager"[^>]*>(.*?)</pre>', page.text,
                      re.DOTALL)
    assert found is not None
    config = tmp_path / "alertmanager.yml"
    config.write_text(html.unescape(found.group(1)), encoding="utf-8")
    checked = await anyio.to_thread.run_sync(functools.partial(
        subprocess.run, [amtool, "check-config", str(config)], capture_output=True, text=True,
        timeout=60, check=False))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Found:" in checked.stdout and "1 receivers" in checked.stdout


async def test_the_api_operations_beside_the_pages(api: Api, owner: Person) -> None:
    """/integration/rotate-key and /integration/test-alert, the extensions the pages use,
    with the permissions of /integration/create."""
    channel_id = await _channel(api, owner)
    made = await ok(api, "/integration/create", {"channel_id": channel_id,
                                                 "integration_name": "std"}, owner)
    sent = await ok(api, "/integration/test-alert",
                    {"integration_id": made["integration_id"]}, owner)
    assert sent["outcome"] == "opened" and sent["alert_key"].startswith("dutyline-test-")
    assert sent["incident_id"] in await incident_ids(api, owner)
    reader = await new_member(api, owner, name="Reader", builtin="member")
    for path in ("/integration/rotate-key", "/integration/test-alert"):
        refused = await api.call(path, {"integration_id": made["integration_id"]},
                                 key=reader.key)
        assert refused.body["error"]["code"] == "AccessDenied", path
    change = await ok(api, "/integration/create", {
        "channel_id": channel_id, "integration_name": "changes",
        "integration_type": "change"}, owner)
    not_alerts = await api.call("/integration/test-alert",
                                {"integration_id": change["integration_id"]}, key=owner.key)
    assert not_alerts.body["error"]["code"] == "InvalidParameter"
    rotated = await ok(api, "/integration/rotate-key",
                       {"integration_id": change["integration_id"]}, owner)
    assert rotated["integration_key"].startswith("ik_")
