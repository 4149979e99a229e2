"""Parse a Go template into trees (text/template/parse semantics).

`parse(src, name, funcs)` returns {template name: ListNode}; `define` and `block` add
trees. An unknown function, an undefined variable, a stray `{{end}}`/`{{else}}`, a
`{{break}}` outside `{{range}}`: parse errors, as in Go.
"""

from __future__ import annotations

import re
from collections.abc import Container

from . import nodes as n
from .errors import TemplateSyntaxError
from .lexer import Chunk, Token, split

_OCTAL_LEGACY = re.compile(r"[+-]?0[0-7_]+")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\"}


def unquote(lit: str, quote: str) -> str:
    body = lit[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= len(body):
            raise ValueError("bad escape")
        e = body[i]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 1
        elif e == quote:
            out.append(e)
            i += 1
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            hx = body[i + 1 : i + 1 + width]
            if len(hx) != width or not all(c in "0123456789abcdefABCDEF" for c in hx):
                raise ValueError("bad escape")
            code = int(hx, 16)
            if e != "x" and (code > 0x10FFFF or 0xD800 <= code < 0xE000):
                raise ValueError("bad escape")
            out.append(chr(code))
            i += 1 + width
        elif e in "01234567":
            oc = body[i : i + 3]
            if len(oc) != 3 or not all(c in "01234567" for c in oc) or int(oc, 8) > 255:
                raise ValueError("bad escape")
            out.append(chr(int(oc, 8)))
            i += 3
        else:
            raise ValueError("bad escape")
    return "".join(out)


def parse_number(text: str) -> int | float:
    """Go's ideal constant: int unless the text is a float literal."""
    t = text
    if t.endswith("i"):
        raise ValueError("complex constants are not supported")
    low = t.lower()
    is_hex = low.lstrip("+-").startswith("0x")
    if "__" in t or t.endswith("_"):
        raise ValueError("bad number")
    if is_hex and "p" in low:
        sign = -1.0 if t.startswith("-") else 1.0
        return sign * float.fromhex(t.lstrip("+-").replace("_", ""))
    if not is_hex and any(c in low for c in ".e"):
        f = float(t.replace("_", ""))
        if f in (float("inf"), float("-inf")):
            raise ValueError("float overflow")
        return f
    if _OCTAL_LEGACY.fullmatch(t):
        value = int(t.replace("_", "").lstrip("+-"), 8) * (-1 if t.startswith("-") else 1)
    else:
        value = int(t, 0) if not t.lstrip("+-").startswith("0") or len(t.lstrip("+-")) == 1 \
            or low.lstrip("+-")[1] in "xob" else int(t, 8)
    if not -(2**63) <= value < 2**63:
        raise OverflowError(text)
    return value


class Parser:
    def __init__(self, src: str, name: str, funcs: Container[str]) -> None:
        self.src = src
        self.name = name
        self.funcs = funcs
        self.chunks = split(src, name)
        self.ci = 0
        self.toks: list[Token] = []
        self.ti = 0
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.trees: dict[str, n.ListNode] = {}

    # -- errors ---------------------------------------------------------------------------
    def error(self, msg: str, pos: int | None = None) -> TemplateSyntaxError:
        if pos is None:
            pos = self.toks[min(self.ti, len(self.toks) - 1)].pos if self.toks else 0
        line = self.src.count("\n", 0, pos) + 1
        return TemplateSyntaxError(f"template: {self.name}:{line}: {msg}")

    # -- tokens inside the current action -------------------------------------------------
    def peek(self) -> Token:
        if self.ti < len(self.toks):
            return self.toks[self.ti]
        return Token("eof", "", self.toks[-1].pos if self.toks else 0)

    def next(self) -> Token:
        t = self.peek()
        self.ti += 1
        return t

    def peek_non_space(self) -> Token:
        while self.peek().kind == "space":
            self.ti += 1
        return self.peek()

    def next_non_space(self) -> Token:
        self.peek_non_space()
        return self.next()

    def expect_end(self, context: str) -> None:
        t = self.next_non_space()
        if t.kind != "eof":
            raise self.error(f"unexpected {t.val!r} in {context}", t.pos)

    # -- top level ------------------------------------------------------------------------
    def parse(self) -> dict[str, n.ListNode]:
        root = n.ListNode()
        while self.ci < len(self.chunks):
            chunk = self.chunks[self.ci]
            if chunk.kind == "action" and self._starts_with_keyword(chunk, "define"):
                self.ci += 1
                self._load(chunk)
                self.next_non_space()
                self._definition()
                continue
            node, stop = self._text_or_action()
            if stop is not None:
                raise self.error(f"unexpected {stop}")
            if node is not None:
                root.nodes.append(node)
        self._add(self.name, root)
        return self.trees

    def _add(self, name: str, tree: n.ListNode) -> None:
        old = self.trees.get(name)
        if old is None or is_empty_tree(old):
            self.trees[name] = tree
        elif not is_empty_tree(tree):
            raise self.error(f"template: multiple definition of template {name!r}")

    @staticmethod
    def _starts_with_keyword(chunk: Chunk, word: str) -> bool:
        for t in chunk.tokens:
            if t.kind == "space":
                continue
            return t.kind == "keyword" and t.val == word
        return False

    def _load(self, chunk: Chunk) -> None:
        self.toks = chunk.tokens
        self.ti = 0

    def _definition(self) -> None:
        t = self.next_non_space()
        if t.kind not in ("string", "raw"):
            raise self.error("unexpected token in define clause", t.pos)
        name = self._string_value(t)
        self.expect_end("define clause")
        saved_vars = self.vars
        self.vars = ["$"]
        body, end = self._item_list()
        self.vars = saved_vars
        if end != "end":
            raise self.error(f"unexpected {end} in definition")
        self._add(name, body)

    def _string_value(self, t: Token) -> str:
        if t.kind == "raw":
            return t.val[1:-1]
        try:
            return unquote(t.val, '"')
        except ValueError:
            raise self.error(f"invalid syntax: {t.val}", t.pos) from None

    def _item_list(self) -> tuple[n.ListNode, str]:
        """Nodes up to `{{end}}` or `{{else}}`; returns which one stopped the list."""
        lst = n.ListNode()
        while self.ci < len(self.chunks):
            node, stop = self._text_or_action()
            if stop is not None:
                return lst, stop
            if node is not None:
                lst.nodes.append(node)
        raise self.error("unexpected EOF", len(self.src))

    def _text_or_action(self) -> tuple[n.Node | None, str | None]:
        chunk = self.chunks[self.ci]
        self.ci += 1
        if chunk.kind == "text":
            return n.Text(chunk.text, chunk.pos), None
        if chunk.kind == "comment":
            return n.Comment(chunk.pos), None
        self._load(chunk)
        return self._action()

    def _action(self) -> tuple[n.Node | None, str | None]:
        t = self.peek_non_space()
        if t.kind == "keyword":
            self.next()
            kw = t.val
            if kw == "end":
                self.expect_end("end")
                return None, "end"
            if kw == "else":
                nxt = self.peek_non_space()
                if nxt.kind == "keyword" and nxt.val in ("if", "with"):
                    return None, "else " + nxt.val
                self.expect_end("else")
                return None, "else"
            if kw in ("if", "with", "range"):
                return self._control(kw, t.pos), None
            if kw == "template":
                return self._template(t.pos), None
            if kw == "block":
                return self._block(t.pos), None
            if kw in ("break", "continue"):
                if self.range_depth == 0:
                    raise self.error(f"{{{{{kw}}}}} outside {{{{range}}}}", t.pos)
                self.expect_end(kw)
                return (n.Break(t.pos) if kw == "break" else n.Continue(t.pos)), None
            if kw == "define":
                raise self.error("unexpected <define> in command", t.pos)
        pipe = self._pipeline("command", allow_decl=True)
        return n.Action(pipe, t.pos), None

    def _control(self, kind: str, pos: int) -> n.Branch:
        mark = len(self.vars)
        if kind == "range":
            self.range_depth += 1
        pipe = self._pipeline(kind, allow_decl=True)
        body, stop = self._item_list()
        if kind == "range":
            self.range_depth -= 1
        else_body: n.ListNode | None = None
        if stop.startswith("else"):
            if stop in ("else if", "else with") and stop == "else " + kind:
                # {{else if x}} is {{else}}{{if x}}...{{end}}{{end}} with one {{end}}.
                self.next_non_space()
                nested = self._control(kind, self.peek().pos)
                else_body = n.ListNode([nested])
            else:
                if stop != "else":
                    raise self.error(f"unexpected {stop}")
                else_body, stop = self._item_list()
                if stop != "end":
                    raise self.error(f"expected end; found {stop}")
        elif stop != "end":
            raise self.error(f"unexpected {stop}")
        del self.vars[mark:]
        return n.Branch(kind, pipe, body, else_body, pos)

    def _template(self, pos: int) -> n.TemplateCall:
        t = self.next_non_space()
        if t.kind not in ("string", "raw"):
            raise self.error("unexpected token in template clause", t.pos)
        name = self._string_value(t)
        pipe: n.Pipe | None = None
        if self.peek_non_space().kind != "eof":
            pipe = self._pipeline("template", allow_decl=False)
        return n.TemplateCall(name, pipe, pos)

    def _block(self, pos: int) -> n.TemplateCall:
        t = self.next_non_space()
        if t.kind not in ("string", "raw"):
            raise self.error("unexpected token in block clause", t.pos)
        name = self._string_value(t)
        pipe = self._pipeline("block", allow_decl=False)
        saved_vars, saved_depth = self.vars, self.range_depth
        self.vars, self.range_depth = ["$"], 0
        body, end = self._item_list()
        self.vars, self.range_depth = saved_vars, saved_depth
        if end != "end":
            raise self.error(f"unexpected {end} in block clause")
        self._add(name, body)
        return n.TemplateCall(name, pipe, pos)

    # -- pipelines ------------------------------------------------------------------------
    def _pipeline(self, context: str, allow_decl: bool) -> n.Pipe:
        start = self.peek_non_space()
        decl: list[str] = []
        is_assign = False
        if allow_decl and start.kind == "var":
            save = self.ti
            self.next()
            nxt = self.peek_non_space()
            if nxt.kind in (":=", "="):
                self.next()
                is_assign = nxt.kind == "="
                decl.append(start.val)
                self.vars.append(start.val)
            elif nxt.kind == "," and context == "range":
                self.next()
                second = self.next_non_space()
                if second.kind != "var":
                    raise self.error(f"range can only initialize variables: {second.val}")
                op = self.next_non_space()
                if op.kind not in (":=", "="):
                    raise self.error("missing := or = in range", op.pos)
                is_assign = op.kind == "="
                decl += [start.val, second.val]
                self.vars += [start.val, second.val]
            elif nxt.kind == ",":
                raise self.error(f"too many declarations in {context}", nxt.pos)
            else:
                self.ti = save
        cmds: list[n.Command] = []
        while True:
            t = self.peek_non_space()
            if t.kind in ("eof", ")"):
                break
            cmds.append(self._command())
        if not cmds:
            raise self.error(f"missing value for {context}", start.pos)
        for i, cmd in enumerate(cmds[1:]):
            if isinstance(cmd.args[0], n.Bool | n.Dot | n.Nil | n.Number | n.String):
                raise self.error(f"non executable command in pipeline stage {i + 2}")
        return n.Pipe(decl, is_assign, cmds, start.pos)

    def _command(self) -> n.Command:
        args: list[n.Node] = []
        pos = self.peek_non_space().pos
        while True:
            self.peek_non_space()
            args.append(self._operand())
            t = self.peek()
            if t.kind == "space":
                self.next()
                t2 = self.peek()
                if t2.kind in ("eof", ")"):
                    break
                if t2.kind == "|":
                    self.next()
                    break
                continue
            if t.kind in ("eof", ")"):
                break
            if t.kind == "|":
                self.next()
                break
            raise self.error(f"unexpected {t.val!r} in operand", t.pos)
        return n.Command(args, pos)

    def _operand(self) -> n.Node:
        node = self._term()
        if self.peek().kind == "field":
            fields: list[str] = []
            while self.peek().kind == "field":
                fields.append(self.next().val[1:])
            if isinstance(node, n.Field):
                return n.Field(node.idents + tuple(fields), node.pos)
            if isinstance(node, n.Variable):
                return n.Variable(node.idents + tuple(fields), node.pos)
            if isinstance(node, n.Bool | n.String | n.Number | n.Nil | n.Dot):
                raise self.error(f"unexpected . after term {self._show(node)}")
            return n.Chain(node, tuple(fields), node.pos)
        return node

    @staticmethod
    def _show(node: n.Node) -> str:
        if isinstance(node, n.String):
            return repr(node.quoted)
        if isinstance(node, n.Number):
            return repr(node.text)
        return repr(type(node).__name__)

    def _term(self) -> n.Node:
        t = self.next_non_space()
        k = t.kind
        if k == "ident":
            if t.val not in self.funcs:
                raise self.error(f'function "{t.val}" not defined', t.pos)
            return n.Identifier(t.val, t.pos)
        if k == "dot":
            return n.Dot(t.pos)
        if k == "keyword" and t.val == "nil":
            return n.Nil(t.pos)
        if k == "var":
            if t.val not in self.vars:
                raise self.error(f'undefined variable "{t.val}"', t.pos)
            return n.Variable((t.val,), t.pos)
        if k == "field":
            return n.Field((t.val[1:],), t.pos)
        if k == "bool":
            return n.Bool(t.val == "true", t.pos)
        if k == "number" or k == "char":
            return self._number(t)
        if k in ("string", "raw"):
            return n.String(self._string_value(t), t.val, t.pos)
        if k == "(":
            pipe = self._pipeline("parenthesized pipeline", allow_decl=False)
            close = self.next_non_space()
            if close.kind != ")":
                raise self.error("unclosed left paren", t.pos)
            return pipe
        raise self.error(f"unexpected {t.val!r} in operand", t.pos)

    def _number(self, t: Token) -> n.Number:
        if t.kind == "char":
            try:
                text = unquote(t.val, "'")
            except ValueError:
                raise self.error(f"malformed character constant: {t.val}", t.pos) from None
            if len(text) != 1:
                raise self.error(f"malformed character constant: {t.val}", t.pos)
            return n.Number(t.val, ord(text), t.pos)
        try:
            return n.Number(t.val, parse_number(t.val), t.pos)
        except OverflowError:
            raise self.error(f"{t.val} overflows int", t.pos) from None
        except ValueError:
            raise self.error(f"illegal number syntax: {t.val!r}", t.pos) from None


def is_empty_tree(node: n.Node) -> bool:
    if isinstance(node, n.ListNode):
        return all(is_empty_tree(x) for x in node.nodes)
    if isinstance(node, n.Text):
        return node.text.strip(" \t\r\n") == ""
    return isinstance(node, n.Comment)


def parse(src: str, name: str, funcs: Container[str]) -> dict[str, n.ListNode]:
    return Parser(src, name, funcs).parse()
