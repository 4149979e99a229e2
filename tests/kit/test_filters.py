"""The filter engine: value forms, OR-of-AND, paths of errors, limits, linear-time regexes."""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dutyline.kit.filters import (
    MAX_CONDITIONS,
    MAX_GROUPS,
    FilterCondition,
    FilterError,
    FilterSet,
    compile_filters,
    filters_to_builtins,
)

ALERT: dict[str, Any] = {
    "severity": "Critical",
    "title": "disk full on db-1",
    "description": "95% used",
    "alert_key": "k1",
    "labels": {"env": "prod", "host": "10.1.2.3", "cpu": "97.5", "k8s.io/app": "api",
               "région": "é-ouest"},
    "nested": {"a": {"b": "deep"}},
    "tags": ["red", "blue"],
    "count": 7,
}


def cond(key: str, vals: list[str], oper: str = "IN") -> dict[str, Any]:
    return {"key": key, "oper": oper, "vals": vals}


def one(key: str, vals: list[str], oper: str = "IN") -> bool:
    return compile_filters([[cond(key, vals, oper)]]).matches(ALERT)


def test_empty_and_none_match_everything() -> None:
    assert compile_filters(None).matches({})
    assert compile_filters([]).matches(ALERT)
    assert compile_filters([]).matches_everything


def test_exact_in_and_notin() -> None:
    assert one("severity", ["Warning", "Critical"])
    assert not one("severity", ["critical"])  # exact is case-sensitive
    assert not one("severity", ["Critical"], "NOTIN")
    assert one("severity", ["Info"], "NOTIN")


def test_missing_field_matches_no_value() -> None:
    assert not one("labels.absent", ["*"])
    assert one("labels.absent", ["*"], "NOTIN")
    assert not one("nothing", [""])


def test_labels_take_the_rest_of_the_key_and_unicode() -> None:
    assert one("labels.k8s.io/app", ["api"])
    assert one("labels.région", ["é-*"])
    assert one("labels.région", ["/é-\\w+/"])


def test_dotted_path_and_scalars_and_lists() -> None:
    assert one("nested.a.b", ["deep"])
    assert not one("nested.a.c", ["deep"])
    assert one("count", ["7"])
    assert one("count", ["num:ge:7"])
    assert one("tags", ["blue"])
    assert not one("tags", ["blue"], "NOTIN")


def test_regex_is_a_full_match() -> None:
    assert one("title", ["/disk.*/"])
    assert not one("title", ["/disk/"])
    assert one("title", ["/(?i)DISK FULL.*/"])
    assert one("severity", ["/Warn.*/", "/Crit.*/"])


def test_wildcards() -> None:
    assert one("title", ["disk*db-?"])
    assert not one("title", ["disk*db-??"])
    assert one("title", ["*.*"]) is False  # the dot of a wildcard is a literal dot
    assert one("labels.host", ["10.1.*"])


def test_cidr() -> None:
    assert one("labels.host", ["cidr:10.0.0.0/8"])
    assert not one("labels.host", ["cidr:192.168.0.0/16"])
    assert not one("title", ["cidr:0.0.0.0/0"])  # not an address
    assert not one("labels.host", ["cidr:::/0"])  # other IP version


def test_numbers() -> None:
    assert one("labels.cpu", ["num:gt:90"])
    assert one("labels.cpu", ["num:le:97.5"])
    assert not one("labels.cpu", ["num:lt:97.5"])
    assert not one("title", ["num:gt:0"])  # not a number


def test_or_of_and() -> None:
    groups = [
        [cond("severity", ["Warning"]), cond("labels.env", ["prod"])],
        [cond("severity", ["Critical"]), cond("labels.env", ["prod"])],
    ]
    assert compile_filters(groups).matches(ALERT)
    groups[1][1] = cond("labels.env", ["prod"], "NOTIN")
    assert not compile_filters(groups).matches(ALERT)


def test_accepts_wire_structs() -> None:
    f = compile_filters([[FilterCondition(key="severity", oper="IN", vals=["Critical"])]])
    assert f.matches(ALERT)
    assert filters_to_builtins([[FilterCondition(key="a", oper="IN", vals=["b"])]]) == [
        [{"key": "a", "oper": "IN", "vals": ["b"]}]
    ]


