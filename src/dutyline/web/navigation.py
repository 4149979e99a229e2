"""The console's navigation: groups of links, each link shown only to those whose roles let
them use its page, so nobody is offered a page that would answer "Not allowed".

    Group("Configuration", (
        Link("Members", "/console/members", needs=(ACCOUNT_MANAGE,)),
        Link("Channels", "/console/channels", needs=(CHANNEL_VIEW,)),
    ))

A link's `needs` are permissions of api/permissions.py, any one of which shows it (the
actor's `has`: owners and admins hold them all); none means every signed-in member. A group
left with no link is not shown. Labels are catalog messages: each has its zh-CN translation
in a .po of locales/zh_CN/LC_MESSAGES/ (tests/web/test_layout.py checks)."""

from __future__ import annotations

from dataclasses import dataclass

from dutyline.api.actor import Actor
from dutyline.api.permissions import (
    ACCOUNT_MANAGE,
    CHANNEL_VIEW,
    SCHEDULE_MANAGE,
    SCHEDULE_VIEW,
    TEMPLATE_VIEW,
)


@dataclass(frozen=True)
class Link:
    label: str
    path: str
    needs: tuple[str, ...] = ()

    def shown_to(self, actor: Actor) -> bool:
        return not self.needs or any(actor.has(p) for p in self.needs)


@dataclass(frozen=True)
class Group:
    label: str
    links: tuple[Link, ...]
    # The person's own menu (their pages and signing out), kept apart from the main
    # navigation at the end of the bar.
    personal: bool = False


# The setup pages to come join these groups (Configuration, mostly), each with the
# permission its page needs.
NAVIGATION: tuple[Group, ...] = (
    Group("Incidents", (Link("Incidents", "/console/incidents"),)),
    Group("On call", (Link("Who is on call", "/console/on-call"),)),
    # Every member may read the lists of members and teams (as /member/list): the links
    # are offered to those who set them up; the pages stay open to everyone by address.
    # Channels are offered to whoever may read them (the built-in Member may).
    Group("Configuration", (
        Link("Channels", "/console/channels", needs=(CHANNEL_VIEW,)),
        Link("Schedules", "/console/schedules", needs=(SCHEDULE_VIEW, SCHEDULE_MANAGE)),
        Link("Templates", "/console/templates", needs=(TEMPLATE_VIEW,)),
        Link("Members", "/console/members", needs=(ACCOUNT_MANAGE,)),
        Link("Teams", "/console/teams", needs=(ACCOUNT_MANAGE,)),
        Link("Roles", "/console/roles", needs=(ACCOUNT_MANAGE,)),
        Link("Settings", "/console/settings", needs=(ACCOUNT_MANAGE,)),
    )),
    # Every member manages their own app keys.
    Group("Account", (Link("Your profile", "/console/me"),
                      Link("App keys", "/console/app-keys")), personal=True),
)


@dataclass(frozen=True)
class ShownLink:
    label: str
    path: str
    current: bool


@dataclass(frozen=True)
class ShownGroup:
    label: str
    links: tuple[ShownLink, ...]
    personal: bool

    @property
    def current(self) -> bool:
        return any(link.current for link in self.links)

    @property
    def single(self) -> bool:
        """Shown as one link under the group's name, not as a menu."""
        return len(self.links) == 1 and not self.personal


def _under(path: str, page: str) -> bool:
    return path == page or path.startswith(page.rstrip("/") + "/")


def menu(actor: Actor, path: str, groups: tuple[Group, ...] = NAVIGATION) -> list[ShownGroup]:
    """The groups `actor` is shown, with the link of the page at `path` marked current (the
    longest link `path` is under: /console/members/12 is Members')."""
    shown = [(g, [link for link in g.links if link.shown_to(actor)]) for g in groups]
    pages = [link.path for _, links in shown for link in links if _under(path, link.path)]
    current = max(pages, key=len, default=None)
    return [ShownGroup(g.label, tuple(ShownLink(link.label, link.path, link.path == current)
                                      for link in links), g.personal)
            for g, links in shown if links]


def labels(groups: tuple[Group, ...] = NAVIGATION) -> set[str]:
    """Every label the navigation may show (for the catalog's completeness test)."""
    return {g.label for g in groups} | {link.label for g in groups for link in g.links}
