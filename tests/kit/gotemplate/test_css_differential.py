"""CSS contexts (style attributes, <style> elements) against Go's html/template, byte for byte.

The corpus (css_corpus.py) crosses every CSS position an action can take with values safe
and unsafe, and adds templates for the CSS state machine itself. Where Go errors, we must
error too; both render paths (compiled closures and the tree walk) must agree with Go.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dutyline.kit.gotemplate import Template, TemplateError, TemplateSyntaxError

from .conftest import run_go
from .css_corpus import DATA, cases

CASES = cases()


@pytest.fixture(scope="module")
def go_css_results(gorender: Path) -> list[dict[str, Any]]:
    return run_go(gorender, DATA, CASES)


def test_the_corpus_covers_css_positions_and_go_refusals(
        go_css_results: list[dict[str, Any]]) -> None:
    assert len(CASES) >= 500
    filtered = sum(1 for r in go_css_results if "ZgotmplZ" in r["output"])
    refused = sum(1 for r in go_css_results if not r["ok"])
    assert filtered >= 100 and refused >= 5


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[f"{i}:{c['template'][:48]}" for i, c in enumerate(CASES)])
def test_same_output_as_go(index: int, go_css_results: list[dict[str, Any]]) -> None:
    go = go_css_results[index]
    data = json.loads(json.dumps(DATA), parse_int=float)
    outputs: set[str] = set()
    failure = ""
    try:
        tmpl = Template.parse(CASES[index]["template"], html=True)
        outputs = {tmpl.render(data), tmpl.render_reference(data)}
    except TemplateError as e:
        failure = str(e)
    if failure:
        assert not go["ok"], f"we failed ({failure}) where Go rendered {go['output']!r}"
    else:
        assert go["ok"], f"Go failed ({go['error']}) where we rendered {outputs!r}"
        assert outputs == {go["output"]}


@pytest.mark.parametrize("src", [
    "<script>var x = {{.Red}};</script>",
    '<a onclick="f({{.Red}})">x</a>',
    "<a onmouseover={{.Red}}>x</a>",
])
def test_javascript_contexts_stay_refused(src: str) -> None:
    with pytest.raises(TemplateSyntaxError,
                       match="actions in JavaScript or CSS contexts are not supported"):
        Template.parse(src, html=True)
