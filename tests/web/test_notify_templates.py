"""The Templates pages: the list, the editor (a body per channel kind, what a body may use, each
kind's size limit), the preview against a real incident (the e-mail in a sandboxed frame of its
own, with a strict policy), errors at their line, deleting, permissions and other accounts."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from markupsafe import escape

from dutyline.kit.channels import TEMPLATE_CHANNELS
from dutyline.web.pages import notify_templates as page
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, signed_in
from tests.web.incident_support import audit_rows, ok

pytestmark = pytest.mark.anyio

PRESET = "6321aad26c12104586a88916"
HOSTILE = '<img src=x onerror="alert(1)">'


async def _info(api: Api, who: Person, template_id: str) -> dict[str, Any]:
    data: dict[str, Any] = await ok(api, "/template/info", {"template_id": template_id}, who)
    return data


async def _names(api: Api, who: Person) -> list[str]:
    data = await ok(api, "/template/list", {"limit": 100}, who)
    return [i["template_name"] for i in data["items"]]


async def _create(console: Browser, name: str, **bodies: str) -> str:
    done = await console.post("/console/templates/new", {"template_name": name, **bodies})
    assert done.status_code == 303, done.text
    location = str(done.headers["location"])
    assert re.fullmatch(r"/console/templates/[0-9a-f]{24}", location)
    return location


def _near(text: str, field: str) -> str:
    """The page from the kind of `field` to the next kind's."""
    start = text.index(f'id="kind-{field}"')
    end = text.find('<details class="kind"', start + 1)
    return text[start:end if end > 0 else None]


def _not_found(answer: Any) -> bool:
    """The API's answer to an id of nothing the reader may see (400 ResourceNotFound)."""
    return answer.status_code == 400 and "not found" in answer.text


# --- the list -------------------------------------------------------------------------------


async def test_the_list_searches_pages_and_says_what_to_do(api: Api, owner: Person,
                                                           console: Browser) -> None:
    listed = await console.get("/console/templates")
    assert listed.status_code == 200
    assert f'href="/console/templates/{PRESET}">Default</a>' in listed.text
    assert 'href="/console/templates/new"' in listed.text
    assert "1 template</p>" in listed.text
    assert "Only the built-in default so far" in listed.text
    for i in range(20):
        await ok(api, "/template/create", {"template_name": f"Prod {i:02}"}, owner)
    first = (await console.get("/console/templates")).text
    assert "21 templates" in first and 'href="/console/templates?p=2"' in first
    second = (await console.get("/console/templates?p=2")).text
    assert "Page 2 of 2" in second and second.count('<th scope="row"') == 1
    found = (await console.get("/console/templates?q=prod 0")).text
    assert "10 templates found" in found and "Default</a>" not in found
    none = (await console.get("/console/templates?q=nothing-like-it")).text
    assert "No template matches this search." in none


async def test_the_navigation_offers_templates_to_those_who_may_read_them(
        api: Api, owner: Person, console: Browser) -> None:
    page_text = (await console.get("/console/incidents")).text
    assert 'href="/console/templates"' in page_text
    member = await signed_in(api, await new_member(api, owner, name="Reader"))
    assert 'href="/console/templates"' in (await member.get("/console/incidents")).text
    await member.aclose()


# --- creating and editing -------------------------------------------------------------------


async def test_the_editor_has_a_body_per_kind_with_what_it_may_use(console: Browser) -> None:
    form = await console.get("/console/templates/new")
    assert form.status_code == 200
    for channel in TEMPLATE_CHANNELS:
        assert f'<textarea id="f-{channel}" name="{channel}"' in form.text
    # Each kind's size limit, from the service.
    assert "DingTalk takes at most 4000 bytes in one message" in _near(form.text, "dingtalk")
    assert "Telegram takes at most 4096 bytes" in _near(form.text, "telegram")
    assert "a body holds at most 65536 characters" in _near(form.text, "sms")
    assert "HTML (Go html/template)" in _near(form.text, "email")
    # The variables of the data templates see, and the engine's functions.
    reference = form.text[form.text.index('id="reference"'):]
    for name in (".Title", ".IncidentSeverity", ".Labels", ".Alerts", ".AlertSeverity",
                 ".Creator", ".PersonName", ".DetailUrl"):
        assert f"<code>{name}</code>" in reference, name
    for name in ("printf", "eq", "len", "date", "joinAlertLabels",
                 "colorSeverity", "mdToHtml"):
        assert f"<code>{name}</code>" in reference, name
    assert "frame-src 'self'" in form.headers["content-security-policy"]


