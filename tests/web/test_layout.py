"""The console's scaffolding: the server's address opens the console; the navigation shows each
person the groups their roles open, in their language; every page module is imported where
the import graph sees it; every word the templates translate is in the zh-CN catalog; and the
list macros (search, table, empty state, pager, confirm-delete) on the pages that use them."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import jinja2
import pytest
from babel.messages.pofile import read_po

from dutyline.api.i18n import LOCALES_DIR
from dutyline.api.permissions import ACCOUNT_MANAGE, CHANNEL_VIEW, INCIDENT_MANAGE
from dutyline.api.unit import unit
from dutyline.kit.clock import SystemClock
from dutyline.web import navigation, routes, security
from dutyline.web import service as signin
from dutyline.web.navigation import Group, Link, menu
from dutyline.web.page import Pages
from dutyline.web.templating import TEMPLATES_DIR
from tests.arch.imports import SRC, imports_of, modules
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.console import Browser, browser, signed_in

anyio = pytest.mark.anyio

ZH = {"Accept-Language": "zh-CN"}


def _nav(html: str) -> str:
    """The header: the navigation and the person's menu."""
    found = re.search(r'<header class="top">.*?</header>', html, re.S)
    assert found, html[:500]
    return found[0]


def _links(html: str) -> list[str]:
    return re.findall(r'<a href="(/console/[^"]*)"', _nav(html))


# --- the server's address ---------------------------------------------------------------


@anyio
@pytest.mark.parametrize("path", ["/", "/console"])
async def test_the_address_opens_the_sign_in_page_for_a_visitor(api: Api, path: str) -> None:
    b = browser(api)
    for method in ("GET", "HEAD"):
        answer = await b.client.request(method, path)
        assert answer.status_code == 303, (method, answer.text)
        assert answer.headers["location"] == "/console/sign-in"
        # What it answers depends on the cookie: never kept by a cache.
        assert answer.headers["cache-control"] == security.PAGE_CACHE
        assert "content-security-policy" in answer.headers
    page = await b.get("/", follow_redirects=True)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'action="/console/sign-in"' in page.text
    await b.aclose()


@anyio
@pytest.mark.parametrize("path", ["/", "/console", "/console/"])
async def test_the_address_opens_the_incident_list_when_signed_in(
        console: Browser, path: str) -> None:
    for method in ("GET", "HEAD"):
        answer = await console.client.request(method, path)
        assert answer.status_code == 303, method
        assert answer.headers["location"] == "/console/incidents"
    page = await console.get(path, follow_redirects=True)
    assert page.status_code == 200 and "<h1>Incidents</h1>" in page.text


@anyio
async def test_the_address_asks_for_the_code_a_session_still_owes(api: Api,
                                                                    owner: Person) -> None:
    async with api.runtime.db.transaction(write=False) as conn:
        caller = await signin.caller_of(conn, account_id=owner.account_id,
                                        person_id=owner.person_id)
    assert caller is not None
    async with unit(api.runtime, signin.person_actor(caller, api.runtime.clock),
                    write=True) as work:
        token = await signin.start_session(work.conn, work.actor, user_agent="tests",
                                           ip="127.0.0.7", second_factor_pending=True)
    b = browser(api)
    b.plant(security.SESSION_COOKIE, token)
    answer = await b.get("/")
    assert (answer.status_code, answer.headers["location"]) == (303, "/console/sign-in/code")
    await b.aclose()


@anyio
async def test_the_api_keeps_its_answers_beside_the_address(api: Api, owner: Person) -> None:
    """Only GET and HEAD of `/` open the console: the API's routes and errors are as before."""
    posted = await api.raw("POST", "/", params={"app_key": owner.key}, json={})
    assert posted.status_code == 405
    assert posted.json()["error"]["code"] == "MethodNotAllowed"
    assert set(posted.headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}
    assert (await api.raw("GET", "/healthz")).json() == {"status": "ok"}
    missing = await api.raw("GET", "/nowhere")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "RouteNotFound"
    listed = await api.raw("POST", "/team/list", params={"app_key": owner.key}, json={})
    assert listed.status_code == 200


# --- the navigation ---------------------------------------------------------------------


@anyio
async def test_the_owner_sees_every_group(console: Browser) -> None:
    page = (await console.get("/console/members")).text
    header = _nav(page)
    assert re.findall(r"<summary[^>]*>([^<]+)</summary>", header) == ["Configuration",
                                                                     "Account"]
    assert _links(page) == ["/console/incidents", "/console/on-call", "/console/channels",
                            "/console/schedules", "/console/templates", "/console/members",
                            "/console/teams", "/console/roles", "/console/settings",
                            "/console/me", "/console/app-keys"]
    # The page's own link, and its group, are marked; a prefix ("/console/me") is not.
    assert re.findall(r'<a href="([^"]+)" aria-current="page"', header) == ["/console/members"]
    assert '<summary class="current">Configuration</summary>' in header
    assert re.search(r'<form class="sign-out" method="post" action="/console/sign-out">',
                     header)
    assert "Signed in as Acme Owner" in header


