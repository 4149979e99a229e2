"""The notification and Sprig functions Go does not have, against expected strings."""

from __future__ import annotations

import time
from typing import Any

import pytest

from dutyline.kit.gotemplate import Limits, Template, TemplateExecError, TemplateLimitError
from dutyline.kit.gotemplate.funcs import notification_funcs
from dutyline.kit.gotemplate.markdown import md_to_html, parse_work

NOW = 1_700_003_723  # 2023-11-14 23:15:23 UTC
DATA: dict[str, Any] = {
    "T": 1_700_000_000,
    "Alerts": [{"Labels": {"host": "b", "n": "2"}}, {"Labels": {"host": "a"}},
               {"Labels": {"host": "b", "n": "10"}}, {"Labels": {}}],
    "J": '{"a": {"b": [1, "two", {"c": true}]}, "x.y": 5}',
    "Empty": "", "Zero": 0, "Name": "  Disk Full  ",
}


def render(src: str, tz: str = "UTC") -> str:
    funcs = notification_funcs(tz, lambda: NOW)
    return Template.parse(src, funcs=funcs).render(DATA, funcs=funcs)


@pytest.mark.parametrize(("src", "expected"), [
    ('{{date "2006-01-02 15:04:05" .T}}', "2023-11-14 22:13:20"),
    ('{{date "Mon Jan _2 3:04PM MST -07:00" .T}}', "Tue Nov 14 10:13PM UTC +00:00"),
    ('{{date "2006-01-02T15:04:05Z07:00" .T}}', "2023-11-14T22:13:20Z"),
    ('{{date "02/01/06 15:04" .T "Asia/Shanghai"}}', "15/11/23 06:13"),
    ('{{date "January 2, 2006 .000" .T}}', "November 14, 2023 .000"),
    ("{{ago .T}}", "1h2m3s"),
    ("{{ago 1700003723}}", "0s"),
    ('{{toHtml .Empty "<b>&</b>" "x"}}', "&lt;b&gt;&amp;&lt;/b&gt;"),
    ("{{toHtml .Empty}}", ""),
    ('{{fireReason "fire"}}|{{fireReason "refire"}}',
     "New incident|Reminder: still not acknowledged"),
    ('{{colorSeverity "Critical"}} {{colorBySeverity "warning"}} {{serverityToColor "Info"}} '
     '{{colorSeverity "Ok"}}', "#C80000 #FA7D00 #FABE00 #008800"),
    ('{{toSeverity "critical"}} {{toSeverity "P2"}} {{toSeverity "whatever"}}',
     "Critical Warning Info"),
    ('{{joinAlertLabels .Alerts "host" ", "}}', "b, a"),
    ('{{joinAlertLabels .Alerts "n"}}', "2,10"),
    ('{{alertLabels .Alerts "host"}}', "[b a]"),
    ('{{maxAlertLabel .Alerts "host"}} {{minAlertLabel .Alerts "host"}}', "b a"),
    ('{{maxAlertLabel .Alerts "nope"}}|', "|"),
    ('{{in "a" "b" "a"}} {{in "z" (list "a" "b")}} {{in 1 1}}', "true false true"),
    ('{{mdToHtml "**bold** *em* `code` <script>x</script> [l](https://e.io/a)\\nnext"}}',
     "<strong>bold</strong> <em>em</em> <code>code</code> &lt;script&gt;x&lt;/script&gt; "
     '<a href="https://e.io/a">l</a><br>next'),
    ('{{mdToHtml "[x](javascript:alert(1))"}}', "[x](javascript:alert(1))"),
    ('{{jsonGet .J "a.b.1"}} {{jsonGet .J "a.b.2.c"}} {{jsonGet .J "x\\\\.y"}} '
     '{{jsonGet .J "a.b.#"}} [{{jsonGet .J "a.nope"}}]', "two true 5 3 []"),
    ('{{jsonGet .J "a.b"}}', '[1,"two",{"c":true}]'),
    ("{{index .Alerts 1 \"Labels\" \"host\"}}", "a"),
    ("[{{trim .Name}}] {{upper .Name | trim}} {{lower \"AbC\"}}", "[Disk Full] DISK FULL abc"),
    ('{{replace "a" "b" "banana"}} {{contains "nan" "banana"}}', "bbnbnb true"),
    ('{{default "none" .Empty}} {{default "none" "set"}} {{.Zero | default 7}}', "none set 7"),
    ('{{ternary "yes" "no" true}} {{ternary "yes" "no" .Zero}}', "yes no"),
    ("{{add 1 2 3}} {{sub 10 4}} {{add 1.9 1}}", "6 6 2"),
    ('{{len (list 1 2 3)}} {{$d := dict "b" 2 "a" 1}}{{$d}} {{keys $d}} {{hasKey $d "a"}}',
     "3 map[a:1 b:2] [b a] true"),
    ('{{values (dict "a" 1)}} {{empty .Empty}} {{empty "x"}} {{empty (list)}}',
     "[1] true false true"),
    ('{{coalesce .Empty .Zero "first" "second"}}', "first"),
    ('{{toString 12}} {{toInt64 "42"}} {{toInt64 3.7}} {{printf "%T" (toInt64 "1")}}',
     "12 42 3 int"),
    ('{{join ", " (list "a" "b")}}', "a, b"),
])
def test_function(src: str, expected: str) -> None:
    assert render(src) == expected