async def test_creating_and_editing_a_template_by_form(api: Api, owner: Person,
                                                      console: Browser) -> None:
    path = await _create(console, "Prod pages", description="for prod",
                         sms="[{{.IncidentSeverity}}] {{.Title}}",
                         email="<b>{{.Title}}</b>\r\n<p>{{.Description}}</p>")
    template_id = path.rsplit("/", 1)[1]
    stored = await _info(api, owner, template_id)
    assert stored["template_name"] == "Prod pages" and stored["description"] == "for prod"
    assert stored["sms"] == "[{{.IncidentSeverity}}] {{.Title}}"
    assert stored["email"] == "<b>{{.Title}}</b>\n<p>{{.Description}}</p>"  # CRLF as LF
    assert stored["dingtalk"] == ""
    rows = await audit_rows(api, owner.account_id)
    assert [(r.operation, r.credential) for r in rows if r.is_write] == [
        ("template.create", "session")]

    shown = await console.get(path)
    assert shown.status_code == 200
    assert "<h1>Prod pages</h1>" in shown.text
    assert html.escape("[{{.IncidentSeverity}}] {{.Title}}", quote=False) in shown.text
    assert "The template Prod pages is saved." in shown.text

    done = await console.post(path, {"template_name": "Prod", "description": "",
                                     "sms": "{{.Title}}", "voice": "Call: {{.Title}}"})
    assert done.status_code == 303 and done.headers["location"] == path
    stored = await _info(api, owner, template_id)
    assert (stored["template_name"], stored["sms"], stored["voice"], stored["email"]) == (
        "Prod", "{{.Title}}", "Call: {{.Title}}", "")
    rows = await audit_rows(api, owner.account_id)
    assert [(r.operation, r.credential) for r in rows if r.is_write][-1] == (
        "template.update", "session")


async def test_a_name_refused_shows_by_its_field(api: Api, owner: Person,
                                                console: Browser) -> None:
    await _create(console, "Taken")
    again = await console.post("/console/templates/new", {"template_name": "taken",
                                                          "sms": "{{.Title}}"})
    assert again.status_code == 400
    assert 'id="e-template_name"' in again.text and "already exists" in again.text
    assert "{{.Title}}</textarea>" in again.text  # what was typed is kept
    empty = await console.post("/console/templates/new", {"template_name": ""})
    assert empty.status_code == 400 and "is required" in empty.text
    assert await _names(api, owner) == ["Default", "Taken"]


async def test_a_body_that_does_not_parse_shows_its_line(api: Api, owner: Person,
                                                        console: Browser) -> None:
    refused = await console.post("/console/templates/new", {
        "template_name": "Broken", "sms": "fine\n{{nope .Title}}"})
    assert refused.status_code == 400
    near = _near(refused.text, "sms")
    assert 'aria-describedby="h-sms e-sms"' in near and 'aria-invalid="true"' in near
    assert 'id="e-sms"' in near
    assert escape('Line 2: function "nope" not defined') in near
    assert "Invalid parameter" not in refused.text
    assert "Broken" not in await _names(api, owner)
    # The e-mail's escaping refuses what html/template refuses, at its line too.
    email = await console.post("/console/templates/new", {
        "template_name": "Broken", "email": "<p>\n\n{{if .Title}}"})
    assert email.status_code == 400
    assert "Line 3: unexpected EOF" in _near(email.text, "email")
    # The preview of a broken body says the same beside it, without saving.
    previewed = await console.post("/console/templates/new", {
        "template_name": "Broken", "sms": "a\n\n{{.Title}", "preview": "sms"})
    assert previewed.status_code == 200
    near = _near(previewed.text, "sms")
    assert 'id="pe-sms"' in near and "Line 3: bad character" in near


async def test_a_body_that_fails_while_rendering_says_why(console: Browser) -> None:
    previewed = await console.post("/console/templates/new", {
        "sms": "{{index .Alerts 5}}", "preview": "sms"})
    near = _near(previewed.text, "sms")
    assert "This body cannot be used: error calling index: index out of range: 5" in near


# --- previews -------------------------------------------------------------------------------


async def test_the_preview_renders_a_real_recent_incident(api: Api, owner: Person,
                                                         console: Browser) -> None:
    older = await ok(api, "/incident/create", {"title": "older incident",
                                               "incident_severity": "Warning"}, owner)
    api.runtime.clock.advance(60)  # type: ignore[attr-defined]
    newest = await ok(api, "/incident/create", {"title": f"checkout down {HOSTILE}",
                                                "incident_severity": "Critical"}, owner)
    form = await console.get("/console/templates/new")
    assert f'<option value="{newest["incident_id"]}" selected>' in form.text
    assert f'<option value="{older["incident_id"]}">' in form.text
    previewed = await console.post("/console/templates/new", {
        "sms": "[{{.IncidentSeverity}}] {{.Title}}", "preview": "sms",
        "incident_id": newest["incident_id"]})
    assert previewed.status_code == 200
    near = _near(previewed.text, "sms")
    assert f'<pre class="preview-text">[Critical] checkout down {escape(HOSTILE)}</pre>' \
        in near
    assert "Rendered for the incident #" in near
    # Another incident chosen; an empty kind previews the built-in default.
    other = await console.post("/console/templates/new", {
        "preview": "telegram", "incident_id": older["incident_id"]})
    near = _near(other.text, "telegram")
    assert "older incident" in near and "this is the built-in default" in near
    # Nothing was saved by previewing.
    assert await _names(api, owner) == ["Default"]


