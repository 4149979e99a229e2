"""The team-scope rule the AI-SRE records share (MCP servers, A2A agents, automation rules).

A record of team 0 belongs to the account (MCP, A2A) or to its creator (a personal automation
rule); a record of a team belongs to that team: owners and admins reach every team's records,
a member only the records of the teams they belong to."""

from __future__ import annotations

from dutyline.api.actor import Actor


async def in_team_scope(actor: Actor, team_id: int) -> bool:
    """Whether the actor may manage a record of team `team_id` (team 0: only owners/admins)."""
    if actor.is_admin:
        return True
    return team_id != 0 and team_id in await actor.team_ids()
