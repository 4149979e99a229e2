"""Ids of other domains' records that incident requests carry, checked by the domain that owns
them. An assignment may name an escalation rule, which the paging domain (dispatch) owns, and
/incident/responder/add may name a notification template, which notify owns; both domains sit
above incident: each answers through a check registered here (domains.py wires them when a
process starts), so incident never reads their tables. With no check registered, a named
record is refused: an id that cannot be resolved within the caller's account is never
stored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.actor import Actor

Exists = Callable[[AsyncConnection, Actor, str], Awaitable[bool]]
NameOf = Callable[[AsyncConnection, Actor, str], Awaitable[str | None]]
_escalate_rule_name: list[NameOf] = []
_template_exists: list[Exists] = []


def register_escalate_rule_lookup(lookup: NameOf) -> None:
    _escalate_rule_name[:] = [lookup]


def register_template_check(check: Exists) -> None:
    _template_exists[:] = [check]


async def escalate_rule_name(conn: AsyncConnection, actor: Actor, rule_id: str) -> str | None:
    """The name of the actor's account's escalation rule `rule_id`; None if it has none."""
    if not _escalate_rule_name:
        return None
    return await _escalate_rule_name[0](conn, actor, rule_id)


async def template_exists(conn: AsyncConnection, actor: Actor, template_id: str) -> bool:
    """Whether `template_id` names a notification template the actor's account may use (its
    own, or a built-in preset)."""
    return bool(_template_exists) and await _template_exists[0](conn, actor, template_id)
