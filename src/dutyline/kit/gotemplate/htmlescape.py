"""html/template's contextual autoescaping for the contexts notification e-mails use.

Like Go, the escaper walks each template with the HTML context at every point (text, tag,
attribute name / value quoted or not, URL attributes and their query part, RCDATA, HTML
comments) and appends escaper commands to every action's pipeline, so escaping happens
when the template runs. HTML comments are dropped from the output. CSS contexts (<style>
elements and style attributes) are escaped as Go escapes them (css.py). Actions inside
<script> or JS attributes (on*) are refused at parse time rather than escaped wrongly.
Templates called from a non-text context get a copy escaped for that context, as Go does.
"""

from __future__ import annotations

import copy
import html
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import css
from . import nodes as n
from .builtins import GoFunc, eval_args, html_escape_string
from .contexts import (
    A_CSS,
    A_JS,
    A_PLAIN,
    A_SRCSET,
    A_URL,
    AFTER_NAME,
    ATTR,
    ATTR_NAME,
    BEFORE_VALUE,
    CMT,
    CSS,
    CSS_BLOCK_CMT,
    CSS_STATES,
    D_DQ,
    D_NONE,
    D_SPACE,
    D_SQ,
    JS,
    RCDATA,
    TAG,
    TEXT,
    U_NONE,
    U_PRE,
    U_QUERY,
    U_UNKNOWN,
    URL,
    Ctx,
)
from .errors import TemplateExecError, TemplateSyntaxError
from .gofmt import sprint
from .values import MISSING

_URL_ATTRS = frozenset({
    "action", "archive", "background", "cite", "classid", "codebase", "data", "formaction",
    "href", "icon", "longdesc", "manifest", "poster", "profile", "src", "usemap", "xmlns",
})
_SPACE = " \t\n\f\r"
# Go's eatTagName: letters and digits, and "x-y" or "x:y" (so <style-x> is not <style>)
_TAG_NAME = re.compile(r"</?([a-zA-Z](?:[a-zA-Z0-9]|[:-][a-zA-Z0-9])*)")
# a '<' that starts no tag is written as &lt; in text and RCDATA, except in <!DOCTYPE
_STRAY_LT = re.compile(r"<(?!!(?i:doctype))")


def _attr_type(name: str) -> int:
    name = name.lower()
    if name.startswith("data-"):
        name = name[5:]
    elif ":" in name:
        prefix, _, local = name.partition(":")
        if prefix == "xmlns":
            return A_URL
        name = local
    if name in _URL_ATTRS:
        return A_URL
    if name == "style":
        return A_CSS
    if name == "srcset":
        return A_SRCSET
    if name.startswith("on"):
        return A_JS
    if "src" in name or "uri" in name or "url" in name:
        return A_URL
    return A_PLAIN


def transition(ctx: Ctx, s: str) -> tuple[Ctx, str]:
    """The context after text `s`, and the text to emit (comments removed)."""
    start = ctx
    edits: list[bool] = []
    ctx, text = _scan(ctx, s, edits)
    if start.state == CSS_BLOCK_CMT and start.delim == D_NONE and \
            css.index_tag_end(s.encode(), start.element.encode()) == 0 and any(edits):
        # Go's escapeText writes a space for the comment that </style> ends, and keeps it
        # only when it rewrites the node elsewhere (otherwise the node stays as written)
        text = " " + text
    return ctx, text


# The end tags that close an element whose content is not markup (script, style, RCDATA).
_END_TAGS = {"script": re.compile("</script", re.I), "style": re.compile("</style", re.I),
             "textarea": re.compile("</textarea", re.I), "title": re.compile("</title", re.I)}
_ANY_END_TAG = re.compile("</")


def _end_tag(element: str) -> re.Pattern[str]:
    return _END_TAGS.get(element, _ANY_END_TAG)


