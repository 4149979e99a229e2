"""The Schedules pages: rotations in words turned into the schedule service's record (unit
tests, DST and week boundaries included), the list, creating and editing by form, the
schedule's page with its timeline, overrides by form, taking a shift, field errors, permissions,
other accounts' schedules, and the on-call page's "no end" for a turn that does not end."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from dutyline.api import errors
from dutyline.schedule.service import ScheduleLayer
from dutyline.web.pages.schedule_words import (
    LayerWords,
    form_field,
    layer_in,
    local_instant,
    words_of,
)
from dutyline.web.pages.schedules_form import ScheduleWords, apply_action
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import Browser, signed_in
from tests.schedule.helpers import MONDAY_SHANGHAI, ok, rotation

anyio = pytest.mark.anyio
LIST = "/console/schedules"
BERLIN = ZoneInfo("Europe/Berlin")
# Monday 2026-04-13 10:00 in Asia/Shanghai (02:00 UTC).
NOW = MONDAY_SHANGHAI + 10 * 3600


def utc(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def words(**fields: Any) -> LayerWords:
    base: dict[str, Any] = {"layer_name": "Primary", "every": "1", "unit": "week",
                            "weekday": "monday", "at": "09:00", "people": [1, 2],
                            "start": "2026-03-23"}
    return LayerWords(**{**base, **fields})


def text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


# --- words -> the service's record ------------------------------------------------------


def test_a_weekly_rotation_in_words() -> None:
    layer = layer_in(words(), BERLIN, "layers[0].")
    assert (layer.rotation_unit, layer.rotation_value, layer.handoff_time) == ("week", 1, 32400)
    # Monday 23 March 2026, 09:00 in Berlin (still winter time, UTC+1).
    assert layer.enable_time == utc("2026-03-23T08:00:00")
    assert layer.expire_time == 0 and layer.mode == 0
    assert [g.members[0].person_ids for g in layer.groups or []] == [[1], [2]]


def test_the_first_hand_off_is_the_first_chosen_weekday_on_or_after_the_start() -> None:
    # A Wednesday start waits for Monday; a Monday start is that Monday; a Sunday hand-off
    # from a Monday start is six days on, across the year's end.
    assert layer_in(words(start="2026-03-25"), BERLIN, "").enable_time == utc(
        "2026-03-30T07:00:00")  # summer time from 29 March: UTC+2
    assert layer_in(words(start="2026-03-30"), BERLIN, "").enable_time == utc(
        "2026-03-30T07:00:00")
    assert layer_in(words(start="2026-12-28", weekday="sunday"), BERLIN, "").enable_time \
        == utc("2027-01-03T08:00:00")


def test_a_hand_off_the_clocks_skip_happens_when_they_jump() -> None:
    # 02:30 does not exist in Berlin on 29 March 2026: the shift starts at the jump (03:00).
    layer = layer_in(words(unit="day", at="02:30", start="2026-03-29"), BERLIN, "")
    assert layer.enable_time == utc("2026-03-29T01:00:00")
    assert layer.handoff_time == 2 * 3600 + 30 * 60


def test_an_end_date_stops_at_its_midnight() -> None:
    layer = layer_in(words(end="2026-04-20"), BERLIN, "")
    assert layer.expire_time == utc("2026-04-19T22:00:00")


@pytest.mark.parametrize(("change", "field", "reason"), [
    ({"at": "25:00"}, "layers[0].at", "must be a time of day such as 09:00"),
    ({"every": "x"}, "layers[0].every", "must be a whole number, 1 or more"),
    ({"every": "0"}, "layers[0].every", "must be a whole number, 1 or more"),
    ({"start": ""}, "layers[0].start", "is required"),
    ({"start": "13/04/2026"}, "layers[0].start", "must be a date such as 2026-04-13"),
    ({"people": []}, "layers[0].people", "choose at least one person"),
    ({"unit": "fortnight"}, "layers[0].unit", "choose hours, days, weeks or months"),
    ({"end": "2026-03-23"}, "layers[0].end",
     "must be after the first hand-off, 2026-03-23 at 09:00"),
])
def test_words_refused_at_their_field(change: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(errors.InvalidParameter) as refused:
        layer_in(words(**change), BERLIN, "layers[0].")
    assert (refused.value.fields["field"], refused.value.fields["reason"]) == (field, reason)


def _stored(layer: Any) -> ScheduleLayer:
    from dutyline.schedule.definition import normalize_layers
    return normalize_layers([layer], account_id=1, schedule_id=1, person_id=1,
                            now_s=NOW)[0]


@pytest.mark.parametrize("change", [
    {}, {"unit": "day", "every": "2", "at": "00:00"}, {"unit": "hour", "every": "12"},
    {"unit": "month", "start": "2026-01-31"}, {"end": "2026-05-04"},
    {"start": "2026-03-25", "weekday": "sunday"},
])
def test_stored_words_read_back_the_same(change: dict[str, Any]) -> None:
    given = words(**change)
    back = words_of(_stored(layer_in(given, BERLIN, "")), BERLIN)
    assert back is not None
    again = layer_in(back, BERLIN, "")
    assert again == layer_in(given, BERLIN, "")


def test_a_layer_words_cannot_say_is_kept() -> None:
    restricted = layer_in(words(), BERLIN, "")
    restricted.restrict_mode = 1
    restricted.restrict_start, restricted.restrict_end = 9 * 3600, 17 * 3600
    assert words_of(_stored(restricted), BERLIN) is None
    # Enabled between two hand-offs (as the API allows): not the words' first turn.
    odd = layer_in(words(), BERLIN, "")
    odd.enable_time += 3600
    assert words_of(_stored(odd), BERLIN) is None


def test_a_layer_started_between_hand_offs_reads_from_its_first_hand_off() -> None:
    # Made through the API: enabled Wednesday 25 March 10:00 in Berlin, handing off five days
    # and nine hours after that Wednesday's midnight: Mondays at 09:00.
    made = layer_in(words(), BERLIN, "")
    made.enable_time = utc("2026-03-25T09:00:00")
    made.handoff_time = 5 * 86_400 + 9 * 3600
    stored = _stored(made)
    assert words_of(stored, BERLIN) is None  # its first hand-off is still to come
    read = words_of(stored, BERLIN, now_s=utc("2026-04-01T00:00:00"))
    assert read is not None
    assert (read.weekday, read.at, read.start) == ("monday", "09:00", "2026-03-30")


def test_service_fields_are_named_as_the_form_names_them() -> None:
    assert form_field("layers[1].groups[0].members[0].person_ids") == "layers[1].people"
    assert form_field("layers[0].rotation_value") == "layers[0].every"
    assert form_field("layers[0].enable_time") == "layers[0].start"
    assert form_field("layers[2].handoff_time") == "layers[2].at"
    assert form_field("schedule_name") == "schedule_name"


def test_local_instants_of_the_override_form() -> None:
    assert local_instant("2026-03-29T02:30", BERLIN, "start") == utc("2026-03-29T01:00:00")
    with pytest.raises(errors.InvalidParameter):
        local_instant("tomorrow", BERLIN, "start")


def test_buttons_change_the_form() -> None:
    form = ScheduleWords(layers=[words()])
    assert apply_action(form, "add_person:0", "2026-04-13")
    assert form.layers[0].people == [1, 2, 0]
    assert apply_action(form, "remove_person:0:0", "2026-04-13")
    assert form.layers[0].people == [2, 0]
    assert apply_action(form, "add_layer", "2026-04-13")
    assert form.layers[1].start == "2026-04-13" and len(form.layers) == 2
    assert apply_action(form, "remove_layer:0", "")
    assert [layer.layer_name for layer in form.layers] == ["Layer 2"]
    assert apply_action(form, "remove_layer:9", "")  # gone already: the form as it is
    assert not apply_action(form, "save", "")


# --- the pages ------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def people(api: Api, owner: Person) -> dict[str, Person]:
    return {"alice": await new_member(api, owner, name="Alice"),
            "bob": await new_member(api, owner, name="Bob")}


def _form(people: dict[str, Person], **more: Any) -> dict[str, Any]:
    return {"schedule_name": "Primary", "description": "", "team_id": "0",
            "time_zone": "Asia/Shanghai", "layers[0].layer_name": "Weekly",
            "layers[0].every": "1", "layers[0].unit": "week", "layers[0].weekday": "monday",
            "layers[0].at": "09:00",
            "layers[0].people": [str(people["alice"].person_id), str(people["bob"].person_id)],
            "layers[0].start": "2026-04-13", "layers[0].end": "", "action": "save", **more}


async def _create(console: Browser, people: dict[str, Person], **more: Any) -> str:
    done = await console.post(LIST + "/new", _form(people, **more))
    assert done.status_code == 303, done.text
    return str(done.headers["location"])


async def _info(api: Api, owner: Person, path: str, **window: int) -> Any:
    sid = int(path.rsplit("/", 1)[1])
    return await ok(api, "/schedule/info", {"schedule_id": sid, **window}, owner.key)


@anyio
async def test_creating_a_weekly_two_person_schedule(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    form = await console.get(LIST + "/new")
    assert form.status_code == 200
    assert 'name="layers[0].at" type="time" value="09:00"' in form.text
    path = await _create(console, people)
    assert re.fullmatch(r"/console/schedules/\d+", path)
    info = await _info(api, owner, path)
    layer = info["layers"][0]
    alice, bob = people["alice"].person_id, people["bob"].person_id
    monday_9 = MONDAY_SHANGHAI + 9 * 3600
    assert info["time_zone"] == "Asia/Shanghai" and info["schedule_name"] == "Primary"
    assert (layer["rotation_unit"], layer["rotation_value"], layer["handoff_time"],
            layer["enable_time"], layer["layer_name"]) == ("week", 1, 9 * 3600, monday_9,
                                                           "Weekly")
    assert [g["members"][0]["person_ids"] for g in layer["groups"]] == [[alice], [bob]]
    # What /schedule/preview says of the same layers: Alice, then Bob, Mondays at 09:00.
    preview = await ok(api, "/schedule/preview", {
        "time_zone": "Asia/Shanghai", "layers": info["layers"],
        "start": monday_9, "end": monday_9 + 21 * 86_400}, owner.key)
    turns = [(s["start"], s["group"]["members"][0]["person_ids"])
             for s in preview["final_schedule"]["schedules"]]
    week = 7 * 86_400
    assert turns == [(monday_9, [alice]), (monday_9 + week, [bob]),
                     (monday_9 + 2 * week, [alice])]
    page = await console.get(path)
    assert page.status_code == 200
    assert "<h1>Primary</h1>" in page.text
    words_shown = text(page.text)
    assert "Every 1 week on Monday at 09:00, from 2026-04-13: Alice, then Bob" in words_shown
    assert "On call now Now Alice until" in words_shown
    listed = await console.get(LIST)
    assert f'href="{path}">Primary</a>' in listed.text and "1 schedules" in text(listed.text)
    assert [op for op, _ in await _audit(api, owner)] == ["schedule.create"]


async def _audit(api: Api, owner: Person) -> list[tuple[str, str]]:
    from sqlalchemy import select

    from dutyline.db.tables.platform import audit_log
    async with api.runtime.db.transaction(write=False) as conn:
        rows = await conn.execute(select(audit_log.c.operation, audit_log.c.credential)
                                  .where(audit_log.c.account_id == owner.account_id,
                                         audit_log.c.is_write).order_by(audit_log.c.id))
        return [(r.operation, r.credential) for r in rows]


@anyio
async def test_buttons_add_and_remove_layers_and_people_without_saving(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    await console.get(LIST + "/new")
    more = await console.post(LIST + "/new", _form(people, action="add_person:0"))
    assert more.status_code == 200
    assert more.text.count('name="layers[0].people"') == 3
    layered = await console.post(LIST + "/new", _form(people, action="add_layer"))
    assert 'name="layers[1].at"' in layered.text
    fewer = await console.post(LIST + "/new", _form(people, action="remove_person:0:0"))
    assert fewer.text.count('name="layers[0].people"') == 1
    preview = await console.post(LIST + "/new", _form(people, action="preview"))
    assert preview.status_code == 200 and "Preview: who would be on call" in preview.text
    assert "Alice" in text(preview.text.split('id="h-preview"')[1])
    listed = await ok(api, "/schedule/list", {}, owner.key)
    assert listed["total"] == 0  # nothing saved


@anyio
async def test_field_errors_in_words(console: Browser, people: dict[str, Person]) -> None:
    await console.get(LIST + "/new")
    nameless = await console.post(LIST + "/new", _form(people, schedule_name=""))
    assert nameless.status_code == 400
    assert re.search(r'id="e-schedule_name">is required<', nameless.text)
    bad_time = await console.post(LIST + "/new", _form(people, **{"layers[0].at": "9h"}))
    assert re.search(r'id="e-layers-0-at">must be a time of day such as 09:00<', bad_time.text)
    assert 'aria-invalid="true" aria-describedby="e-layers-0-at"' in bad_time.text
    too_many = await console.post(LIST + "/new", _form(people, **{"layers[0].every": "60"}))
    assert re.search(r'id="e-layers-0-every">must be 1 to 52 for week<', too_many.text)
    nobody = await console.post(LIST + "/new", _form(people, **{"layers[0].people": ""}))
    assert re.search(r'id="e-layers-0-people">choose at least one person<', nobody.text)
    # What was typed stays.
    assert 'value="Primary"' in nobody.text


@anyio
async def test_editing_a_schedule(api: Api, owner: Person, console: Browser,
                                  people: dict[str, Person]) -> None:
    path = await _create(console, people)
    form = await console.get(path + "/edit")
    assert form.status_code == 200 and 'value="Primary"' in form.text
    alice, bob = people["alice"].person_id, people["bob"].person_id
    assert f'<option value="{alice}" selected>Alice' in form.text
    done = await console.post(path + "/edit", _form(people, schedule_name="Platform", **{
        "layers[0].people": [str(bob), str(alice)], "layers[0].weekday": "friday",
        "layers[0].at": "18:30"}))
    assert done.status_code == 303 and done.headers["location"] == path
    info = await _info(api, owner, path)
    layer = info["layers"][0]
    assert info["schedule_name"] == "Platform"
    assert [g["members"][0]["person_ids"] for g in layer["groups"]] == [[bob], [alice]]
    # Friday 17 April 2026, 18:30 in Shanghai.
    assert layer["enable_time"] == MONDAY_SHANGHAI + 4 * 86_400 + 18 * 3600 + 1800


@anyio
async def test_a_layer_words_cannot_say_is_kept_on_edit(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    alice = people["alice"].person_id
    restricted = rotation([alice], enable=MONDAY_SHANGHAI, layer_name="Office hours",
                          restrict_mode=1, restrict_periods=[
                              {"restrict_start": 9 * 3600, "restrict_end": 17 * 3600}])
    sid = (await ok(api, "/schedule/create", {"schedule_name": "Mixed",
                                              "time_zone": "Asia/Shanghai",
                                              "layers": [restricted]}, owner.key))["schedule_id"]
    path = f"{LIST}/{sid}"
    form = await console.get(path + "/edit")
    assert "it is kept as it is" in form.text
    assert 'name="layers[0].kept" value="0"' in form.text
    done = await console.post(path + "/edit", {
        "schedule_name": "Mixed 2", "time_zone": "Asia/Shanghai", "team_id": "0",
        "layers[0].kept": "0", "layers[0].layer_name": "Office hours", "action": "save"})
    assert done.status_code == 303, done.text
    info = await _info(api, owner, path)
    assert info["schedule_name"] == "Mixed 2"
    assert info["layers"][0]["restrict_periods"] == [
        {"restrict_start": 9 * 3600, "restrict_end": 17 * 3600}]


@anyio
async def test_an_api_made_rotation_is_edited_in_words_with_the_same_turns_ahead(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    alice, bob = people["alice"].person_id, people["bob"].person_id
    # Enabled on Saturday 11 April 15:00 in Shanghai, handing off daily at 09:00.
    made = rotation([alice], [bob], enable=MONDAY_SHANGHAI - 2 * 86_400 + 15 * 3600,
                    handoff=9 * 3600)
    sid = (await ok(api, "/schedule/create", {"schedule_name": "Daily", "time_zone":
                                              "Asia/Shanghai", "layers": [made]},
                    owner.key))["schedule_id"]
    path = f"{LIST}/{sid}"
    window = {"start": NOW, "end": NOW + 10 * 86_400}
    before = (await _info(api, owner, path, **window))["final_schedule"]["schedules"]
    form = await console.get(path + "/edit")
    assert "kept as it is" not in form.text
    assert 'name="layers[0].start" type="date" value="2026-04-12"' in form.text
    done = await console.post(path + "/edit", {
        "schedule_name": "Daily", "time_zone": "Asia/Shanghai", "team_id": "0",
        "layers[0].layer_name": "Primary", "layers[0].every": "1", "layers[0].unit": "day",
        "layers[0].weekday": "sunday", "layers[0].at": "09:00",
        "layers[0].people": [str(alice), str(bob)], "layers[0].start": "2026-04-12",
        "action": "save"})
    assert done.status_code == 303, done.text
    after = (await _info(api, owner, path, **window))["final_schedule"]["schedules"]
    assert [(s["start"], s["end"], s["group"]["members"]) for s in after] == [
        (s["start"], s["end"], s["group"]["members"]) for s in before]


@anyio
async def test_an_override_by_form(api: Api, owner: Person, console: Browser,
                                   people: dict[str, Person]) -> None:
    path = await _create(console, people)
    page = await console.get(path)
    assert 'action="' + path + '/override"' in page.text
    bob, alice = people["bob"].person_id, people["alice"].person_id
    wrong = await console.post(path + "/override", {
        "person_id": str(bob), "covered_id": str(alice), "start": "2026-04-14T09:00",
        "end": "2026-04-14T08:00"})
    assert wrong.status_code == 400
    assert re.search(r'id="e-end">must be after the start<', wrong.text)
    nobody = await console.post(path + "/override", {"person_id": "", "start": "x", "end": ""})
    assert re.search(r'id="e-person_id">choose who covers<', nobody.text)
    done = await console.post(path + "/override", {
        "person_id": str(bob), "covered_id": str(alice), "start": "2026-04-14T09:00",
        "end": "2026-04-15T09:00"})
    assert done.status_code == 303, done.text
    info = await _info(api, owner, path)
    cover = info["layers"][1]
    start = MONDAY_SHANGHAI + 86_400 + 9 * 3600
    assert cover["mode"] == 1
    assert [(g["group_name"], g["members"][0]["person_ids"], g["start"], g["end"])
            for g in cover["groups"]] == [("Bob covers Alice", [bob], start, start + 86_400)]
    after = await console.get(path)
    assert "Bob covers Alice" in after.text
    # Editing the rotation keeps the override layer.
    edit = await console.get(path + "/edit")
    assert 'name="layers[1].kept" value="1"' in edit.text
    # Removing it.
    gone = await console.post(path + "/override/remove", {"layer": "1", "group": "0"})
    assert gone.status_code == 303
    assert len((await _info(api, owner, path))["layers"]) == 1


@anyio
async def test_taking_a_shift(api: Api, owner: Person, console: Browser,
                              people: dict[str, Person]) -> None:
    path = await _create(console, people)
    page = await console.get(path)
    # Alice holds the first week: the owner may take it, from now to its end.
    turn = re.search(r'action="' + path + r'/take">.*?name="start" value="(\d+)".*?'
                     r'name="end" value="(\d+)"', page.text, re.S)
    assert turn, page.text
    done = await console.post(path + "/take", {"start": turn[1], "end": turn[2]})
    assert done.status_code == 303
    info = await _info(api, owner, path)
    group = info["layers"][1]["groups"][0]
    assert group["members"][0]["person_ids"] == [owner.person_id]
    assert (group["start"], group["end"]) == (NOW, int(turn[2]))
    assert info["cur_oncall"]["group"]["members"][0]["person_ids"] == [owner.person_id]
    # A shift that is no longer there is refused with a word, not taken.
    stale = await console.post(path + "/take", {"start": "1", "end": "2"},
                               follow_redirects=True)
    assert "That shift has changed" in stale.text


@anyio
async def test_permissions(api: Api, owner: Person, console: Browser,
                           people: dict[str, Person]) -> None:
    path = await _create(console, people)
    member = await new_member(api, owner, name="Mo", builtin="member")
    b = await signed_in(api, member)
    listed = await b.get(LIST)
    assert listed.status_code == 200 and "Primary" in listed.text
    assert 'href="/console/schedules/new"' not in listed.text
    assert 'href="/console/schedules"' not in listed.text  # no navigation link
    for refused in (await b.get(path), await b.get(LIST + "/new"),
                    await b.get(path + "/edit"), await b.post(LIST + "/new", _form(people)),
                    await b.post(path + "/delete")):
        assert refused.status_code == 403
        assert "Not allowed" in refused.text
    await b.aclose()
    perms = (await api.call("/role/permission/list", {}, key=owner.key)).data["items"]
    role = await ok(api, "/role/upsert", {"role_name": "Readers", "permission_ids": [
        p["id"] for p in perms if p["permission_name"] == "schedule_view"]}, owner.key)
    reader = await new_member(api, owner, name="Rita", builtin=None,
                              role_ids=[int(role["role_id"])])
    r = await signed_in(api, reader)
    page = await r.get(path)
    assert page.status_code == 200 and "Take this shift" not in page.text
    assert 'href="/console/schedules"' in page.text
    taken = await r.post(path + "/take", {"start": "1", "end": "2"})
    assert taken.status_code in (303, 403)
    override = await r.post(path + "/override", {
        "person_id": str(reader.person_id), "start": "2026-04-14T09:00",
        "end": "2026-04-15T09:00"})
    assert override.status_code == 403
    await r.aclose()


@anyio
async def test_another_account_s_schedule_is_not_found(
        api: Api, owner: Person, other_owner: Person, console: Browser,
        people: dict[str, Person]) -> None:
    theirs = await signed_in(api, other_owner)
    await theirs.get(LIST + "/new")
    foreign = await theirs.post(LIST + "/new", {
        "schedule_name": "Globex", "time_zone": "UTC", "team_id": "0",
        "layers[0].people": str(other_owner.person_id), "layers[0].start": "2026-04-13",
        "layers[0].every": "1", "layers[0].unit": "day", "layers[0].at": "00:00",
        "action": "save"})
    assert foreign.status_code == 303, foreign.text
    there = str(foreign.headers["location"])
    listed = await console.get(LIST)
    assert "Globex" not in listed.text
    for answer in (await console.get(there), await console.get(there + "/edit"),
                   await console.post(there + "/edit", _form(people)),
                   await console.post(there + "/override", {"person_id": "1"}),
                   await console.post(there + "/delete")):
        assert answer.status_code == 400 and "Globex" not in answer.text
    await theirs.aclose()


@anyio
async def test_deleting_a_schedule(api: Api, owner: Person, console: Browser,
                                   people: dict[str, Person]) -> None:
    path = await _create(console, people)
    confirm = await console.get(path + "/delete")
    assert "Delete the schedule Primary?" in confirm.text
    done = await console.post(path + "/delete")
    assert done.status_code == 303 and done.headers["location"] == LIST
    assert (await ok(api, "/schedule/list", {}, owner.key))["total"] == 0


@anyio
async def test_a_turn_that_does_not_end_shows_no_end(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    """A one-person rotation never hands off: its turn ends where the service stops looking
    (45 days on), which is no end, and there is no next turn."""
    alice = people["alice"].person_id
    await ok(api, "/schedule/create", {
        "schedule_name": "Solo", "time_zone": "Asia/Shanghai",
        "layers": [rotation([alice], enable=MONDAY_SHANGHAI)]}, owner.key)
    oncall = text((await console.get("/console/on-call")).text)
    assert "Solo Now Alice no end" in oncall
    assert "Solo Now Alice until" not in oncall
    assert "No one is scheduled" not in oncall
    listed = await console.get(LIST)
    sid = re.search(r'href="/console/schedules/(\d+)">Solo<', listed.text)
    assert sid
    page = text((await console.get(f"{LIST}/{sid[1]}")).text)
    assert "Now Alice no end" in page and "No one is scheduled" not in page
    # A turn that does end says until when, and who is next.
    path = await _create(console, people, schedule_name="Pair")
    assert "Pair Now Alice until" in text((await console.get("/console/on-call")).text)
    assert "Next Bob from" in text((await console.get(path)).text)


@anyio
async def test_the_list_searches_and_pages(api: Api, owner: Person, console: Browser) -> None:
    for i in range(21):
        await ok(api, "/schedule/create", {"schedule_name": f"Rota {i:02}",
                                           "layers": []}, owner.key)
    first = await console.get(LIST)
    assert "21 schedules" in text(first.text) and 'href="/console/schedules?p=2"' in first.text
    found = await console.get(LIST + "?q=Rota 07")
    assert "Rota 07" in found.text and "Rota 08" not in found.text
    none = await console.get(LIST + "?q=nothing")
    assert "No schedule matches this search." in none.text


@anyio
async def test_an_empty_list_says_what_to_do(console: Browser) -> None:
    page = await console.get(LIST)
    assert "No schedules yet." in page.text
    assert 'href="/console/schedules/new">New schedule</a>' in page.text


@anyio
async def test_days_off_follow_a_service_calendar(
        api: Api, owner: Person, console: Browser, people: dict[str, Person]) -> None:
    from tests.platform.calendar_support import add_event, make_calendar
    cal_id = await make_calendar(api, owner, "Holidays", timezone="Asia/Shanghai",
                                 workdays=[0, 1, 2, 3, 4, 5, 6])
    await add_event(api, owner, cal_id, "2026-04-14", "2026-04-15", summary="Day off")
    form = await console.get(LIST + "/new")
    assert f'<option value="{cal_id}">Holidays</option>' in form.text
    path = await _create(console, people, **{"layers[0].cal_id": cal_id,
                                             "layers[0].holiday_mode": "next"})
    layer = (await _info(api, owner, path))["layers"][0]
    assert (layer["cal_id"], layer["holiday_mode"]) == (cal_id, "next")
    page = text((await console.get(path)).text)
    assert "On days off in Holidays, the next person covers." in page
    # Tuesday 14 April (Shanghai) is Bob's, in Alice's week.
    info = await _info(api, owner, path, start=NOW, end=NOW + 3 * 86_400)
    turns = [(s["start"], s["group"]["members"][0]["person_ids"])
             for s in info["final_schedule"]["schedules"]]
    tuesday = MONDAY_SHANGHAI + 86_400
    assert (tuesday, [people["bob"].person_id]) in turns
    # A calendar of another account is refused at its field.
    await console.get(LIST + "/new")
    refused = await console.post(LIST + "/new", _form(people, **{
        "layers[0].cal_id": "nope", "layers[0].holiday_mode": "next"}))
    assert refused.status_code == 400
    assert re.search(r"id=\"e-layers-0-cal_id\">calendar &#39;nope&#39; does not exist<",
                     refused.text), refused.text[-3000:]


def test_a_weekly_hand_off_keeps_its_clock_time_across_the_dst_change() -> None:
    from dutyline.schedule.definition import compile_layers
    from dutyline.schedule.timeline import compute
    stored = _stored(layer_in(words(), BERLIN, ""))
    start = utc("2026-03-23T08:00:00")
    turns = compute(compile_layers([stored]), BERLIN, start, start + 21 * 86_400).final
    # 09:00 in Berlin: 08:00 UTC in winter, 07:00 UTC from 29 March.
    assert [(t.start, t.group) for t in turns][:3] == [
        (start, 0), (utc("2026-03-30T07:00:00"), 1), (utc("2026-04-06T07:00:00"), 0)]


@anyio
async def test_the_pages_in_chinese(console: Browser, people: dict[str, Person]) -> None:
    path = await _create(console, people)
    zh = {"Accept-Language": "zh-CN"}
    for page in (LIST, LIST + "/new", path, path + "/edit", path + "/delete"):
        answer = await console.get(page, headers=zh)
        assert answer.status_code == 200, page
    shown = text((await console.get(path, headers=zh)).text)
    comma = "\uff0c"  # the full-width comma of the translation
    assert f"每 1 周于星期一 09:00 交接{comma}自 2026-04-13 起: Alice{comma}然后 Bob" in shown
