"""Threshold conditions: `$A` and bare `A` name the same query; a condition that is only a
query's name holds whenever that query returned a value, zero included."""

from __future__ import annotations

import pytest

from dutyline.monit import conditions


@pytest.mark.parametrize(("text", "values", "holds"), [
    ("$A > 90", {"A": 93.5}, True),
    ("A > 90", {"A": 93.5}, True),
    ("A > 90", {"A": 12.0}, False),
    ("A.value >= 1 && $B < 3", {"A": 1.0, "B": 2.0}, True),
    ("A > 2 * B", {"A": 5.0, "B": 2.0}, True),
    ("!(A > 1)", {"A": 0.5}, True),
    # Only a name: the query returned a value for the series, whatever it is.
    ("A", {"A": 0.0}, True),
    ("$A", {"A": 0.0}, True),
    ("A", {"A": None}, False),
    ("A", {}, False),
    ("A > 1", {}, False),  # a missing value makes a comparison false, not an error
])
def test_conditions_hold_as_written(text: str, values: dict[str, float | None],
                                    holds: bool) -> None:
    assert conditions.evaluate(text, values) is holds


def test_names_are_read_with_or_without_the_dollar() -> None:
    assert conditions.names_in("$A > 1 && B < 2 || C.value == 3") == {"A", "B", "C"}


@pytest.mark.parametrize("text", ["A > 'x'", "__import__('os')", "A(1)", "A.b.c", "", "A >"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(conditions.ConditionInvalid):
        conditions.compile_condition(text)
