"""Tokens of a Go template action, and the split of the source into text and actions.

Mirrors text/template/parse/lex.go: `{{- ` / ` -}}` trim markers (the space is required),
comments only as a whole action, newlines allowed inside actions, quoted / raw / char
literals, numbers with Go's syntax (checked by the parser).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import TemplateSyntaxError

LEFT, RIGHT = "{{", "}}"
SPACE_CHARS = " \t\r\n"
KEYWORDS = frozenset(
    {"block", "break", "continue", "define", "else", "end", "if", "range", "nil", "template",
     "with"}
)


@dataclass(slots=True)
class Token:
    kind: str  # space ( ) | , := = string raw char number field var ident keyword bool eof
    val: str
    pos: int


@dataclass(slots=True)
class Chunk:
    """A piece of the source: text, a comment, or the tokens of one action."""

    kind: str  # "text" | "comment" | "action"
    text: str
    pos: int
    tokens: list[Token]


def _is_alnum(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def split(src: str, name: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    i, n = 0, len(src)
    trim_next = False
    while True:
        j = src.find(LEFT, i)
        text = src[i:] if j < 0 else src[i:j]
        trim_left = False
        if j >= 0 and src.startswith("-", j + 2) and j + 3 < n and src[j + 3] in SPACE_CHARS:
            trim_left = True
        if trim_next:
            text = text.lstrip(SPACE_CHARS)
        if trim_left:
            text = text.rstrip(SPACE_CHARS)
        if text:
            chunks.append(Chunk("text", text, i, []))
        if j < 0:
            return chunks
        k = j + 2 + (2 if trim_left else 0)
        # A comment: the whole action is /* ... */ (with optional trim markers).
        after = k
        if src.startswith("/*", after):
            end = src.find("*/", after + 2)
            if end < 0:
                raise _err(name, src, j, "unclosed comment")
            p = end + 2
            trim_right = False
            if src.startswith(" -" + RIGHT, p) or (
                p < n and src[p] in SPACE_CHARS and src.startswith("-" + RIGHT, p + 1)
            ):
                trim_right = True
                p += 2
            if not src.startswith(RIGHT, p):
                raise _err(name, src, j, "comment ends before closing delimiter")
            chunks.append(Chunk("comment", "", j, []))
            i = p + 2
            trim_next = trim_right
            continue
        tokens, i, trim_next = _lex_action(src, k, name)
        chunks.append(Chunk("action", "", j, tokens))


def _err(name: str, src: str, pos: int, msg: str) -> TemplateSyntaxError:
    line = src.count("\n", 0, pos) + 1
    return TemplateSyntaxError(f"template: {name}:{line}: {msg}")


def _lex_action(src: str, i: int, name: str) -> tuple[list[Token], int, bool]:
    toks: list[Token] = []
    n = len(src)
    paren = 0
    while True:
        if i >= n:
            raise _err(name, src, i, "unclosed action")
        ch = src[i]
        # right delimiter, possibly with a trim marker: " -}}"
        if ch in SPACE_CHARS:
            j = i
            while j < n and src[j] in SPACE_CHARS:
                j += 1
            if src.startswith("-" + RIGHT, j) and j > i:
                if paren:
                    raise _err(name, src, i, "unclosed left paren")
                return toks, j + 3, True
            toks.append(Token("space", src[i:j], i))
            i = j
            continue
        if src.startswith(RIGHT, i):
            if paren:
                raise _err(name, src, i, "unclosed left paren")
            return toks, i + 2, False
        if ch == "(":
            paren += 1
            toks.append(Token("(", ch, i))
            i += 1
        elif ch == ")":
            paren -= 1
            if paren < 0:
                raise _err(name, src, i, f"unexpected right paren {ch!r}")
            toks.append(Token(")", ch, i))
            i += 1
        elif ch == "|":
            toks.append(Token("|", ch, i))
            i += 1
        elif ch == ",":
            toks.append(Token(",", ch, i))
            i += 1
        elif ch == ":":
            if not src.startswith(":=", i):
                raise _err(name, src, i, "expected :=")
            toks.append(Token(":=", ":=", i))
            i += 2
        elif ch == "=":
            toks.append(Token("=", ch, i))
            i += 1
        elif ch == '"':
            j = i + 1
            while True:
                if j >= n or src[j] == "\n":
                    raise _err(name, src, i, "unterminated quoted string")
                if src[j] == "\\":
                    j += 2
                    continue
                if src[j] == '"':
                    break
                j += 1
            toks.append(Token("string", src[i : j + 1], i))
            i = j + 1
        elif ch == "`":
            j = src.find("`", i + 1)
            if j < 0:
                raise _err(name, src, i, "unterminated raw quoted string")
            toks.append(Token("raw", src[i : j + 1], i))
            i = j + 1
        elif ch == "'":
            j = i + 1
            while True:
                if j >= n or src[j] == "\n":
                    raise _err(name, src, i, "unterminated character constant")
                if src[j] == "\\":
                    j += 2
                    continue
                if src[j] == "'":
                    break
                j += 1
            toks.append(Token("char", src[i : j + 1], i))
            i = j + 1
        elif ch == "$":
            j = i + 1
            while j < n and _is_alnum(src[j]):
                j += 1
            toks.append(Token("var", src[i:j], i))
            i = _check_terminator(src, j, name)
        elif ch == "." and not (i + 1 < n and src[i + 1].isdigit()):
            j = i + 1
            while j < n and _is_alnum(src[j]):
                j += 1
            kind = "field" if j > i + 1 else "dot"
            toks.append(Token(kind, src[i:j], i))
            i = _check_terminator(src, j, name)
        elif ch in "+-" or ch.isdigit() or ch == ".":
            j = _scan_number(src, i)
            if (j < n and _is_alnum(src[j])) or j == i + (1 if ch in "+-" else 0):
                while j < n and (_is_alnum(src[j]) or src[j] in ".+-"):
                    j += 1
                raise _err(name, src, i, f"bad number syntax: {src[i:j]!r}")
            toks.append(Token("number", src[i:j], i))
            i = j
        elif _is_alnum(ch):
            j = i
            while j < n and _is_alnum(src[j]):
                j += 1
            word = src[i:j]
            if word in ("true", "false"):
                kind = "bool"
            elif word in KEYWORDS:
                kind = "keyword"
            else:
                kind = "ident"
            toks.append(Token(kind, word, i))
            i = _check_terminator(src, j, name)
        else:
            raise _err(name, src, i, f"unrecognized character in action: {ch!r}")


def _check_terminator(src: str, j: int, name: str) -> int:
    if j >= len(src):
        return j
    ch = src[j]
    if ch in SPACE_CHARS or ch in ".,|:)(" or src.startswith(RIGHT, j):
        return j
    raise _err(name, src, j, f"bad character {ch!r}")


def _scan_number(src: str, i: int) -> int:
    n = len(src)
    j = i
    if j < n and src[j] in "+-":
        j += 1
    digits = "0123456789_"
    if src.startswith(("0x", "0X"), j):
        j += 2
        digits = "0123456789abcdefABCDEF_"
    elif src.startswith(("0o", "0O"), j):
        j += 2
        digits = "01234567_"
    elif src.startswith(("0b", "0B"), j):
        j += 2
        digits = "01_"
    while j < n and src[j] in digits:
        j += 1
    if j < n and src[j] == ".":
        j += 1
        while j < n and src[j] in digits:
            j += 1
    if len(digits) == 11 and j < n and src[j] in "eE":
        j += 1
        if j < n and src[j] in "+-":
            j += 1
        while j < n and src[j] in "0123456789_":
            j += 1
    if len(digits) == 23 and j < n and src[j] in "pP":
        j += 1
        if j < n and src[j] in "+-":
            j += 1
        while j < n and src[j] in "0123456789_":
            j += 1
    if j < n and src[j] == "i":
        j += 1
    return j