@pytest.mark.parametrize(
    ("groups", "path"),
    [
        ([[cond("severity", [])]], "filters[0][0].vals"),
        ([[cond("severity", ["a"], "EQ")]], "filters[0][0].oper"),
        ([[cond("a", ["x"])], [cond("b", ["ok", "/a(/"])]], "filters[1][0].vals[1]"),
        ([[cond("a", ["x", "y", "cidr:10.0.0.0/33"])]], "filters[0][0].vals[2]"),
        ([[cond("a", ["num:eq:5"])]], "filters[0][0].vals[0]"),
        ([[cond("a", ["num:gt:five"])]], "filters[0][0].vals[0]"),
        ([[cond("a", ["num:gt:nan"])]], "filters[0][0].vals[0]"),
        ([[cond("", ["x"])]], "filters[0][0].key"),
        ([[cond("labels.", ["x"])]], "filters[0][0].key"),
        ([[cond("a..b", ["x"])]], "filters[0][0].key"),
        ([[{"oper": "IN", "vals": ["x"]}]], "filters[0][0].key"),
        ([[cond("a", [5])]], "filters[0][0].vals[0]"),  # type: ignore[list-item]
        ([[cond("a", ["x"])], []], "filters[1]"),
        ([["nope"]], "filters[0][0]"),
        (["nope"], "filters[0]"),
        ("nope", "filters"),
        ([[cond("a", ["/(a)\\1/"])]], "filters[0][0].vals[0]"),  # backreferences: not RE2
    ],
)
def test_errors_name_the_path(groups: Any, path: str) -> None:
    with pytest.raises(FilterError) as caught:
        compile_filters(groups)
    assert caught.value.path == path
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(path)


def test_custom_path_prefix() -> None:
    with pytest.raises(FilterError) as caught:
        compile_filters([[cond("a", [])]], path="source_filters")
    assert caught.value.path == "source_filters[0][0].vals"


def test_limits() -> None:
    with pytest.raises(FilterError) as caught:
        compile_filters([[cond("a", ["x"])]] * (MAX_GROUPS + 1))
    assert caught.value.path == "filters"
    with pytest.raises(FilterError) as caught:
        compile_filters([[cond("a", ["x"])] * 10_000])
    assert caught.value.path == "filters[0]"
    assert "50" in caught.value.message
    # the largest allowed filter compiles
    big = compile_filters([[cond("a", ["x"])] * MAX_CONDITIONS] * MAX_GROUPS)
    assert not big.matches({"a": "y"})
    with pytest.raises(FilterError) as caught:
        compile_filters([[cond("a", ["x"] * 101)]])
    assert caught.value.path == "filters[0][0].vals"
    with pytest.raises(FilterError) as caught:
        compile_filters([[cond("a", ["x" * 1025])]])
    assert caught.value.path == "filters[0][0].vals[0]"


def test_catastrophic_regex_runs_in_linear_time() -> None:
    # RE2 accepts the pattern and answers it by automaton, never by backtracking: this returns
    # (a backtracking engine would run for longer than the universe's age on 50,000 a's).
    f = compile_filters([[cond("title", ["/(a+)+$/"])]])
    assert f.matches({"title": "a" * 50_000})
    assert not f.matches({"title": "a" * 50_000 + "!"})
    g = compile_filters([[cond("title", ["/(a|aa)*b/"])]])
    assert not g.matches({"title": "a" * 50_000})


# -- properties ---------------------------------------------------------------------------------

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(field=texts, vals=st.lists(texts.filter(lambda v: not v.startswith(("/", "cidr:", "num:"))
                                               and "*" not in v and "?" not in v),
                                  min_size=1, max_size=5))
def test_exact_in_is_membership_and_notin_its_negation(field: str, vals: list[str]) -> None:
    subject = {"title": field}
    assert compile_filters([[cond("title", vals)]]).matches(subject) == (field in vals)
    assert compile_filters([[cond("title", vals, "NOTIN")]]).matches(subject) == (
        field not in vals
    )


@settings(max_examples=200, deadline=None)
@given(field=st.text(alphabet="ab.*?[]x\\", max_size=10),
       pattern=st.text(alphabet="ab.*?[]x\\", min_size=1, max_size=6).filter(
           lambda p: "*" in p or "?" in p))