def test_wrong_arguments_are_render_errors() -> None:
    with pytest.raises(TemplateExecError, match="wrong number of args"):
        render("{{upper}}")
    with pytest.raises(TemplateExecError, match="expected a list of alerts"):
        render('{{joinAlertLabels "x" "host"}}')


def test_unknown_time_zone_falls_back_to_utc() -> None:
    assert render('{{date "15:04" .T}}', tz="Nowhere/City") == "22:13"


@pytest.mark.parametrize(("text", "expected"), [
    ("a **b** _c_ `d`", "a <strong>b</strong> <em>c</em> <code>d</code>"),
    ("<img src=x onerror=alert(1)> & \"q\"",
     "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;"),
    ("[a](http://e.io/x?y=1&z=2)", '<a href="http://e.io/x?y=1&amp;z=2">a</a>'),
    ('[a](https://e.io/" onclick="x)', '[a](https://e.io/&quot; onclick=&quot;x)'),
    ("[rel](/x) [m](mailto:a@b.c) [d](data:text/html,x) [v](vbscript:x)",
     "[rel](/x) [m](mailto:a@b.c) [d](data:text/html,x) [v](vbscript:x)"),
    ("[j](JavaScript:alert(1))", "[j](JavaScript:alert(1))"),
    ("# not a heading\n- not a list", "# not a heading<br>- not a list"),
    (r"\*kept\*", "*kept*"),
    ("`<b>`", "<code>&lt;b&gt;</code>"),
])
def test_md_to_html_is_safe_markdown(text: str, expected: str) -> None:
    assert md_to_html(text) == expected


PATHOLOGICAL = {"brackets": "[", "links": "[a](", "images": "![", "emphasis": "*_",
                "code": "``a`", "strong": "**a"}


@pytest.mark.parametrize("unit", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_md_to_html_work_grows_linearly(unit: str) -> None:
    # the parser's positions visited, counted inside it: twice the input, twice the work
    small, large = (parse_work(unit * (n // len(unit))) for n in (10_000, 20_000))
    assert small > 0
    assert large <= 2.2 * small, (small, large)


def test_md_to_html_of_60000_brackets_is_fast() -> None:
    # the old regex took ~8 s here (17 s under load): each `[` looked to the end for a `]`
    started = time.perf_counter()
    md_to_html("[" * 60_000)
    assert time.perf_counter() - started < 5


class JumpingClock:
    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


def test_md_to_html_looks_at_the_clock_inside_one_call() -> None:
    # one step for the executor; the time bound still holds inside the function
    tmpl = Template.parse("{{mdToHtml .S}}", funcs=notification_funcs())
    clock = JumpingClock()
    with pytest.raises(TemplateLimitError, match=r"mdToHtml exceeded the time limit \(5 s\)"):
        tmpl.render({"S": "[" * 20_000}, Limits(max_seconds=5, clock=clock))
    assert clock.reads == 7  # started at 1, deadline 6: the 6th look inside stops it


def test_md_to_html_refuses_an_argument_over_the_value_bound() -> None:
    tmpl = Template.parse("{{mdToHtml .S}}", funcs=notification_funcs())
    with pytest.raises(TemplateLimitError, match="over the limit of 1000"):
        tmpl.render({"S": "x" * 1001}, Limits(max_value=1000))


def test_large_results_and_large_json_look_at_the_clock() -> None:
    # 100 steps: under the step counter's 256, yet each builds 5,000 characters
    clock = JumpingClock()
    tmpl = Template.parse('{{range 50}}{{$t := printf "%05000d" 1}}{{end}}')
    with pytest.raises(TemplateLimitError, match=r"time limit \(10 s\)"):
        tmpl.render({}, Limits(max_seconds=10, clock=clock))
    clock = JumpingClock()
    doc = '{"a": "' + "x" * 5000 + '"}'
    tmpl = Template.parse('{{range 50}}{{$t := jsonGet $.J "b"}}{{end}}',
                          funcs=notification_funcs())
    with pytest.raises(TemplateLimitError, match=r"jsonGet exceeded the time limit"):
        tmpl.render({"J": doc}, Limits(max_seconds=10, clock=clock))
