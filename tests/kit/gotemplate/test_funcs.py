"""The notification and Sprig functions Go does not have, against expected strings."""

from __future__ import annotations

from typing import Any

import pytest

from dutyline.kit.gotemplate import Template, TemplateExecError
from dutyline.kit.gotemplate.funcs import notification_funcs

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
