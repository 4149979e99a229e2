"""An integration's per-integration config row (enrichment settings, pipeline, route; the
channel and enrichment domains share the shape) as it is saved: enabled, stamped with who
changed it and when, and, the first time, who created it and when."""

from __future__ import annotations

from typing import Any

from dutyline.api.actor import Actor


def saved_values(actor: Actor, values: dict[str, Any], *, new: bool) -> dict[str, Any]:
    now = actor.now_s
    stamped = {**values, "status": "enabled", "updated_by": actor.person_id, "updated_at": now}
    if new:
        stamped.update(account_id=actor.account_id, creator_id=actor.person_id, created_at=now)
    return stamped
