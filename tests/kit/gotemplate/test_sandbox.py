"""The sandbox bounds: steps, output size, `template` recursion; errors, never a crash."""

from __future__ import annotations

import pytest

from dutyline.kit.gotemplate import (
    Limits,
    Template,
    TemplateExecError,
    TemplateLimitError,
    TemplateSyntaxError,
)


def test_a_million_iterations_hit_the_step_bound() -> None:
    tmpl = Template.parse("{{range 1000000}}{{end}}")
    with pytest.raises(TemplateLimitError, match="step limit"):
        tmpl.render({}, Limits(max_steps=10_000))


def test_gigabytes_of_output_hit_the_output_bound() -> None:
    tmpl = Template.parse('{{range 100000}}{{printf "%1000s" "x"}}{{end}}')
    with pytest.raises(TemplateLimitError, match="output exceeds"):
        tmpl.render({}, Limits(max_output=100_000))


def test_endless_template_recursion_hits_the_depth_bound() -> None:
    tmpl = Template.parse('{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}')
    with pytest.raises(TemplateLimitError, match="depth"):
        tmpl.render({}, Limits(max_depth=30))


def test_bounded_recursion_within_the_limit_renders() -> None:
    tmpl = Template.parse(
        '{{define "r"}}{{if .}}{{index . 0}}{{template "r" slice . 1}}{{end}}{{end}}'
        '{{template "r" .}}')
    assert tmpl.render(["a", "b", "c"], Limits(max_depth=5)) == "abc"


def test_unknown_function_is_a_parse_error() -> None:
    with pytest.raises(TemplateSyntaxError, match='function "nope" not defined'):
        Template.parse("{{nope 1}}")


def test_limit_errors_are_exec_errors() -> None:
    assert issubclass(TemplateLimitError, TemplateExecError)


def test_python_ints_are_go_ints_and_floats_float64() -> None:
    tmpl = Template.parse("{{eq .a 1}} {{printf \"%d|%v\" .a .b}} {{len .s}}")
    assert tmpl.render({"a": 1, "b": 2.0, "s": "héllo"}) == "true 1|2 6"
    with pytest.raises(TemplateExecError, match="incompatible types"):
        Template.parse("{{eq .b 1}}").render({"b": 1.0})


def test_compiled_closures_agree_with_the_tree_walk_over_the_corpus() -> None:
    import json

    from dutyline.kit.gotemplate import TemplateError

    from .conftest import load_corpus

    data, cases = load_corpus()
    data = json.loads(json.dumps(data), parse_int=float)
    for case in cases:
        try:
            tmpl = Template.parse(case["template"], html=bool(case.get("html")))
        except TemplateError:
            continue
        outcomes = []
        for run in (tmpl.render, tmpl.render_reference):
            try:
                outcomes.append(("ok", run(data)))
            except TemplateError:
                outcomes.append(("error", ""))
        assert outcomes[0] == outcomes[1], case["template"]
