"""api/inputs.py: a record built in code is checked against its own limits with the API's
message, whole or as a service's keyword arguments."""

from __future__ import annotations

from typing import Annotated

import msgspec
import pytest

from dutyline.api import errors
from dutyline.api.inputs import checked, checked_arguments


class Step(msgspec.Struct, kw_only=True):
    minutes: Annotated[int, msgspec.Meta(ge=1, le=60)] = 5


class Plan(msgspec.Struct, kw_only=True):
    name: Annotated[str, msgspec.Meta(max_length=8)]
    steps: list[Step] = []
    note: Annotated[str, msgspec.Meta(max_length=4)] | msgspec.UnsetType = msgspec.UNSET


def refusal(call: object) -> dict[str, object]:
    with pytest.raises(errors.InvalidParameter) as caught:
        call()  # type: ignore[operator]
    return caught.value.fields


def test_a_record_is_checked_whole() -> None:
    plan = Plan(name="n" * 9)  # msgspec checks nothing when a record is built in code
    assert refusal(lambda: checked(plan)) == {
        "field": "name", "reason": "Expected `str` of length <= 8"}
    good = Plan(name="ok", steps=[Step(minutes=3)])
    assert checked(good) == good


def test_keyword_arguments_are_checked_as_one_body() -> None:
    arguments = {"name": "ok", "steps": [Step(), Step(minutes=61)], "deps": object()}
    assert refusal(lambda: checked_arguments(Plan, arguments)) == {
        "field": "steps[1].minutes", "reason": "Expected `int` <= 60"}
    deps = object()
    out = checked_arguments(Plan, {"name": "ok", "steps": [Step()], "deps": deps,
                                   "note": msgspec.UNSET})
    assert out["deps"] is deps and out["steps"] == [Step()] and out["note"] is msgspec.UNSET
    # A record given whole is checked whole (its fields are not keyword arguments).
    assert refusal(lambda: checked_arguments(Plan, {"plan": Plan(name="n" * 9)})) == {
        "field": "name", "reason": "Expected `str` of length <= 8"}


def test_a_missing_field_is_required() -> None:
    assert refusal(lambda: checked_arguments(Plan, {"steps": []})) == {
        "field": "name", "reason": "is required"}
