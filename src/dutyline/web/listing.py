"""What the console's list and record pages share: the page number, search text and record id
a request names, the pages of a numbered list (for the `pager` macro, templates/_macros/
lists.html), the manage-only guard of forms, and whole lists gathered for pickers.

    query, number = search_text(ctx, teams.TeamSearch), page_number(ctx)
    total, items = await ctx.runtime.db.run_sync(lambda conn: teams.list_teams_sync(
        conn, ctx.actor, query=query, offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE),
        write=False)
    return ctx.render("teams/list.html", teams=items, query=query,
                      paging=Paging(number, total, PAGE_SIZE))

A page's form is decoded into the service's record by web/forms.py, not here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.api.types import MAX_PAGE_WINDOW
from dutyline.platform.member import service as members
from dutyline.platform.team import service as teams
from dutyline.web import forms
from dutyline.web.context import ConsoleContext

PAGE_SIZE = 20
# The services' pages hold at most 100 rows; lists gathered whole (every team, every member
# for a team's checkboxes) stop after this many pages.
SERVICE_PAGE = 100
MAX_GATHERED_PAGES = 10


def page_number(ctx: ConsoleContext, size: int = PAGE_SIZE) -> int:
    """The `p` of the address, 1 when absent or unreadable, within the services' window."""
    raw = ctx.request.query_params.get("p", "1")
    number = int(raw) if raw.isdigit() else 1
    return min(max(number, 1), MAX_PAGE_WINDOW // size)


class _Search(Protocol):
    query: str


def search_text(ctx: ConsoleContext, record: type[_Search]) -> str:
    """The `q` of the address as the list's service reads it (`record`: its search record,
    such as `members.MemberSearch`): a text past the record's limit is no search at all, as
    the incident list treats one."""
    typed = ctx.request.query_params.get("q", "").strip()
    return forms.decode_known({"query": [typed]}, record).query  # type: ignore[type-var]


def path_id(ctx: ConsoleContext, name: str, kind: str) -> int:
    """A numeric id of the path; anything else is the `kind` not found (as the API says)."""
    raw = str(ctx.path_params[name])
    if not raw.isdigit() or len(raw) > 19:
        raise errors.not_found(kind, raw)
    return int(raw)


def require_manager(ctx: ConsoleContext) -> None:
    """The forms of changes only the account's managers may make: a page saying so for
    others (the services refuse the change itself whoever sends it)."""
    if not ctx.actor.has(ACCOUNT_MANAGE):
        raise errors.AccessDenied()


@dataclass(frozen=True)
class Paging:
    """Page `number` of a list of `total` rows, `size` to a page."""

    number: int
    total: int
    size: int = PAGE_SIZE

    @property
    def last(self) -> int:
        return max(1, -(-self.total // self.size))

    def url(self, path: str, number: int, **params: str) -> str:
        """`path` at page `number`, with the list's other parameters (empty ones left out)."""
        query = {k: v for k, v in params.items() if v}
        if number > 1:
            query["p"] = str(number)
        return f"{path}?{urlencode(query)}" if query else path

    def previous_url(self, path: str, **params: str) -> str | None:
        return self.url(path, self.number - 1, **params) if self.number > 1 else None

    def next_url(self, path: str, **params: str) -> str | None:
        return self.url(path, self.number + 1, **params) if self.number < self.last else None


async def all_members(conn: AsyncConnection, ctx: ConsoleContext) -> list[Any]:
    """The account's members by name, for pickers (bounded: see MAX_GATHERED_PAGES)."""
    found: list[Any] = []
    for page in range(MAX_GATHERED_PAGES):
        total, items = await members.list_members(
            conn, ctx.actor, orderby="created_at", asc=True, offset=page * SERVICE_PAGE,
            limit=SERVICE_PAGE)
        found += items
        if len(found) >= total or not items:
            break
    return sorted(found, key=lambda m: m.member_name.lower())


def team_names_by_person(conn: Connection, ctx: ConsoleContext,
                         person_id: int | None = None) -> dict[int, list[str]]:
    """{person_id: names of their teams}, for everyone or for one person."""
    out: dict[int, list[str]] = {}
    seen = 0
    for page in range(MAX_GATHERED_PAGES):
        total, items = teams.list_teams_sync(
            conn, ctx.actor, person_id=person_id, orderby="team_name", asc=True,
            offset=page * SERVICE_PAGE, limit=SERVICE_PAGE)
        for team in items:
            for person in team.person_ids:
                out.setdefault(person, []).append(team.team_name)
        seen += len(items)
        if seen >= total or not items:
            break
    return out
