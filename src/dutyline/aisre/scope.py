"""The team-scope rule the AI-SRE records share (MCP servers, A2A agents, automation rules).

A record of team 0 belongs to the account (MCP, A2A) or to its creator (a personal automation
rule); a record of a team belongs to that team: owners and admins reach every team's records,
a member only the records of the teams they belong to.

Seeing is decided inside the query: a repository puts `visible(...)` in its WHERE clause, so
a record outside the actor's scope is not found, exactly as another account's. Managing is
`in_team_scope` (plus the domain's own permission). A record that runs on a BYOC worknode
(an MCP server, an automation rule) also needs `require_environment_use` to be bound, changed
or run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, true
from sqlalchemy.sql.elements import ColumnElement

from dutyline.api.access import require
from dutyline.api.actor import Actor
from dutyline.api.permissions import ENVIRONMENT_USE


@dataclass(frozen=True)
class TeamScope:
    """Which records of an account an actor sees."""

    account_id: int
    # None: every team's (owners and admins); else account-level records and these teams'.
    team_ids: frozenset[int] | None

    @classmethod
    async def of(cls, actor: Actor) -> TeamScope:
        return cls(actor.account_id, None if actor.is_admin else await actor.team_ids())

    @classmethod
    def run(cls, account_id: int, team_ids: frozenset[int]) -> TeamScope:
        """An automation run's scope: account-level records plus these teams'."""
        return cls(account_id, team_ids)


def visible(scope: TeamScope, account_column: Any, team_column: Any) -> ColumnElement[bool]:
    """The WHERE clause of the records `scope` sees."""
    teams: ColumnElement[bool] = true() if scope.team_ids is None else or_(
        team_column == 0, team_column.in_(sorted(scope.team_ids)))
    return and_(account_column == scope.account_id, teams)


async def in_team_scope(actor: Actor, team_id: int) -> bool:
    """Whether the actor may manage a record of team `team_id` (team 0: only owners/admins)."""
    if actor.is_admin:
        return True
    return team_id != 0 and team_id in await actor.team_ids()


def require_environment_use(actor: Actor) -> None:
    """Refuse an actor who may not use worknodes: what a BYOC record runs (an MCP server's
    command, an automation rule's prompt) executes inside the customer's network, so a
    read-only member may not bind, change or run one."""
    require(actor, ENVIRONMENT_USE)
