"""A schedule's record (ScheduleSpec, its layers and notifications) is checked when the
schedule service is entered: a direct call past a limit is refused as the API refuses it."""

from __future__ import annotations

import pytest

from dutyline.schedule import service as schedules
from dutyline.schedule.schemas import LayerIn, NotifyIn, ScheduleGroup, ScheduleMember
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.limits import refused_alike

pytestmark = pytest.mark.anyio

TOO_BIG = 2**63


async def test_a_schedule_past_its_limits(api: Api, owner: Person) -> None:
    said = await refused_alike(
        api, owner, "/schedule/create",
        {"schedule_name": "Primary", "layers": [{"layer_name": "Day"},
                                                {"layer_name": "Night", "mode": TOO_BIG}]},
        lambda conn, actor: schedules.create_schedule(
            conn, actor, schedule_name="Primary", description=None, team_id=None,
            time_zone=None, notify=None, deps=api.runtime.deps,
            layers=[LayerIn(layer_name="Day"), LayerIn(layer_name="Night", mode=TOO_BIG)]))
    assert said.startswith("Invalid parameter layers[1].mode: ")
    await refused_alike(
        api, owner, "/schedule/create",
        {"schedule_name": "Primary",
         "layers": [{"groups": [{"members": [{"person_ids": [-TOO_BIG - 1]}]}]}]},
        lambda conn, actor: schedules.create_schedule(
            conn, actor, schedule_name="Primary", description=None, team_id=None,
            time_zone=None, notify=None, deps=api.runtime.deps, layers=[LayerIn(groups=[
                ScheduleGroup(members=[ScheduleMember(person_ids=[-TOO_BIG - 1])])])]))
    await refused_alike(
        api, owner, "/schedule/create",
        {"schedule_name": "Primary", "notify": {"advance_in_time": TOO_BIG}},
        lambda conn, actor: schedules.create_schedule(
            conn, actor, schedule_name="Primary", description=None, team_id=None,
            time_zone=None, layers=None, deps=api.runtime.deps,
            notify=NotifyIn(advance_in_time=TOO_BIG)))
    listed = await api.call("/schedule/list", {}, key=owner.key)
    assert listed.data["total"] == 0
