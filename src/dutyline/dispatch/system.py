"""The actor a job or a signed link calls the incident services with: the system, or one
person the link was made for.

Why an admin-scoped actor for a person: the signed link itself is the authorization (it
names the person and the incident and was made because they were paged), so the person acts
on that one incident whatever channel visibility their roles would otherwise give."""

from __future__ import annotations

from dutyline.api.actor import Actor
from dutyline.api.runtime import Runtime


def actor(runtime: Runtime, account_id: int, *, person_id: int = 0,
          person_name: str = "") -> Actor:
    return Actor(account_id=account_id, person_id=person_id, clock=runtime.clock,
                 is_admin=True, person_name=person_name,
                 credential="signed_link" if person_id else "system")