def _scan(ctx: Ctx, s: str, edits: list[bool]) -> tuple[Ctx, str]:
    out: list[str] = []
    i = 0
    while i < len(s):
        st = ctx.state
        if st in (TEXT, RCDATA):
            if st == RCDATA:
                m = _end_tag(ctx.element).search(s, i)
                chunk = s[i:] if not m else s[i : m.start()]
                if "<" in chunk:
                    chunk = _STRAY_LT.sub("&lt;", chunk)
                    edits.append(True)
                out.append(chunk)
                if not m:
                    return ctx, "".join(out)
                i = m.start()
                ctx = Ctx(TEXT)
                continue
            j = s.find("<", i)
            if j < 0:
                out.append(s[i:])
                return ctx, "".join(out)
            out.append(s[i:j])
            if s.startswith("<!--", j):
                edits.append(True)
                ctx = Ctx(CMT)
                i = j + 4
                continue
            m = _TAG_NAME.match(s, j)
            if m:
                closing = s[j + 1] == "/"
                elem = m.group(1).lower()
                out.append(s[j : m.end()])
                i = m.end()
                ctx = Ctx(TAG, element="" if closing else elem)
                continue
            if _STRAY_LT.match(s, j):
                out.append("&lt;")
                edits.append(True)
            else:
                out.append("<")
            i = j + 1
        elif st == CMT:
            j = s.find("-->", i)
            if j < 0:
                return ctx, "".join(out)
            i = j + 3
            ctx = Ctx(TEXT)
        elif st == TAG:
            j = i
            while j < len(s) and s[j] in _SPACE:
                j += 1
            out.append(s[i:j])
            i = j
            if i >= len(s):
                break
            if s[i] == ">":
                out.append(">")
                i += 1
                el = ctx.element
                if el in ("script", "style"):
                    ctx = Ctx(JS if el == "script" else CSS, element=el)
                elif el in ("textarea", "title"):
                    ctx = Ctx(RCDATA, element=el)
                else:
                    ctx = Ctx(TEXT)
                continue
            j = _attr_name_end(s, i)
            if j == i:
                raise TemplateSyntaxError(
                    f"html/template: expected space, attr name, or end of tag, but got "
                    f"{s[i:]!r}")
            out.append(s[i:j])
            ctx = replace(ctx, state=AFTER_NAME if j < len(s) else ATTR_NAME,
                          attr=_attr_type(s[i:j]))
            i = j
        elif st == ATTR_NAME:
            j = _attr_name_end(s, i)
            out.append(s[i:j])
            i = j
            if i < len(s):
                ctx = replace(ctx, state=AFTER_NAME)
        elif st == AFTER_NAME:
            j = i
            while j < len(s) and s[j] in _SPACE:
                j += 1
            out.append(s[i:j])
            i = j
            if i >= len(s):
                break
            if s[i] == "=":
                out.append("=")
                i += 1
                ctx = replace(ctx, state=BEFORE_VALUE)
            else:
                ctx = replace(ctx, state=TAG, attr=A_PLAIN)
        elif st == BEFORE_VALUE:
            j = i
            while j < len(s) and s[j] in _SPACE:
                j += 1
            out.append(s[i:j])
            i = j
            if i >= len(s):
                break
            delim = D_SPACE
            if s[i] in "\"'":
                delim = D_DQ if s[i] == '"' else D_SQ
                out.append(s[i])
                i += 1
            ctx = _value_ctx(ctx, delim)
        elif st in CSS_STATES:
            if ctx.delim == D_NONE:  # <style> content, in bytes as Go scans it
                rest = s[i:].encode()
                ctx, text, used, rewritten = css.element_text(ctx, rest, i == 0)
                edits.append(rewritten)
                out.append(text.decode())
                i += len(rest[:used].decode())
            else:
                ctx, used = css.attr_text(ctx, s[i:])
                out.append(s[i : i + used])
                i += used
        elif st in (ATTR, URL, JS):
            if st == JS and ctx.delim == D_NONE:
                # element content: skip to the end tag
                m = _end_tag(ctx.element).search(s, i)
                if not m:
                    out.append(s[i:])
                    return ctx, "".join(out)
                out.append(s[i : m.start()])
                i = m.start()
                ctx = Ctx(TEXT)
                continue
            if ctx.delim == D_SPACE:
                j = i
                while j < len(s) and s[j] not in _SPACE + ">":
                    j += 1
                _check_unquoted(s[i:j])
                end, skip = j, 0
            else:
                q = '"' if ctx.delim == D_DQ else "'"
                j = s.find(q, i)
                end, skip = (len(s), 0) if j < 0 else (j, 1)
            value = s[i:end]
            out.append(value)
            if st == URL:
                if "&" in value:  # read as the browser reads it: &#63; is a '?'
                    value = html.unescape(value)
                if "#" in value or "?" in value:
                    ctx = replace(ctx, url=U_QUERY)
                elif value.strip(_SPACE) and ctx.url == U_NONE:
                    ctx = replace(ctx, url=U_PRE)
            if end >= len(s):
                break
            out.append(s[end : end + skip])
            i = end + skip
            ctx = Ctx(TAG, element=ctx.element)
        else:  # pragma: no cover
            raise TemplateSyntaxError("unknown HTML context")
    return ctx, "".join(out)


