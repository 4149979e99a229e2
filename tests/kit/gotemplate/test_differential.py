"""Our renderer against Go's text/template and html/template, byte for byte.

Each corpus case runs through the real Go packages (the gorender helper) and through
dutyline.kit.gotemplate with the same JSON data, decoded as Go decodes JSON into `any`
(every number a float64). Where Go errors (parse or exec), we must error too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dutyline.kit.gotemplate import Template, TemplateError

from .conftest import load_corpus

DATA, CASES = load_corpus()


def test_the_corpus_is_large_and_covers_both_packages() -> None:
    assert len(CASES) >= 150
    assert sum(1 for c in CASES if c.get("html")) >= 20


@pytest.mark.parametrize("index", range(len(CASES)),
                         ids=[f"{i}:{c['template'][:40]}" for i, c in enumerate(CASES)])
def test_same_output_as_go(index: int, go_results: list[dict[str, Any]]) -> None:
    case = CASES[index]
    go = go_results[index]
    data = json.loads(json.dumps(case.get("data", DATA)), parse_int=float)
    ours: str | None = None
    failure = ""
    try:
        ours = Template.parse(case["template"], html=bool(case.get("html"))).render(data)
    except TemplateError as e:
        failure = str(e)
    if ours is None:
        assert not go["ok"], f"we failed ({failure}) where Go rendered {go['output']!r}"
    else:
        assert go["ok"], f"Go failed ({go['error']}) where we rendered {ours!r}"
        assert ours == go["output"]
