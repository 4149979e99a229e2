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
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, bindparam, or_, true
from sqlalchemy.sql.elements import ColumnElement

from dutyline.api.access import require
from dutyline.api.actor import Actor
from dutyline.api.permissions import ENVIRONMENT_USE

if TYPE_CHECKING:
    from sqlalchemy import Connection


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
    def of_sync(cls, conn: Connection, actor: Actor) -> TeamScope:
        """`of` inside a sync read service (the actor's teams read on its connection)."""
        return cls(actor.account_id, None if actor.is_admin else actor.team_ids_sync(conn))

    @classmethod
    def run(cls, account_id: int, team_ids: frozenset[int]) -> TeamScope:
        """An automation run's scope: account-level records plus these teams'."""
        return cls(account_id, team_ids)


def visible(scope: TeamScope, account_column: Any, team_column: Any) -> ColumnElement[bool]:
    """The WHERE clause of the records `scope` sees."""
    teams: ColumnElement[bool] = true() if scope.team_ids is None else or_(
        team_column == 0, team_column.in_(sorted(scope.team_ids)))
    return and_(account_column == scope.account_id, teams)


def visible_bound(all_teams: bool, account_column: Any,
                  team_column: Any) -> ColumnElement[bool]:
    """`visible` for a statement built once, the scope bound at execution (`bound_scope`):
    `all_teams` for a scope of every team (owners and admins)."""
    teams: ColumnElement[bool] = true() if all_teams else or_(
        team_column == 0, team_column.in_(bindparam("scope_team_ids", expanding=True)))
    return and_(account_column == bindparam("scope_account_id"), teams)


def bound_scope(scope: TeamScope) -> dict[str, Any]:
    """The parameters of `visible_bound` for this scope."""
    params: dict[str, Any] = {"scope_account_id": scope.account_id}
    if scope.team_ids is not None:
        params["scope_team_ids"] = sorted(scope.team_ids)
    return params


async def in_team_scope(actor: Actor, team_id: int) -> bool:
    """Whether the actor may manage a record of team `team_id` (team 0: only owners/admins)."""
    if actor.is_admin:
        return True
    return team_id != 0 and team_id in await actor.team_ids()


async def preload_teams(actor: Actor) -> None:
    """A member's teams, loaded on the async side before a sync form reads them (an actor
    built outside a request, by a job or the agent loop, may have no sync loader)."""
    if not actor.is_admin:
        await actor.team_ids()


def in_team_scope_sync(conn: Connection, actor: Actor, team_id: int) -> bool:
    """`in_team_scope` inside a sync read service."""
    if actor.is_admin:
        return True
    return team_id != 0 and team_id in actor.team_ids_sync(conn)


def require_environment_use(actor: Actor) -> None:
    """Refuse an actor who may not use worknodes: what a BYOC record runs (an MCP server's
    command, an automation rule's prompt) executes inside the customer's network, so a
    read-only member may not bind, change or run one."""
    require(actor, ENVIRONMENT_USE)