@anyio
async def test_a_read_only_member_sees_only_what_they_may_read(api: Api,
                                                             owner: Person) -> None:
    reader = await new_member(api, owner, name="Reader", builtin="member")
    b = await signed_in(api, reader)
    page = (await b.get("/console/incidents")).text
    # Of the configuration, only what the built-in Member may read: channels and templates.
    assert _links(page) == ["/console/incidents", "/console/on-call", "/console/channels",
                            "/console/templates", "/console/me", "/console/app-keys"]
    assert re.findall(r'<a href="([^"]+)" aria-current="page"', _nav(page)) == [
        "/console/incidents"]
    # The lists stay open to every member (as /member/list is), without their controls.
    members = await b.get("/console/members")
    assert members.status_code == 200 and "Invite a member" not in members.text
    teams = await b.get("/console/teams")
    assert teams.status_code == 200 and "No teams yet." in teams.text
    assert 'href="/console/teams/new"' not in teams.text
    await b.aclose()


def test_a_link_shows_to_whoever_holds_any_permission_it_needs() -> None:
    from dutyline.api.actor import Actor

    groups = (
        Group("Incidents", (Link("Incidents", "/console/incidents"),)),
        Group("Configuration", (
            Link("Channels", "/console/channels", needs=(CHANNEL_VIEW, INCIDENT_MANAGE)),
            Link("Members", "/console/members", needs=(ACCOUNT_MANAGE,)),
        )),
        Group("Account", (Link("Your profile", "/console/me"),), personal=True),
    )

    def shown(permissions: set[str], path: str = "/console/incidents") -> list[list[str]]:
        actor = Actor(account_id=1, person_id=2, clock=SystemClock(),
                      permissions=frozenset(permissions))
        return [[link.label for link in g.links] for g in menu(actor, path, groups)]

    assert shown(set()) == [["Incidents"], ["Your profile"]]
    assert shown({INCIDENT_MANAGE}) == [["Incidents"], ["Channels"], ["Your profile"]]
    assert shown({CHANNEL_VIEW, ACCOUNT_MANAGE}) == [["Incidents"], ["Channels", "Members"],
                                                     ["Your profile"]]
    admin = Actor(account_id=1, person_id=2, clock=SystemClock(), is_admin=True)
    found = menu(admin, "/console/channels/12/edit", groups)
    assert [(g.label, g.current, g.single) for g in found] == [
        ("Incidents", False, True), ("Configuration", True, False), ("Account", False, False)]
    assert [link.path for g in found for link in g.links if link.current] == [
        "/console/channels"]


def test_every_link_of_the_navigation_opens_a_page() -> None:
    gets = {p.path for p in routes.all_pages() if p.method == "GET"}
    for group in navigation.NAVIGATION:
        for link in group.links:
            assert link.path in gets, link


@anyio
async def test_the_navigation_speaks_the_readers_language(console: Browser) -> None:
    page = (await console.get("/console/teams", headers=ZH)).text
    header = _nav(page)
    for word in ("故障", "值班", "配置", "成员", "团队", "账户", "个人资料", "退出登录",
                 "已登录\uff1aAcme Owner"):
        assert word in header, word
    assert '<nav class="main-nav" aria-label="主导航" lang="zh-CN">' in header
    assert '<a class="skip" href="#main" lang="zh-CN">跳到正文</a>' in page
    english = (await console.get("/console/teams")).text
    assert 'lang="zh-CN"' not in english and "团队" not in english


# --- page modules and the catalog ----------------------------------------------------------


def test_every_page_module_is_registered_where_the_import_graph_sees_it() -> None:
    folder = SRC / "web" / "pages"
    with_pages = set()
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pages" for t in node.targets)
               for node in tree.body):
            with_pages.add(f"dutyline.web.pages.{path.stem}")
    registered = {m.__name__ for m in routes.PAGE_MODULES}
    assert registered == with_pages
    assert all(isinstance(m.pages, Pages) for m in routes.PAGE_MODULES)
    known = modules()
    seen = {e.target for e in imports_of("dutyline.web.routes", known["dutyline.web.routes"],
                                         known)}
    assert with_pages <= seen, with_pages - seen


def _template_messages() -> set[str]:
    """The literal messages of every `t("...")` in the templates."""
    env = jinja2.Environment(autoescape=True)
    found: set[str] = set()
    for path in TEMPLATES_DIR.rglob("*.html"):
        tree = env.parse(path.read_text(encoding="utf-8"))
        for call in tree.find_all(jinja2.nodes.Call):
            if isinstance(call.node, jinja2.nodes.Name) and call.node.name == "t":
                first = call.args[0] if call.args else None
                if isinstance(first, jinja2.nodes.Const):
                    found.add(str(first.value))
    return found


