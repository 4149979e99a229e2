"""Steps of the reference walk (test_reference_coverage.py) for role grants, permission
factors and custom actions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.api.test_reference_coverage import World


async def roles_and_custom_actions(w: World) -> None:
    factors = await w.call("/role/permission/factor/list", {"factor_types": ["api"]})
    assert factors and all(f["factor_type"] == "api" for f in factors)
    role = await w.call("/role/upsert", {"role_name": "Responders", "permission_ids": [203]})
    body = {"member_ids": [w.mate.person_id], "role_id": role["role_id"]}
    await w.call("/role/member/grant", body)
    await w.call("/role/member/revoke", body)

    made = await w.api.call("/integration/create", {
        "channel_id": w.ids["channel_id"], "integration_name": "Restart service",
        "integration_type": "custom_action", "url": w.receiver.url("/action")},
        key=w.owner.key)
    assert made.status == 200, made.body
    answer = await w.call("/incident/custom-action/do", {
        "incident_id": w.ids["incident_id"], "integration_id": made.data["integration_id"]})
    assert answer == {"message": ""}
    # The feed item it wrote (i_custom) is in the reference's schema too.
    feed = await w.call("/incident/feed", {"incident_id": w.ids["incident_id"],
                                           "types": ["i_custom"]})
    assert [item["type"] for item in feed["items"]] == ["i_custom"]
