"""html/template's CSS contexts: a <style> element and a style="..." attribute value.

A port of Go's html/template/css.go and of the CSS parts of transition.go and escape.go:

- the CSS state machine: plain CSS, "..." and '...' strings, url(...) (quoted or not),
  /* block */ and // line comments. Strings and url(...) are treated as URLs, so the part
  of the URL written so far (before or after a '?' or '#') decides the escaper;
- the escapers an action gets there: `cssvaluefilter` in plain CSS (a value that could end
  a declaration or run script becomes `ZgotmplZ`), `cssescaper` in strings, the URL filter
  and normalizer in url(...), and nothing at all in comments;
- the text Go emits: comments inside <style> are dropped (a block comment becomes one
  space per scanned chunk), comments in a style attribute are kept.

Go scans bytes; the transitions here do too (the offsets they return are byte offsets,
including Go's quirk of returning the length of a decoded CSS escape as bytes consumed).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .contexts import (
    CSS,
    CSS_BLOCK_CMT,
    CSS_COMMENTS,
    CSS_DQ_STR,
    CSS_DQ_URL,
    CSS_LINE_CMT,
    CSS_SQ_STR,
    CSS_SQ_URL,
    CSS_URL,
    D_DQ,
    D_SPACE,
    D_SQ,
    TAG,
    U_NONE,
    U_PRE,
    U_QUERY,
    U_UNKNOWN,
    Ctx,
)
from .errors import TemplateSyntaxError
from .gofmt import sprint
from .values import MISSING

FILTER_FAILSAFE = "ZgotmplZ"

# -- decoding CSS escapes ---------------------------------------------------------------------

_HEX = frozenset("0123456789abcdefABCDEF")


def _skip_css_space(s: str, j: int) -> int:
    """Past one CSS whitespace (`wc`) at j, CRLF counting as one."""
    if j >= len(s):
        return j
    c = s[j]
    if c in "\t\n\f ":
        return j + 1
    if c == "\r":
        return j + 2 if s[j + 1 : j + 2] == "\n" else j + 1
    return j


def decode_css(s: str) -> str:
    """CSS3 escapes decoded: `\\72 ed` is "red", `\\"` is '"'; a lone trailing backslash
    is dropped, as Go drops it."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        j = s.find("\\", i)
        if j < 0:
            out.append(s[i:])
            break
        out.append(s[i:j])
        i = j
        if n - i < 2:
            break
        c = s[i + 1]
        if c in _HEX:
            j = i + 2
            while j < n and j < i + 7 and s[j] in _HEX:
                j += 1
            r = int(s[i + 1 : j], 16)
            if r > 0x10FFFF:
                r, j = r // 16, j - 1
            # utf8.EncodeRune writes U+FFFD for a surrogate
            out.append("\ufffd" if 0xD800 <= r <= 0xDFFF else chr(r))
            i = _skip_css_space(s, j)
        else:
            out.append(c)
            i += 2
    return "".join(out)