def test_every_translated_word_of_the_console_is_in_the_zh_cn_catalog() -> None:
    catalog: dict[str, str] = {}
    for po_file in sorted((LOCALES_DIR / "zh_CN" / "LC_MESSAGES").glob("*.po")):
        with po_file.open("rb") as fh:
            catalog.update((str(m.id), str(m.string)) for m in read_po(fh) if m.id)
    wanted = _template_messages() | navigation.labels()
    assert {"Sign out", "Page {page} of {pages}", "Configuration"} <= wanted
    missing = sorted(m for m in wanted if not catalog.get(m))
    assert missing == []
    placeholder = re.compile(r"\{(\w+)\}")
    for message in wanted:
        assert sorted(placeholder.findall(message)) == sorted(
            placeholder.findall(catalog[message])), message


def test_templates_live_in_area_folders() -> None:
    loose = [p.name for p in TEMPLATES_DIR.glob("*.html")]
    assert loose == []
    assert {p.name for p in TEMPLATES_DIR.iterdir()} >= {
        "layout", "_macros", "auth", "incidents", "oncall", "me", "members", "teams"}


# --- the list macros ------------------------------------------------------------------------


@anyio
async def test_an_empty_list_says_so_and_offers_the_first_record(console: Browser) -> None:
    page = (await console.get("/console/teams")).text
    assert "<table" not in page
    assert re.search(r'<div class="empty">\s*<p>No teams yet.</p>\s*<p><a class="button primary"'
                     r' href="/console/teams/new">New team</a></p>', page)
    searched = (await console.get("/console/teams?q=nothing")).text
    assert "No team matches this search." in searched and "No teams yet." not in searched
    assert '<nav class="pager"' not in page


@anyio
async def test_the_pager_keeps_the_search_across_pages(api: Api, owner: Person,
                                                       console: Browser) -> None:
    for i in range(21):
        await console.post("/console/teams/new", {"team_name": f"Team {i:02}"})
    first = (await console.get("/console/teams?q=Team")).text
    assert re.search(r'<nav class="pager" aria-label="Pages of teams">\s*'
                     r'<span>Page 1 of 2</span>\s*'
                     r'<a rel="next" href="/console/teams\?q=Team&amp;p=2">Next page</a>', first)
    second = (await console.get("/console/teams?q=Team&p=2")).text
    assert '<a rel="prev" href="/console/teams?q=Team">Previous page</a>' in second
    assert "Team 20" in second and 'rel="next"' not in second
    zh = (await console.get("/console/teams?q=Team&p=2", headers=ZH)).text
    assert "第 2 页\uff0c共 2 页" in zh and "上一页" in zh


@anyio
async def test_a_deletion_is_confirmed_by_a_form_of_its_own(console: Browser) -> None:
    done = await console.post("/console/teams/new", {"team_name": "Doomed"})
    team_path = done.headers["location"]
    page = (await console.get(f"{team_path}/delete")).text
    assert "<h1>Delete the team Doomed?</h1>" in page
    form = re.search(r'<form method="post" action="([^"]+)">(.*?)</form>', page, re.S)
    assert form and form[1] == f"{team_path}/delete"
    assert f'name="csrf_token" value="{console.csrf_token}"' in form[2]
    assert '<button type="submit" class="danger">Delete Doomed</button>' in form[2]
    assert f'<a class="button" href="{team_path}">Cancel</a>' in form[2]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "console.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


def test_the_docs_example_calls_what_exists() -> None:
    """docs/console.md's page example: its imports import, and every `module.name` and
    `ctx.name` it uses exists."""
    import importlib

    from dutyline.web.context import ConsoleContext

    [example] = [b for b in _blocks("python") if "@pages.get(TEAMS)" in b]
    tree = ast.parse(example)
    names: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(str(node.module))
            for alias in node.names:
                names[alias.asname or alias.name] = getattr(module, alias.name)
    # What a context holds: its class's attributes and what its __init__ sets.
    init = ast.parse(textwrap.dedent(inspect.getsource(ConsoleContext.__init__)))
    held = set(dir(ConsoleContext)) | {
        n.attr for n in ast.walk(init) if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name) and n.value.id == "self"}
    used = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if node.value.id == "ctx":
            assert node.attr in held, f"ctx.{node.attr}"
        elif node.value.id in names:
            assert hasattr(names[node.value.id], node.attr), f"{node.value.id}.{node.attr}"
        else:
            continue
        used += 1
    assert used >= 10


def test_the_docs_templates_use_the_macros_that_exist() -> None:
    source = (TEMPLATES_DIR / "_macros" / "lists.html").read_text(encoding="utf-8")
    macros = set(re.findall(r"{% macro (\w+)\(", source))
    assert macros >= {"search", "list", "table", "empty_state", "pager", "numbered_pager",
                      "confirm_delete"}
    env = jinja2.Environment(autoescape=True)
    prose = DOCS.read_text(encoding="utf-8")
    for name in macros:
        assert f"lists.{name}(" in prose, name
    for block in _blocks("jinja"):
        env.parse(block)
        for name in re.findall(r"lists\.(\w+)\(", block):
            assert name in macros, name