def test_wildcard_agrees_with_a_reference_translation(field: str, pattern: str) -> None:
    reference = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    expected = re.fullmatch(reference, field, re.DOTALL) is not None
    got = compile_filters([[cond("t", [pattern])]]).matches({"t": field})
    # RE2's `.` excludes newlines like fnmatch-free Python without DOTALL; our alphabet has none
    assert got == expected
    if "[" not in pattern and "\\" not in pattern:
        assert got == fnmatch.fnmatchcase(field, pattern)


@settings(max_examples=200, deadline=None)
@given(address=st.ip_addresses(v=4), prefix=st.integers(0, 32), base=st.ip_addresses(v=4))
def test_cidr_agrees_with_ipaddress(
    address: ipaddress.IPv4Address, prefix: int, base: ipaddress.IPv4Address
) -> None:
    network = ipaddress.ip_network(f"{base}/{prefix}", strict=False)
    f = compile_filters([[cond("labels.ip", [f"cidr:{network}"])]])
    assert f.matches({"labels": {"ip": str(address)}}) == (address in network)


@settings(max_examples=200, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False, width=32),
       bound=st.floats(allow_nan=False, allow_infinity=False, width=32),
       op=st.sampled_from(["gt", "ge", "lt", "le"]))
def test_num_agrees_with_python(value: float, bound: float, op: str) -> None:
    expected = {"gt": value > bound, "ge": value >= bound, "lt": value < bound,
                "le": value <= bound}[op]
    f = compile_filters([[cond("n", [f"num:{op}:{bound!r}"])]])
    assert f.matches({"n": repr(value)}) == expected
    assert f.matches({"n": value}) == expected


@settings(max_examples=150, deadline=None)
@given(groups=st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "labels.c"]),
                                          st.sampled_from(["IN", "NOTIN"]),
                                          st.lists(st.sampled_from(["1", "2", "3"]),
                                                   min_size=1, max_size=3)),
                                min_size=1, max_size=4), max_size=4),
       subject=st.fixed_dictionaries({"a": st.sampled_from(["1", "2", "3"]),
                                      "b": st.sampled_from(["1", "2", "3"]),
                                      "labels": st.fixed_dictionaries(
                                          {"c": st.sampled_from(["1", "2", "3"])})}))
def test_or_of_and_composes_single_conditions(
    groups: list[list[tuple[str, str, list[str]]]], subject: dict[str, Any]
) -> None:
    wire = [[cond(k, v, o) for k, o, v in g] for g in groups]
    expected = not groups or any(
        all(compile_filters([[cond(k, v, o)]]).matches(subject) for k, o, v in g) for g in groups
    )
    assert compile_filters(wire).matches(subject) == expected


@settings(max_examples=150, deadline=None)
@given(rules=st.lists(st.lists(st.lists(st.tuples(
    st.sampled_from(["a", "labels.c"]), st.sampled_from(["IN", "NOTIN"]),
    st.lists(st.sampled_from(["1", "2", "/[12]/", "3*"]), min_size=1, max_size=2)),
    min_size=1, max_size=2), max_size=3), max_size=6),
       subject=st.fixed_dictionaries({"a": st.sampled_from(["1", "2", "3"]),
                                      "labels": st.fixed_dictionaries(
                                          {"c": st.sampled_from(["1", "2", "3"])})}))
def test_filter_set_agrees_with_trying_every_filter(
    rules: list[list[list[tuple[str, str, list[str]]]]], subject: dict[str, Any]
) -> None:
    compiled = [compile_filters([[cond(k, v, o) for k, o, v in g] for g in r]) for r in rules]
    filter_set = FilterSet(list(enumerate(compiled)))
    assert len(filter_set) == len(rules)
    assert filter_set.matching(subject) == [i for i, f in enumerate(compiled) if f.matches(subject)]


def test_filter_set_indexes_exact_in_values() -> None:
    f = compile_filters([[cond("labels.alertname", ["A", "B"]), cond("severity", ["/C.*/"])]])
    assert f.index_hints() == [("labels.alertname", frozenset({"A", "B"}))]
    assert compile_filters([[cond("a", ["x"], "NOTIN")]]).index_hints() is None
    assert compile_filters(None).index_hints() is None
    filter_set = FilterSet([("r1", f), ("r2", compile_filters(None))])
    assert filter_set.matching({"labels": {"alertname": "B"}, "severity": "Critical"}) == [
        "r1", "r2"]
    assert filter_set.matching({"labels": {"alertname": "Z"}}) == ["r2"]
