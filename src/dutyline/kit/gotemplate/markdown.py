"""`mdToHtml`: a member's Markdown as safe HTML, in time linear in its length and inside the
render's budget.

markdown-it-py's inline parser (CommonMark's, linear by design) with only the rules the
function documents: `**strong**`, `*em*`/`_em_`, `` `code` ``, `[text](http(s) URL)`,
backslash escapes, line breaks as `<br>`. Raw HTML is never passed through (the `html`
option is off: `<script>` is written `&lt;script&gt;`), and a link whose URL is not http or
https stays text. Block syntax (headings, lists, quotes) is not interpreted, so a message
keeps its lines as written.

A rule placed before every other one counts the positions the parser visits (its work, the
nested looks of link labels included) and looks at the render's clock every `_TICK_EVERY`,
so a long argument stops at the time budget instead of holding the interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from . import budget

_TICK_EVERY = 256
_LINK_SCHEMES = ("http://", "https://")


class _Ticker:
    __slots__ = ("left", "meter", "ticks")

    def __init__(self, meter: budget.Meter) -> None:
        self.meter = meter
        self.left = _TICK_EVERY
        self.ticks = 0


def _budget_rule(state: StateInline, silent: bool) -> bool:
    ticker: _Ticker = state.env["budget"]
    ticker.left -= 1
    if ticker.left <= 0:
        ticker.ticks += _TICK_EVERY
        ticker.left = _TICK_EVERY
        ticker.meter.check_time("mdToHtml")
    return False  # never consumes: the next rule runs


def _line_break(renderer: Any, tokens: Sequence[Token], idx: int, options: OptionsDict,
                env: EnvType) -> str:
    return "<br>"


def _build() -> MarkdownIt:
    md = MarkdownIt("zero", {"html": False, "linkify": False, "typographer": False,
                             "breaks": True})
    md.enable(["emphasis", "backticks", "link", "newline", "escape"])
    md.inline.ruler.before("text", "budget", _budget_rule)
    md.validateLink = lambda url: url.lower().startswith(_LINK_SCHEMES)  # type: ignore[method-assign]
    md.add_render_rule("softbreak", _line_break)
    md.add_render_rule("hardbreak", _line_break)
    return md


_MD = _build()


def md_to_html(text: str) -> str:
    """The HTML of `text`; TemplateLimitError past the value bound or the render's clock."""
    budget.check_size(len(text), "mdToHtml")
    env: dict[str, Any] = {"budget": _Ticker(budget.meter())}
    tokens = _MD.parseInline(text, env)
    budget.check_time("mdToHtml")
    html: str = _MD.renderer.render(tokens, _MD.options, env)
    return html.rstrip("\n")


def parse_work(text: str) -> int:
    """The positions the parser visits for `text`, to a multiple of `_TICK_EVERY` (tests
    check that it grows linearly)."""
    ticker = _Ticker(budget.meter())
    _MD.parseInline(text, {"budget": ticker})
    return ticker.ticks