def _attr_name_end(s: str, i: int) -> int:
    """Where the attribute name starting at i ends; a quote or '<' in it is an error."""
    j = i
    while j < len(s) and s[j] not in _SPACE + "=>":
        if s[j] in "'\"<":
            raise TemplateSyntaxError(f"{s[j]!r} in attribute name: {s[i:j + 1]!r}")
        j += 1
    return j


def _check_unquoted(value: str) -> None:
    # HTML parsers disagree on where such a value ends: Go refuses them
    bad = _UNQUOTED_BAD.search(value)
    if bad:
        raise TemplateSyntaxError(
            f"html/template: {bad.group()!r} in unquoted attr: {value!r}")


_UNQUOTED_BAD = re.compile("[\"'<=`]")


def _value_ctx(ctx: Ctx, delim: int) -> Ctx:
    state = {A_URL: URL, A_JS: JS, A_CSS: CSS, A_SRCSET: ATTR}.get(ctx.attr, ATTR)
    return replace(ctx, state=state, delim=delim, url=U_NONE)


# -- escapers -------------------------------------------------------------------------------

def _stringify(args: list[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint([a for a in args if a is not None and a is not MISSING])


_HTML_TABLE = str.maketrans(
    {"\0": "\ufffd", '"': "&#34;", "'": "&#39;", "&": "&amp;", "+": "&#43;", "<": "&lt;",
     ">": "&gt;"}
)
_NOSPACE_TABLE = str.maketrans(
    {"\0": "&#xfffd;", "\t": "&#9;", "\n": "&#10;", "\v": "&#11;", "\f": "&#12;",
     "\r": "&#13;", " ": "&#32;", '"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;",
     "<": "&lt;", "=": "&#61;", ">": "&gt;", "`": "&#96;",
     # noncharacters, which Go writes as hex references in unquoted values
     **{chr(c): f"&#x{c:x};" for c in (*range(0xFDD0, 0xFDF0), *range(0xFFF0, 0x10000))}}
)
_URL_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
_URL_RESERVED = frozenset(b"!#$&*+,/:;=?@[]")
_HEX_BYTES = frozenset(b"0123456789abcdefABCDEF")

# what the normalizer leaves alone: unreserved and reserved characters, and escapes (a '%'
# not followed by two hex digits is encoded)
_URL_CLEAN_NORM = re.compile(r"[A-Za-z0-9\-._~!#$&*+,/:;=?@\[\]%]*")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _url_process(s: str, norm: bool) -> str:
    if norm and _URL_CLEAN_NORM.fullmatch(s) and ("%" not in s or not _LONE_PERCENT.search(s)):
        return s  # nothing to encode (the common case: an http(s) URL we built)
    out: list[str] = []
    data = s.encode()
    n = len(data)
    for i, b in enumerate(data):
        if b in _URL_KEEP or (norm and b in _URL_RESERVED) or (
                norm and b == 0x25 and i + 2 < n and data[i + 1] in _HEX_BYTES
                and data[i + 2] in _HEX_BYTES):
            out.append(chr(b))
        else:
            out.append(f"%{b:02x}")
    return "".join(out)


def _html_escaper(args: list[Any]) -> str:
    return _stringify(args).translate(_HTML_TABLE)


def _nospace_escaper(args: list[Any]) -> str:
    s = _stringify(args)
    return s.translate(_NOSPACE_TABLE) if s else "ZgotmplZ"


def _url_filter(args: list[Any]) -> str:
    s = _stringify(args)
    i = s.find(":")
    if i >= 0 and "/" not in s[:i] and s[:i].lower() not in ("http", "https", "mailto"):
        return "#ZgotmplZ"
    return s


def _url_normalizer(args: list[Any]) -> str:
    return _url_process(_stringify(args), norm=True)


def _url_escaper(args: list[Any]) -> str:
    return _url_process(_stringify(args), norm=False)


def _eval_args(args: list[Any]) -> str:
    return eval_args(args)


def _html_one(v: Any) -> str:
    return (v if type(v) is str else _stringify([v])).translate(_HTML_TABLE)


# The escapers appended to pipelines take the previous command's value alone; these
# one-argument forms let compiled templates skip building an argument list.
ONE_ARG_ESCAPERS: dict[str, Callable[[Any], str]] = {
    "_html_template_htmlescaper": _html_one,
    "_html_template_attrescaper": _html_one,
    "_html_template_rcdataescaper": _html_one,
    **css.ONE_ARG_ESCAPERS,
}

ESCAPERS: dict[str, GoFunc] = {
    "_html_template_htmlescaper": _html_escaper,
    "_html_template_attrescaper": _html_escaper,
    "_html_template_rcdataescaper": _html_escaper,
    "_html_template_nospaceescaper": _nospace_escaper,
    "_html_template_urlfilter": _url_filter,
    "_html_template_urlnormalizer": _url_normalizer,
    "_html_template_urlescaper": _url_escaper,
    "_eval_args_": _eval_args,
    **css.ESCAPERS,
}
_EQUIV = {
    "_html_template_attrescaper": "html",
    "_html_template_htmlescaper": "html",
    "_html_template_rcdataescaper": "html",
    "_html_template_urlescaper": "urlquery",
    "_html_template_urlnormalizer": "urlquery",
}
_PREDEFINED = ("html", "urlquery")
_REDUNDANT_AFTER: dict[str, frozenset[str]] = {
    **css.REDUNDANT_AFTER,
    "_html_template_urlescaper": frozenset({"_html_template_urlnormalizer"}),
}
_ = html_escape_string


# -- the tree walk --------------------------------------------------------------------------

class _Escaper:
    def __init__(self, originals: dict[str, n.ListNode]) -> None:
        self.originals = originals
        self.out: dict[str, n.ListNode] = {}
        self.done: dict[tuple[str, Ctx], tuple[str, Ctx]] = {}

    def template(self, name: str, ctx: Ctx) -> tuple[str, Ctx]:
        key = (name, ctx)
        if key in self.done:
            return self.done[key]
        if name not in self.originals:
            raise TemplateExecError(f'html/template: no such template "{name}"')
        new_name = name if ctx == Ctx() else f"{name}$htmltemplate_{ctx.state}_{ctx.delim}_" \
            f"{ctx.url}_{ctx.element}_{ctx.attr}"
        self.done[key] = (new_name, ctx)  # assume a recursive call ends where it starts
        tree = copy.deepcopy(self.originals[name])
        end = self.walk_list(tree, ctx)
        self.done[key] = (new_name, end)
        self.out[new_name] = tree
        return new_name, end

    def walk_list(self, lst: n.ListNode, ctx: Ctx) -> Ctx:
        for i, node in enumerate(lst.nodes):
            if isinstance(node, n.Text):
                ctx, text = transition(ctx, node.text)
                lst.nodes[i] = n.Text(text, node.pos)
            elif isinstance(node, n.Action):
                ctx = self.action(node, ctx)
            elif isinstance(node, n.Branch):
                ctx = self.branch(node, ctx)
            elif isinstance(node, n.TemplateCall):
                node.name, ctx = self.template(node.name, ctx)
        return ctx

    def branch(self, node: n.Branch, ctx: Ctx) -> Ctx:
        body_end = self.walk_list(node.body, ctx)
        if node.kind == "range":
            again = self.walk_list(copy.deepcopy(node.body), body_end)
            body_end = _join(body_end, again)
        else_end = self.walk_list(node.else_body, ctx) if node.else_body is not None else ctx
        return _join(body_end, else_end)

    def action(self, node: n.Action, ctx: Ctx) -> Ctx:
        pipe = node.pipe
        if pipe.decl:
            return ctx
        if ctx.state == CMT:
            node.pipe = n.Pipe([], False, [n.Command([n.String("", '""')])])
            return ctx
        if ctx.state == BEFORE_VALUE:  # an unquoted attribute value
            ctx = _nudge(ctx)
        if ctx.state in (TAG, ATTR_NAME, AFTER_NAME):
            raise TemplateSyntaxError("html/template: actions inside a tag are not supported")
        if ctx.state == JS:
            raise TemplateSyntaxError(
                "html/template: actions in JavaScript or CSS contexts are not supported"
            )
        need: list[str] = []
        if ctx.state in CSS_STATES:
            need += css.action_escapers(ctx)
        elif ctx.state == TEXT:
            need.append("_html_template_htmlescaper")
        elif ctx.state == RCDATA:
            need.append("_html_template_rcdataescaper")
        elif ctx.state == URL:
            if ctx.url == U_NONE:
                need += ["_html_template_urlfilter", "_html_template_urlnormalizer"]
            elif ctx.url == U_PRE:
                need.append("_html_template_urlnormalizer")
            elif ctx.url == U_QUERY:
                need.append("_html_template_urlescaper")
            else:
                raise TemplateSyntaxError("html/template: action in an ambiguous URL context")
        if ctx.delim == D_SPACE:
            need.append("_html_template_nospaceescaper")
        elif ctx.delim != D_NONE:
            need.append("_html_template_attrescaper")
        self.ensure(pipe, need)
        return ctx

    @staticmethod
    def ensure(pipe: n.Pipe, need: list[str]) -> None:
        for pos, cmd in enumerate(pipe.cmds):
            first = cmd.args[0]
            if isinstance(first, n.Identifier) and first.name in _PREDEFINED and \
                    pos < len(pipe.cmds) - 1:
                raise TemplateSyntaxError(
                    f"html/template: predefined escaper {first.name!r} disallowed in template"
                )
        cmds = list(pipe.cmds)
        last = cmds[-1].args[0]
        if isinstance(last, n.Identifier) and last.name in _PREDEFINED:
            esc = last.name
            if len(cmds) == 1 and len(cmds[0].args) > 1:
                cmds[0] = n.Command([n.Identifier("_eval_args_"), *cmds[0].args[1:]])
                cmds.append(n.Command([n.Identifier(esc)]))
            dup = False
            for k, name in enumerate(need):
                if _EQUIV.get(name) == esc:
                    need[k] = esc
                    dup = True
            if dup:
                cmds.pop()
        present = {c.args[0].name for c in cmds if isinstance(c.args[0], n.Identifier)}
        for name in need:
            if name in present:
                continue
            tail = cmds[-1].args[0] if cmds else None
            if isinstance(tail, n.Identifier) and name in _REDUNDANT_AFTER.get(tail.name, ()):
                continue  # Go's appendCmd: e.g. attrescaper after cssescaper changes nothing
            cmds.append(n.Command([n.Identifier(name)]))
        pipe.cmds = cmds


def _nudge(ctx: Ctx) -> Ctx:
    """Go's nudge: the context an action at ctx writes into, where the template has not yet
    said (`<p title={{.}}`: an unquoted value, whose kind of attribute Go forgets)."""
    if ctx.state == BEFORE_VALUE:
        return replace(_value_ctx(ctx, D_SPACE), attr=A_PLAIN)
    if ctx.state == TAG:
        return replace(ctx, state=ATTR_NAME)
    if ctx.state == AFTER_NAME:
        return replace(ctx, state=ATTR_NAME, attr=A_PLAIN)
    return ctx


def _join(a: Ctx, b: Ctx) -> Ctx:
    if a == b:
        return a
    if replace(a, url=U_NONE) == replace(b, url=U_NONE):
        return replace(a, url=U_UNKNOWN)
    # a branch that wrote an unquoted value joins one that has not started it
    na, nb = _nudge(a), _nudge(b)
    if na != a or nb != b:
        return _join(na, nb)
    raise TemplateSyntaxError("html/template: {{if}} branches end in different contexts")


def escape_trees(trees: dict[str, n.ListNode], name: str) -> tuple[dict[str, n.ListNode],
                                                                   dict[str, GoFunc]]:
    esc = _Escaper(trees)
    _, end = esc.template(name, Ctx())
    if end.state != TEXT:
        raise TemplateSyntaxError(f"html/template: {name!r} ends in a non-text context")
    for other in trees:
        if other != name and (other, Ctx()) not in esc.done:
            esc.template(other, Ctx())
    return esc.out, dict(ESCAPERS)
