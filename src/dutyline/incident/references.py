"""Ids of other domains' records that incident requests carry, checked by the domain that owns
them. An assignment may name an escalation rule, which the paging domain (dispatch) owns and
which sits above incident: dispatch registers its check here when imported, so incident never
reads its tables. With no check registered, a named rule is refused: an id that cannot be
resolved within the caller's account is never stored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor

RuleExists = Callable[[AsyncConnection, Actor, str], Awaitable[bool]]
_escalate_rule_exists: list[RuleExists] = []


def register_escalate_rule_check(check: RuleExists) -> None:
    _escalate_rule_exists[:] = [check]


async def escalate_rule_exists(conn: AsyncConnection, actor: Actor, rule_id: str) -> bool:
    """Whether `rule_id` names an escalation rule of the actor's account."""
    return bool(_escalate_rule_exists) and await _escalate_rule_exists[0](conn, actor, rule_id)
