"""The actor a job or a signed link calls the incident services with: the system, or one
person the link was made for.

Why an admin-scoped actor for a person: the signed link itself is the authorization (it
names the person and the incident and was made because they were paged), so the person acts
on that one incident whatever channel visibility their roles would otherwise give."""

from __future__ import annotations

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime
from dutyline.api.unit import person_actor, system_actor


def actor(runtime: Runtime, account_id: int, *, person_id: int = 0,
          person_name: str = "") -> Actor:
    """Made by the door (api/unit.py), held by the unit of work open where it is made."""
    if not person_id:
        return system_actor(account_id, runtime.clock)
    return person_actor(account_id, person_id, runtime.clock, person_name=person_name,
                        credential="signed_link", is_admin=True)
