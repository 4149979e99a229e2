"""Templates with actions in CSS contexts, for the differential test against Go's html/template.

Two parts: every CSS position an action can take (a style attribute quoted three ways, a
<style> element, strings, url(...), comments) crossed with values safe and unsafe; then
templates exercising the state machine itself (comments, url detection, escapes in the
template text, end tags, branches, template calls, errors).
"""

from __future__ import annotations

from typing import Any

DATA: dict[str, Any] = {
    "Color": "#C80000",
    "Red": "red",
    "Px": "10px",
    "Pct": "25%",
    "Neg": "-1.5em",
    "Class": ".bar",
    "Font": "Times New Roman",
    "Rgb": "rgb(200,0,0)",
    "Expr": "expression(alert(1))",
    "ExprCase": "eXpReSsIoN",
    "ExprDash": "expres-sion",
    "ExprEsc": "expr\\65 ssion",
    "MozBinding": "-moz-binding",
    "MozEsc": "\\2d moz-binding",
    "JSURL": "javascript:alert(1)",
    "JSURLCase": "JavaScript:x",
    "HTTPURL": "http://x.io/a b?q=1&r=<2>",
    "RelURL": "/img/a.png",
    "DataURL": "data:image/png;base64,AAAA",
    "Query": "a=1&b=2#frag",
    "Semi": "red;background:blue",
    "Brace": "red}body{color:blue",
    "Open": "/*",
    "Close": "*/",
    "Slashes": "//x",
    "DQ": 'a"b',
    "SQ": "a'b",
    "Paren": "a(b)",
    "Lt": "</style><script>x</script>",
    "Amp": "a&b",
    "At": "@import",
    "Bracket": "a[b]",
    "Backtick": "a`b",
    "Backslash": "a\\",
    "BackslashHex": "\\3c",
    "UniEsc": "\\72 ed",
    "UniEscSpace": "\\000072\tx",
    "BigEsc": "\\ffffff",
    "SurrogateEsc": "\\d800",
    "NulEsc": "\\0",
    "Uni": "h\u00e9llo w\u00f6rld",
    "Emoji": "\U0001f525",
    "Nul": "a\u0000b",
    "Ctl": "a\tb\nc\fd\re",
    "Dashes": "a--b",
    "Plus": "a+b",
    "Colon": "a:b",
    "HexNext": "a;1",
    "SpaceNext": "a; b",
    "Trailing": "a;",
    "Hash": "#x",
    "Empty": "",
    "Space": " red ",
    "Num": 42,
    "Pi": 3.14159,
    "T": True,
    "Null": None,
    "List": [1, "x", None],
    "Map": {"k": "v"},
}

# Every place an action can stand in CSS, with {X} where the action goes.
POSITIONS = [
    '<p style="color:{X}">x</p>',
    "<p style='color:{X}'>x</p>",
    "<p style=color:{X}>x</p>",
    '<p style="{X}">x</p>',
    "<style>p{{color:{X}}}</style>",
    '<style>p{{font-family:"{X}"}}</style>',
    "<p style=\"font-family:'{X}'\">x</p>",
    "<style>p{{background:url({X})}}</style>",
    "<style>p{{background:url('{X}')}}</style>",
    '<p style="background:url(&quot;{X}&quot;)">x</p>',
    "<style>p{{background:url(/a?q={X})}}</style>",
    '<p style="background:url(http://x/{X})">x</p>',
    "<style>/* {X} */p{{}}</style>",
    '<p style="/* {X} */color:red">x</p>',
]