async def test_an_account_without_incidents_previews_a_sample_and_says_so(
        console: Browser) -> None:
    form = await console.get("/console/templates/new")
    assert "The account has no incident in the last 31 days" in form.text
    previewed = await console.post("/console/templates/new", {"sms": "{{.Title}}",
                                                              "preview": "sms"})
    near = _near(previewed.text, "sms")
    assert "Rendered for a sample incident." in near
    assert "CPU usage above 90% on db-01</pre>" in near


async def test_a_message_over_its_platform_s_limit_is_told_in_words(
        console: Browser) -> None:
    previewed = await console.post("/console/templates/new", {
        "dingtalk": "{{.Title}}" + "x" * 4100, "preview": "dingtalk"})
    near = _near(previewed.text, "dingtalk")
    assert re.search(r"Too long: 41\d\d bytes, over the 4000 bytes DingTalk takes in one "
                     r"message\. Delivery cuts the message there\.", near)
    fits = await console.post("/console/templates/new", {"dingtalk": "{{.Title}}",
                                                         "preview": "dingtalk"})
    assert re.search(r"\d+ of 4000 bytes\.", _near(fits.text, "dingtalk"))


async def test_the_email_preview_is_a_sandboxed_frame_with_a_strict_policy(
        api: Api, owner: Person, console: Browser) -> None:
    made = await ok(api, "/incident/create", {"title": f"db <down> {HOSTILE}",
                                              "incident_severity": "Critical"}, owner)
    previewed = await console.post("/console/templates/new", {
        "email": "<h1>{{.Title}}</h1><script>alert(1)</script>", "preview": "email",
        "incident_id": made["incident_id"]})
    assert previewed.status_code == 200
    assert "frame-src 'self'" in previewed.headers["content-security-policy"]
    frame = re.search(r'<iframe class="mail-frame" sandbox="" referrerpolicy="no-referrer" '
                      r'src="([^"]+)" title="Preview of the e-mail"></iframe>', previewed.text)
    assert frame, _near(previewed.text, "email")
    url = html.unescape(frame[1])
    assert url.startswith("/console/templates/preview/email?")
    got = await console.get(url)
    assert got.status_code == 200
    assert "<h1>db &lt;down&gt; &lt;img src=x onerror=&#34;alert(1)&#34;&gt;</h1>" in got.text
    policy = got.headers["content-security-policy"]
    directives = {d.strip().split(" ")[0]: d.strip() for d in policy.split(";")}
    assert directives["sandbox"] == "sandbox"  # no allow-scripts, no allow-same-origin
    assert directives["default-src"] == "default-src 'none'"
    assert "script-src" not in directives
    assert directives["frame-ancestors"] == "frame-ancestors 'self'"
    assert got.headers["x-frame-options"] == "SAMEORIGIN"
    # The address works for the session it was made for only, and as made.
    tampered = url.replace("sig=", "sig=0")
    assert _not_found(await console.get(tampered))
    other = await signed_in(api, owner)
    assert _not_found(await other.get(url))
    await other.aclose()


async def test_htmx_gets_one_kind_s_preview_back(api: Api, owner: Person,
                                                console: Browser) -> None:
    await console.get("/console/templates/new")
    answer = await console.client.post(
        "/console/templates/preview",
        data={"sms": "hello {{.Title}}", "preview": "sms", "incident_id": ""},
        headers={"HX-Request": "true", "X-CSRF-Token": console.csrf_token})
    assert answer.status_code == 200
    assert "<html" not in answer.text
    assert "hello CPU usage above 90% on db-01</pre>" in answer.text


# --- the preset, deleting -------------------------------------------------------------------


async def test_the_preset_reads_but_cannot_be_changed(api: Api, owner: Person,
                                                     console: Browser) -> None:
    shown = await console.get(f"/console/templates/{PRESET}")
    assert shown.status_code == 200
    assert "The built-in default" in shown.text and " readonly" in shown.text
    assert "Save template" not in shown.text
    previewed = await console.post(f"/console/templates/{PRESET}", {"preview": "sms"})
    assert "CPU usage above 90% on db-01" in _near(previewed.text, "sms")
    refused = await console.post(f"/console/templates/{PRESET}/delete")
    assert refused.status_code == 400
    assert "is the built-in preset template, which cannot be deleted" in refused.text


