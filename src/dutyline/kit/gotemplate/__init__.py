"""A Go text/template- and html/template-compatible renderer, sandboxed.

    tmpl = Template.parse("hi {{.Name}}", name="t", funcs=extra, html=False)
    tmpl.render({"Name": "x"}, limits=Limits())

Self-contained: the lexer, the parser and the executor follow Go's text/template; `html=True`
adds html/template's contextual escaping (HTML text and attribute values, URL attributes,
CSS in style attributes and <style> elements).
Checked byte for byte against Go itself by tests/kit/gotemplate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import nodes
from .builtins import BUILTINS, GoFunc
from .compiled import compile_trees
from .errors import TemplateError, TemplateExecError, TemplateLimitError, TemplateSyntaxError
from .executor import Limits, execute
from .parser import parse
from .values import MISSING

__all__ = [
    "MISSING",
    "GoFunc",
    "Limits",
    "Template",
    "TemplateError",
    "TemplateExecError",
    "TemplateLimitError",
    "TemplateSyntaxError",
]


_DEFAULT_LIMITS = Limits()


class Template:
    """A parsed template set (the main template plus its `define`s), ready to render."""

    __slots__ = ("_bound", "compiled", "funcs", "html", "name", "trees")

    def __init__(self, name: str, trees: dict[str, nodes.ListNode], funcs: dict[str, GoFunc],
                 html: bool) -> None:
        self.name = name
        self.trees = trees
        self.funcs = funcs
        self.html = html
        self.compiled = compile_trees(trees)
        # the last rebinding, (given, merged), as one attribute: renders may run in threads
        self._bound: tuple[Mapping[str, GoFunc] | None, dict[str, GoFunc]] = (None, funcs)

    @classmethod
    def parse(cls, src: str, *, name: str = "t", funcs: Mapping[str, GoFunc] | None = None,
              html: bool = False) -> Template:
        all_funcs: dict[str, GoFunc] = dict(BUILTINS)
        if funcs:
            all_funcs.update(funcs)
        try:
            trees = parse(src, name, all_funcs)
            if html:
                from .htmlescape import escape_trees

                trees, extra = escape_trees(trees, name)
                all_funcs.update(extra)
            return cls(name, trees, all_funcs, html)
        except RecursionError:
            # the parser and the compiler recurse once per nested action: thousands of
            # `{{if}}` inside each other are refused rather than crash the request
            raise TemplateSyntaxError(f"template: {name}: nesting too deep") from None

    def render(self, data: Any, limits: Limits | None = None,
               funcs: Mapping[str, GoFunc] | None = None) -> str:
        """Run the template. `funcs` rebinds functions known at parse time (e.g. `date`
        bound to a time zone); names the template was not parsed with are never reached."""
        bound = self._bound
        if not funcs:
            all_funcs = self.funcs
        elif funcs is bound[0]:
            all_funcs = bound[1]
        else:
            all_funcs = {**self.funcs, **funcs}
            self._bound = (funcs, all_funcs)
        return execute(self.trees, self.name, all_funcs, data, limits or _DEFAULT_LIMITS,
                       self.compiled)

    def render_reference(self, data: Any, limits: Limits | None = None) -> str:
        """The plain tree walk, without the compiled closures (tests compare both)."""
        return execute(self.trees, self.name, self.funcs, data, limits or _DEFAULT_LIMITS)