# Templates for the state machine itself.
SHAPES = [
    # the motivating e-mail: colour by severity
    '<span style="color:{{if eq .Color "#C80000"}}#C80000{{else}}#666{{end}}">s</span>',
    '<span style="color:{{.Color}};font-weight:bold">s</span>',
    '<td style="color: {{.Color}}; padding: {{.Px}}">{{.Font}}</td>',
    '<div style="margin:{{.Num}}px {{.Pi}}em">m</div>',
    '<div style="width:{{.Pct}}">w</div><p title="{{.DQ}}">{{.Lt}}</p>',
    '<div STYLE="color:{{.Red}}">u</div>',
    '<div data-style="color:{{.Red}}">d</div>',
    '<div style="color:{{.Red}}" title="{{.Amp}}" style2="{{.Amp}}">t</div>',
    '<div style="">{{.Lt}}</div>',
    '<div style=color:{{.Red}} title=x>u</div>',
    # comments: dropped inside <style>, kept in an attribute
    "<style>a{} /* one */ b{} /* two\nlines */ c{}</style>",
    "<style>a{}// line {{.Red}}\nb{color:{{.Red}}}</style>",
    "<style>a{}// line\rb{}//\fc{}</style>",
    "<style>/* {{.Red}} {{.Color}} */p{color:{{.Red}}}</style>",
    "<style>/*{{.Red}}*/</style>",
    "<style>/* unclosed {{.Red}}</style>",
    "<style>// to the end {{.Red}}</style>",
    '<p style="/* kept */color:{{.Red}}">x</p>',
    '<p style="// {{.Red}}">x</p>',
    "<p style=/*{{.Red}}*/>x</p>",
    "<style>a{color:red}/</style>",
    "<style>a{color:red}/{{.Red}}</style>",
    # url(...) detection
    "<style>a{background:url( {{.RelURL}} )}</style>",
    "<style>a{background:URL({{.RelURL}})}</style>",
    "<style>a{background:url\n({{.RelURL}})}</style>",
    "<style>a{background:myurl({{.RelURL}})}</style>",
    "<style>a{background:-url({{.RelURL}})}</style>",
    "<style>a{background:\u00e9url({{.RelURL}})}</style>",
    '<style>a{background:url(  "{{.RelURL}}")}</style>',
    "<style>a{background:url({{.HTTPURL}}) no-repeat}</style>",
    "<style>a{background:url(/x?{{.Query}}#{{.Query}})}</style>",
    "<style>a{background:url(/x#y)} b{content:'{{.Query}}'}</style>",
    "<style>a{background:url(/x\\3f y)} b{content:'{{.Query}}'}</style>",
    '<style>a{content:"\\23 {{.Query}}"}</style>',
    '<style>a{content:"\\e9 {{.Query}}"}</style>',
    '<style>a{content:"\u00e9\\\\{{.Query}}"}</style>',
    "<style>a{background:url(/x\\)y{{.Query}})}</style>",
    "<style>a{background:url(/x) url({{.RelURL}})}</style>",
    "<style>a{content:'{{.RelURL}}{{.JSURL}}'}</style>",
    "<style>a{content:'  {{.JSURL}}'}</style>",
    '<p style="background:url({{.RelURL}}">x</p>',
    # strings and character references in attribute values
    "<p style=\"content:&#34;{{.DQ}}&#34;\">x</p>",
    "<p style=\"content:&#39;{{.SQ}}&#39;;color:{{.Red}}\">x</p>",
    "<p style=\"font-family:&quot;a&quot;;color:{{.Red}}\">x</p>",
    "<p style=\"content:'a\\'b{{.SQ}}'\">x</p>",
    "<p style='content:\"{{.DQ}}\"'>x</p>",
    # end tags
    "<style>a{}</style >{{.Lt}}",
    "<style>a{}</STYLE>{{.Lt}}",
    "<style>a{}</stylex>b{color:{{.Red}}}</style>",
    '<style>a{content:"</style>"}{{.Lt}}',
    "<style type=\"text/css\" media=all>p{color:{{.Red}}}</style><p>{{.Lt}}</p>",
    "<STYLE>p{color:{{.Red}}}</STYLE>",
    "<style>p{color:{{.Red}}}</style><style>q{color:{{.Color}}}</style>",
    "<style>{{.Red}}</style>",
    # actions in ranges, branches and template calls
    "<style>{{range .List}}.c{margin:{{.}}px}{{end}}</style>",
    '<p style="{{range $i, $e := .List}}{{if $i}};{{end}}margin:{{$e}}{{end}}">x</p>',
    '<p style="{{if .T}}color:{{.Red}}{{end}}">x</p>',
    '<p style="{{with .Color}}color:{{.}}{{end}}">x</p>',
    '{{define "c"}}{{.}}{{end}}<p style="color:{{template "c" .Color}}">x</p>',
    '{{define "c"}}{{.}}{{end}}<p style="color:{{template "c" .Expr}}">{{template "c" .Lt}}</p>',
    '{{define "rule"}}p{color:{{.}}}{{end}}<style>{{template "rule" .Color}}</style>',
    "{{define \"s\"}}'{{.}}'{{end}}<style>a{content:{{template \"s\" .SQ}}}</style>",
    # predefined escapers and printing
    '<p style="color:{{.Red | html}}">x</p>',
    '<p style="color:{{html .Red}}">x</p>',
    '<p style="content:\'{{.HTTPURL | urlquery}}\'">x</p>',
    '<style>a{content:"{{print .Red .Num}}"}</style>',
    '<p style="color:{{printf "#%02x%02x%02x" 200 0 0}}">x</p>',
    '<p style="color:{{.Missing}}">x</p>',
    "<style>a{content:'{{.Missing}}'}</style>",
    '<p style="{{.Red}}:{{.Red}}">x</p>',
    # templates Go refuses
    "<p style=color:'{{.Red}}'>x</p>",
    "<p style=a=b{{.Red}}>x</p>",
    "<style>p{",
    '<p style="color:{{.Red}}>x</p>',
    "<style>a{content:'\\",
    '<p style="{{if .T}}content:\'{{end}}{{.Red}}">x</p>',
    "<style>{{if .T}}/*{{end}}</style>",
    "<style>a{background:url({{if .T}}/x?{{end}}{{.Red}})}</style>",
]


def cases() -> list[dict[str, Any]]:
    out = [{"template": pos.format(X="{{." + key + "}}"), "html": True}
           for pos in POSITIONS for key in DATA]
    out += [{"template": t, "html": True} for t in SHAPES]
    return out