def _decode_css_bytes(b: bytes) -> bytes:
    if b"\\" not in b:
        return b
    return decode_css(b.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


# -- escapers -------------------------------------------------------------------------------

def _stringify(args: list[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint([a for a in args if a is not None and a is not MISSING])


_CSS_REPLACEMENTS = {
    "\0": "\\0", "\t": "\\9", "\n": "\\a", "\f": "\\c", "\r": "\\d",
    # HTML specials as hex, so the output needs no further encoding in an attribute
    '"': "\\22", "&": "\\26", "'": "\\27", "(": "\\28", ")": "\\29", "+": "\\2b",
    "/": "\\2f", ":": "\\3a", ";": "\\3b", "<": "\\3c", ">": "\\3e", "\\": "\\\\",
    "{": "\\7b", "}": "\\7d",
}
_CSS_SPECIAL = re.compile("[" + re.escape("".join(_CSS_REPLACEMENTS)) + "]")
_CSS_SPACE = frozenset("\t\n\f\r ")


def css_escape(s: str) -> str:
    """Go's cssEscaper on one string: specials as `\\hex` escapes, followed by a space where
    the next character (or the end) would otherwise run into the escape."""
    m = _CSS_SPECIAL.search(s)
    if m is None:
        return s
    out: list[str] = []
    written, n = 0, len(s)
    while m is not None:
        i = m.start()
        repl = _CSS_REPLACEMENTS[s[i]]
        out.append(s[written:i])
        out.append(repl)
        written = i + 1
        if repl != "\\\\" and (written == n or s[written] in _HEX or s[written] in _CSS_SPACE):
            out.append(" ")
        m = _CSS_SPECIAL.search(s, written)
    out.append(s[written:])
    return "".join(out)


# anything that could close a declaration, a string or a block, or open a comment
_CSS_UNSAFE = re.compile(r"""[\0"'()/;@\[\\\]`{}<>]|--""")
_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9_]+")


def css_value_filter(s: str) -> str:
    """Go's cssValueFilter: innocuous values (10px, 25%, #C80000, .bar, inherit, blue) pass,
    decoded; anything that could change token boundaries or run script is ZgotmplZ."""
    b = decode_css(s)
    if _CSS_UNSAFE.search(b):
        return FILTER_FAILSAFE
    # the ASCII name characters except '-', so "expres-sion" is caught too
    ident = _NOT_ID_CHAR.sub("", b).lower()
    if "expression" in ident or "mozbinding" in ident:
        return FILTER_FAILSAFE
    return b


def _str_of(v: Any) -> str:
    return v if type(v) is str else _stringify([v])


def _css_escaper(args: list[Any]) -> str:
    return css_escape(_stringify(args))


def _css_value_filter(args: list[Any]) -> str:
    return css_value_filter(_stringify(args))


def _comment_escaper(args: list[Any]) -> str:
    return ""


ESCAPERS: dict[str, Callable[[list[Any]], str]] = {
    "_html_template_cssescaper": _css_escaper,
    "_html_template_cssvaluefilter": _css_value_filter,
    "_html_template_commentescaper": _comment_escaper,
}
ONE_ARG_ESCAPERS: dict[str, Callable[[Any], str]] = {
    "_html_template_cssescaper": lambda v: css_escape(_str_of(v)),
    "_html_template_cssvaluefilter": lambda v: css_value_filter(_str_of(v)),
    "_html_template_commentescaper": lambda v: "",
}
# escaper b after escaper a changes nothing (Go's redundantFuncs)
REDUNDANT_AFTER = {
    "_html_template_cssescaper": frozenset({"_html_template_attrescaper"}),
    "_html_template_commentescaper": frozenset({"_html_template_attrescaper",
                                               "_html_template_htmlescaper"}),
}


def action_escapers(ctx: Ctx) -> list[str]:
    """The escapers an action in CSS context ctx gets, before the attribute's own."""
    st = ctx.state
    if st == CSS:
        return ["_html_template_cssvaluefilter"]
    if st in CSS_COMMENTS:
        return ["_html_template_commentescaper"]
    if ctx.url == U_UNKNOWN:
        raise TemplateSyntaxError("html/template: action appears in an ambiguous context "
                                  "within a URL")
    if ctx.url == U_QUERY:
        return ["_html_template_urlescaper"]
    inner = "_html_template_cssescaper" if st in (CSS_DQ_STR, CSS_SQ_STR) \
        else "_html_template_urlnormalizer"
    return ["_html_template_urlfilter", inner] if ctx.url == U_NONE else [inner]


# -- the state machine ------------------------------------------------------------------------

_WS = b"\t\n\f\r "
_CSS_TOKEN = re.compile(rb"""[("'/]""")
_STR_END = {
    CSS_DQ_STR: re.compile(rb'[\\"]'), CSS_DQ_URL: re.compile(rb'[\\"]'),
    CSS_SQ_STR: re.compile(rb"[\\']"), CSS_SQ_URL: re.compile(rb"[\\']"),
    # an unquoted url(...) ends at whitespace or ')'
    CSS_URL: re.compile(rb"[\\\t\n\f\r )]"),
}
_LINE_END = re.compile(rb"[\n\f\r]")


def _is_css_nmchar(r: str) -> bool:
    o = ord(r)
    return ("a" <= r <= "z" or "A" <= r <= "Z" or "0" <= r <= "9" or r in "-_"
            or 0x80 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or 0x10000 <= o <= 0x10FFFF)


def _ends_with_url_keyword(p: bytes) -> bool:
    i = len(p) - 3
    if i < 0:
        return False
    if i != 0 and _is_css_nmchar(p[:i].decode("utf-8", "replace")[-1]):
        return False  # a longer identifier, such as "myurl"
    return p[i:].lower() == b"url"


def _t_url(ctx: Ctx, s: bytes) -> Ctx:
    if b"#" in s or b"?" in s:
        return replace(ctx, url=U_QUERY)
    if s.lstrip(_WS) and ctx.url == U_NONE:
        return replace(ctx, url=U_PRE)
    return ctx


def _t_css(ctx: Ctx, s: bytes) -> tuple[Ctx, int]:
    k = 0
    while True:
        m = _CSS_TOKEN.search(s, k)
        if m is None:
            return ctx, len(s)
        i = m.start()
        c = s[i : i + 1]
        if c == b"(":
            if _ends_with_url_keyword(s[:i].rstrip(_WS)):
                j = len(s) - len(s[i + 1 :].lstrip(_WS))
                q = s[j : j + 1]
                if q == b'"':
                    return replace(ctx, state=CSS_DQ_URL), j + 1
                if q == b"'":
                    return replace(ctx, state=CSS_SQ_URL), j + 1
                return replace(ctx, state=CSS_URL), j
        elif c == b"/":
            nxt = s[i + 1 : i + 2]
            if nxt == b"/":
                return replace(ctx, state=CSS_LINE_CMT), i + 2
            if nxt == b"*":
                return replace(ctx, state=CSS_BLOCK_CMT), i + 2
        elif c == b'"':
            return replace(ctx, state=CSS_DQ_STR), i + 1
        else:
            return replace(ctx, state=CSS_SQ_STR), i + 1
        k = i + 1


def _t_css_str(ctx: Ctx, s: bytes) -> tuple[Ctx, int]:
    end = _STR_END[ctx.state]
    k = 0
    while True:
        m = end.search(s, k)
        if m is None:
            decoded = _decode_css_bytes(s[k:])
            return _t_url(ctx, decoded), k + len(decoded)
        i = m.start()
        if s[i] != 0x5C:  # the closing quote or parenthesis
            return replace(ctx, state=CSS), i + 1
        i += 1
        if i == len(s):
            raise TemplateSyntaxError(
                f"html/template: unfinished escape sequence in CSS string: {_quote(s)}")
        ctx = _t_url(ctx, _decode_css_bytes(s[: i + 1]))
        k = i + 1


def transition(ctx: Ctx, s: bytes) -> tuple[Ctx, int]:
    """One step of the CSS state machine over s: the new context, bytes consumed."""
    st = ctx.state
    if st == CSS:
        return _t_css(ctx, s)
    if st == CSS_BLOCK_CMT:
        i = s.find(b"*/")
        return (ctx, len(s)) if i < 0 else (replace(ctx, state=CSS), i + 2)
    if st == CSS_LINE_CMT:
        m = _LINE_END.search(s)
        # the newline itself is CSS again
        return (ctx, len(s)) if m is None else (replace(ctx, state=CSS), m.start())
    return _t_css_str(ctx, s)


def _quote(b: bytes) -> str:
    return repr(b.decode("utf-8", "replace"))


_TAG_END_SEPARATORS = b"> \t\n\f/"


def index_tag_end(s: bytes, tag: bytes) -> int:
    """Where `</tag` followed by a separator starts in s, case-insensitively, or -1."""
    res = 0
    while s:
        i = s.find(b"</")
        if i < 0:
            return -1
        s = s[i + 2 :]
        if len(tag) <= len(s) and s[: len(tag)].lower() == tag:
            s = s[len(tag) :]
            if s and s[0] in _TAG_END_SEPARATORS:
                return res + i
            res += len(tag)
        res += i + 2
    return -1


def element_text(ctx: Ctx, s: bytes, at_node_start: bool) -> tuple[Ctx, bytes, int, bool]:
    """<style> content from the start of s, up to its end tag or the end of s: the context
    there, the text to emit (comments dropped, as Go's escapeText drops them), the number of
    bytes consumed, and whether Go counts this as rewriting its text node.

    Go keeps a text node's original text unless it rewrote something at an offset past 0,
    so the space a block comment leaves when a node starts right at </style> is kept only
    if the node is rewritten elsewhere: that space is left to the caller (see
    htmlescape.transition) and not part of the text returned here."""
    tag = ctx.element.encode()
    out = bytearray()
    written = i = 0
    rewritten = False
    while i != len(s):
        end = index_tag_end(s[i:], tag)
        if end == 0:
            c1, nread = Ctx(), 0  # </style>: the HTML walk takes over after this step
        else:
            c1, nread = transition(ctx, s[i:] if end < 0 else s[i : i + end])
        i1 = i + nread
        moved = not at_node_start or i1 > 0
        if ctx.state in CSS_COMMENTS:
            if ctx.state == CSS_BLOCK_CMT and moved:
                out += b" "
            written = i1
            rewritten = rewritten or moved
        if c1.state != ctx.state and c1.state in CSS_COMMENTS:
            out += s[written : i1 - 2]  # up to the "/*" or "//"
            written = i1
            rewritten = True
        ctx, i = c1, i1
        if end == 0:
            break
    if ctx.state not in CSS_COMMENTS:
        out += s[written:i]
    return ctx, bytes(out), i, rewritten


_DELIM_END = {D_DQ: re.compile('"'), D_SQ: re.compile("'"),
              D_SPACE: re.compile("[ \t\n\f\r>]")}
_UNQUOTED_ERROR = re.compile("[\"'<=`]")


def attr_text(ctx: Ctx, s: str) -> tuple[Ctx, int]:
    """A style attribute's value from the start of s: the context after it and the number
    of characters consumed (emitted unchanged). The CSS rules run over the value with its
    HTML character references decoded, as a browser reads it."""
    m = _DELIM_END[ctx.delim].search(s)
    i = len(s) if m is None else m.start()
    if ctx.delim == D_SPACE:
        bad = _UNQUOTED_ERROR.search(s, 0, i)
        if bad:
            raise TemplateSyntaxError(
                f"html/template: {bad.group()!r} in unquoted attr: {s[:i]!r}")
    if m is None:
        u = html.unescape(s).encode()
        while u:
            ctx, k = transition(ctx, u)
            u = u[k:]
        return ctx, len(s)
    # leaving the attribute drops everything but the element
    return Ctx(TAG, element=ctx.element), i + (0 if ctx.delim == D_SPACE else 1)