async def test_deleting_a_template_is_confirmed(api: Api, owner: Person,
                                               console: Browser) -> None:
    path = await _create(console, "Doomed", sms="{{.Title}}")
    confirm = await console.get(f"{path}/delete")
    assert confirm.status_code == 200
    assert "Delete the template Doomed?" in confirm.text
    assert "Escalation rules that name it send with the built-in default" in confirm.text
    done = await console.post(f"{path}/delete")
    assert done.status_code == 303 and done.headers["location"] == "/console/templates"
    assert "Doomed" not in await _names(api, owner)
    assert _not_found(await console.get(path))
    rows = await audit_rows(api, owner.account_id)
    assert [(r.operation, r.credential) for r in rows if r.is_write][-1] == (
        "template.delete", "session")


# --- permissions and other accounts ---------------------------------------------------------


async def test_a_member_reads_and_previews_but_may_not_change(api: Api, owner: Person,
                                                             console: Browser) -> None:
    path = await _create(console, "Ops", sms="{{.Title}}")
    member = await signed_in(api, await new_member(api, owner, name="Reader"))
    listed = await member.get("/console/templates")
    assert listed.status_code == 200 and ">Ops</a>" in listed.text
    assert 'href="/console/templates/new"' not in listed.text
    shown = await member.get(path)
    assert shown.status_code == 200
    assert "needs the permission to manage templates" in shown.text
    assert "Save template" not in shown.text and f"{path}/delete" not in shown.text
    previewed = await member.post(path, {"sms": "{{.Title}}!", "preview": "sms"})
    assert previewed.status_code == 200 and "on db-01!</pre>" in previewed.text
    for method, where, form in (("get", "/console/templates/new", None),
                                ("post", "/console/templates/new", {"template_name": "X"}),
                                ("post", path, {"template_name": "Changed"}),
                                ("get", f"{path}/delete", None),
                                ("post", f"{path}/delete", {})):
        answer = await (member.get(where) if method == "get" else member.post(where, form))
        assert answer.status_code == 403, (method, where)
        assert "Not allowed" in answer.text or "permission" in answer.text
    assert await _names(api, owner) == ["Default", "Ops"]
    await member.aclose()


async def test_another_account_s_template_is_not_found(api: Api, owner: Person,
                                                      other_owner: Person,
                                                      console: Browser) -> None:
    theirs = (await ok(api, "/template/create", {"template_name": "Theirs",
                                                 "sms": "{{.Title}}"}, other_owner))
    path = f"/console/templates/{theirs['template_id']}"
    assert _not_found(await console.get(path))
    assert _not_found(await console.post(path, {"template_name": "Mine"}))
    assert _not_found(await console.get(f"{path}/delete"))
    assert _not_found(await console.post(f"{path}/delete"))
    assert _not_found(await console.get("/console/templates/not-an-id"))
    assert (await _info(api, other_owner, theirs["template_id"]))["template_name"] == "Theirs"
    # Nor is their incident one to preview with.
    incident = await ok(api, "/incident/create", {"title": "their incident",
                                                  "incident_severity": "Info"}, other_owner)
    previewed = await console.post("/console/templates/new", {
        "sms": "{{.Title}}", "preview": "sms", "incident_id": incident["incident_id"]})
    assert "their incident" not in previewed.text
    assert 'id="e-incident_id"' in previewed.text


def test_the_reference_is_derived_from_the_engine_and_the_data() -> None:
    paths = {v.path for v in page.VARIABLES}
    assert {".Title", ".Labels", ".Alerts", ".AssignedTo"} <= paths
    alerts = next(v for v in page.VARIABLES if v.path == ".Alerts")
    assert alerts.kind == "list" and ".AlertSeverity" in {f.path for f in alerts.fields}
    labels = next(v for v in page.VARIABLES if v.path == ".Labels")
    assert labels.kind == "map" and labels.fields == ()
    assert "printf" in page.GO_FUNCTIONS and "date" in page.NOTIFICATION_FUNCTIONS
    assert page.BODY_MAX == 65_536
    assert page.body_error("template: body:3:7: bad").line == 3
    assert page.body_error("template: body:3:7: bad").column == 7
    assert page.body_error("template: body: oops") == page.BodyError("oops")


async def test_the_pages_speak_the_reader_s_language(console: Browser) -> None:
    zh = {"Accept-Language": "zh-CN"}
    listed = (await console.get("/console/templates", headers=zh)).text
    assert "通知模板" in listed and "新建模板" in listed
    form = (await console.get("/console/templates/new", headers=zh)).text
    assert "钉钉 单条消息最多 4000 字节" in form and "变量和函数" in form
    refused = (await console.post("/console/templates/new", {
        "template_name": "x", "sms": "a\n{{nope}}"}, headers=zh)).text
    assert "第 2 行" in _near(refused, "sms")
