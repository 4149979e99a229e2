"""The incident lifecycle's writes take their arguments with the limits of their records
(CommentInput, SnoozeInput, ResetInput...), checked when the service is entered: a direct
call past a limit is refused as the API refuses it, before any incident is looked up."""

from __future__ import annotations

import pytest

from dutyline.incident.service import AssignedTo, editing, lifecycle, responders
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.limits import refused_alike

pytestmark = pytest.mark.anyio

SOME_ID = "0123456789abcdef01234567"


async def test_lifecycle_writes_past_their_limits(api: Api, owner: Person) -> None:
    ids = [SOME_ID]
    said = await refused_alike(
        api, owner, "/incident/comment", {"incident_ids": ids, "comment": "c" * 1025},
        lambda conn, actor: lifecycle.comment(conn, actor, incident_ids=ids,
                                              comment="c" * 1025))
    assert said == "Invalid parameter comment: Expected `str` of length <= 1024"
    for minutes in (0, 1441):
        await refused_alike(
            api, owner, "/incident/snooze", {"incident_ids": ids, "minutes": minutes},
            lambda conn, actor, m=minutes: lifecycle.snooze(conn, actor, incident_ids=ids,
                                                            minutes=m))
    await refused_alike(
        api, owner, "/incident/reopen", {"incident_ids": ids, "reason": "r" * 1025},
        lambda conn, actor: lifecycle.reopen(conn, actor, incident_ids=ids,
                                             reason="r" * 1025))
    await refused_alike(
        api, owner, "/incident/resolve", {"incident_ids": ["not-an-id"]},
        lambda conn, actor: lifecycle.resolve(conn, actor, incident_ids=["not-an-id"]))
    await refused_alike(
        api, owner, "/incident/comment", {"incident_ids": [SOME_ID] * 101, "comment": "c"},
        lambda conn, actor: lifecycle.comment(conn, actor, incident_ids=[SOME_ID] * 101,
                                              comment="c"))


async def test_edits_past_their_limits(api: Api, owner: Person) -> None:
    await refused_alike(
        api, owner, "/incident/reset", {"incident_id": SOME_ID, "title": "ab"},
        lambda conn, actor: editing.reset(conn, actor, incident_id=SOME_ID, title="ab"))
    await refused_alike(
        api, owner, "/incident/reset", {"incident_id": SOME_ID, "description": "d" * 6145},
        lambda conn, actor: editing.reset(conn, actor, incident_id=SOME_ID,
                                          description="d" * 6145))
    await refused_alike(
        api, owner, "/incident/reset", {"incident_id": SOME_ID, "incident_severity": "Bad"},
        lambda conn, actor: editing.reset(conn, actor, incident_id=SOME_ID,
                                          incident_severity="Bad"))
    await refused_alike(
        api, owner, "/incident/merge",
        {"source_incident_ids": [SOME_ID], "target_incident_id": SOME_ID, "title": "t" * 513},
        lambda conn, actor: editing.merge(conn, actor, source_incident_ids=[SOME_ID],
                                          target_incident_id=SOME_ID, title="t" * 513))
    await refused_alike(
        api, owner, "/incident/field/reset",
        {"incident_id": SOME_ID, "field_name": "f" * 41, "field_value": "x"},
        lambda conn, actor: editing.reset_field(conn, actor, incident_id=SOME_ID,
                                                field_name="f" * 41, field_value="x"))
    said = await refused_alike(
        api, owner, "/incident/assign",
        {"incident_ids": [SOME_ID], "assigned_to": {"person_ids": []}},
        lambda conn, actor: editing.assign(conn, actor, incident_ids=[SOME_ID],
                                           assigned_to=AssignedTo(person_ids=[])))
    assert said.startswith("Invalid parameter assigned_to.person_ids: ")
    await refused_alike(
        api, owner, "/incident/create", {"incident_severity": "Critical", "title": "t" * 513},
        lambda conn, actor: editing.create(conn, actor, incident_severity="Critical",
                                           title="t" * 513))
    await refused_alike(
        api, owner, "/incident/responder/add", {"incident_id": SOME_ID, "person_ids": []},
        lambda conn, actor: responders.add_responders(conn, actor, incident_id=SOME_ID,
                                                      person_ids=[]))
