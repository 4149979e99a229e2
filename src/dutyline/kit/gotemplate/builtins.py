"""Go's builtin template functions (text/template/funcs.go), over the values.py model."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

from .errors import TemplateExecError
from .gofmt import sprint, sprintf, sprintln
from .values import MISSING, GoUint8, to_any, type_name

GoFunc = Callable[[list[Any]], Any]


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, GoUint8):
        return "uint"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return "invalid"


def _valid(v: Any) -> bool:
    return v is not MISSING and v is not None


def _eq(args: list[Any]) -> bool:
    if len(args) < 2:
        raise TemplateExecError("missing argument for comparison")
    a = args[0]
    k1 = _kind(a)
    for b in args[1:]:
        k2 = _kind(b)
        truth = False
        if k1 != k2:
            if {k1, k2} == {"int", "uint"}:
                truth = a == b
            elif _valid(a) and _valid(b):
                raise TemplateExecError(
                    f"incompatible types for comparison: {type_name(a)} and {type_name(b)}"
                )
        elif k1 != "invalid":
            truth = a == b
        else:
            a_nil, b_nil = not _valid(a), not _valid(b)
            if not a_nil and not b_nil and type(a) is not type(b):
                raise TemplateExecError("non-comparable types")
            if a_nil or b_nil:
                truth = a_nil == b_nil
            else:
                raise TemplateExecError(f"non-comparable type {type_name(b)}")
        if truth:
            return True
    return False


def _lt(args: list[Any]) -> bool:
    if len(args) != 2:
        raise TemplateExecError(f"wrong number of args: want 2 got {len(args)}")
    a, b = args
    k1, k2 = _kind(a), _kind(b)
    if k1 == "invalid" or k2 == "invalid":
        raise TemplateExecError("invalid type for comparison")
    if k1 != k2:
        if {k1, k2} == {"int", "uint"}:
            return bool(a < b)
        raise TemplateExecError(
            f"incompatible types for comparison: {type_name(a)} and {type_name(b)}"
        )
    if k1 == "bool":
        raise TemplateExecError("invalid type for comparison")
    return bool(a < b)


def _two(name: str, args: list[Any]) -> None:
    if len(args) != 2:
        raise TemplateExecError(f"wrong number of args for {name}: want 2 got {len(args)}")


def _ne(args: list[Any]) -> bool:
    _two("ne", args)
    return not _eq(args)


def _le(args: list[Any]) -> bool:
    _two("le", args)
    return _lt(args) or _eq(args)


def _gt(args: list[Any]) -> bool:
    _two("gt", args)
    return not (_lt(args) or _eq(args))


def _ge(args: list[Any]) -> bool:
    _two("ge", args)
    return not _lt(args)


def is_true(v: Any) -> bool:
    if v is MISSING or v is None:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        return v != 0
    if isinstance(v, str | dict | list | tuple):
        return len(v) > 0
    return True


def _not(args: list[Any]) -> bool:
    if len(args) != 1:
        raise TemplateExecError(f"wrong number of args for not: want 1 got {len(args)}")
    return not is_true(args[0])


def _index_arg(i: Any, cap: int) -> int:
    if isinstance(i, bool) or not isinstance(i, int):
        if i is MISSING or i is None:
            raise TemplateExecError("cannot index slice/array with nil")
        raise TemplateExecError(f"cannot index slice/array with type {type_name(i)}")
    if i < 0 or i > cap:
        raise TemplateExecError(f"index out of range: {i}")
    return int(i)


def _index(args: list[Any]) -> Any:
    if not args:
        raise TemplateExecError("wrong number of args for index: want at least 1 got 0")
    item = args[0]
    if item is MISSING or item is None:
        raise TemplateExecError("index of untyped nil")
    for idx in args[1:]:
        if item is None:
            raise TemplateExecError("index of nil pointer")
        if isinstance(item, str):
            b = item.encode()
            x = _index_arg(idx, len(b))
            if x >= len(b):
                raise TemplateExecError(f"index out of range: {x}")
            item = GoUint8(b[x])
        elif isinstance(item, list | tuple):
            x = _index_arg(idx, len(item))
            if x >= len(item):
                raise TemplateExecError(f"index out of range: {x}")
            item = item[x]
        elif isinstance(item, dict):
            if idx is MISSING or idx is None:
                idx = ""
            if not isinstance(idx, str):
                raise TemplateExecError(f"value has type {type_name(idx)}; should be string")
            item = item.get(idx)
        else:
            raise TemplateExecError(f"can't index item of type {type_name(item)}")
    return item


def _slice(args: list[Any]) -> Any:
    if not args:
        raise TemplateExecError("wrong number of args for slice: want at least 1 got 0")
    item, idxs = args[0], args[1:]
    if item is MISSING or item is None:
        raise TemplateExecError("slice of untyped nil")
    if len(idxs) > 3:
        raise TemplateExecError(f"too many slice indexes: {len(idxs)}")
    if isinstance(item, str):
        if len(idxs) == 3:
            raise TemplateExecError("cannot 3-index slice a string")
        seq: Any = item.encode()
    elif isinstance(item, list | tuple):
        seq = list(item)
    else:
        raise TemplateExecError(f"can't slice item of type {type_name(item)}")
    bounds = [0, len(seq)]
    for k, idx in enumerate(idxs):
        x = _index_arg(idx, len(seq))
        if k < 2:
            bounds[k] = x
    if bounds[0] > bounds[1]:
        raise TemplateExecError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if len(idxs) == 3:
        third = _index_arg(idxs[2], len(seq))
        if bounds[1] > third:
            raise TemplateExecError(f"invalid slice index: {bounds[1]} > {third}")
    part = seq[bounds[0] : bounds[1]]
    return part.decode(errors="replace") if isinstance(part, bytes) else part


def _len(args: list[Any]) -> int:
    if len(args) != 1:
        raise TemplateExecError(f"wrong number of args for len: want 1 got {len(args)}")
    v = args[0]
    if v is None:
        raise TemplateExecError("len of nil pointer")
    if isinstance(v, str):
        return len(v.encode())
    if isinstance(v, list | tuple | dict):
        return len(v)
    raise TemplateExecError(f"len of type {type_name(v)}")


def eval_args(args: list[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint([to_any(a) for a in args])


_HTML_TABLE = str.maketrans(
    {"\0": "\ufffd", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
)


def html_escape_string(s: str) -> str:
    return s.translate(_HTML_TABLE)


def _html(args: list[Any]) -> str:
    return html_escape_string(eval_args(args))


def js_escape_string(s: str) -> str:
    out: list[str] = []
    for ch in s:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == '"':
            out.append('\\"')
        elif ch == "<":
            out.append("\\u003C")
        elif ch == ">":
            out.append("\\u003E")
        elif ch == "&":
            out.append("\\u0026")
        elif ch == "=":
            out.append("\\u003D")
        elif ord(ch) < 0x20:
            out.append(f"\\u00{ord(ch):02X}")
        elif ord(ch) >= 0x80 and not ch.isprintable():
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def _js(args: list[Any]) -> str:
    return js_escape_string(eval_args(args))


def _urlquery(args: list[Any]) -> str:
    return urllib.parse.quote_plus(eval_args(args), safe="")


def _print(args: list[Any]) -> str:
    return sprint([to_any(a) for a in args])


def _println(args: list[Any]) -> str:
    return sprintln([to_any(a) for a in args])


def _printf(args: list[Any]) -> str:
    if not args:
        raise TemplateExecError("wrong number of args for printf: want at least 1 got 0")
    fmt = args[0]
    if not isinstance(fmt, str):
        if fmt is MISSING:
            raise TemplateExecError("invalid value; expected string")
        raise TemplateExecError(f"wrong type for value; expected string; got {type_name(fmt)}")
    return sprintf(fmt, [to_any(a) for a in args[1:]])


def _call(args: list[Any]) -> Any:
    if not args or args[0] is MISSING or args[0] is None:
        raise TemplateExecError("call of nil")
    raise TemplateExecError(f"non-function of type {type_name(args[0])}")


def _never(args: list[Any]) -> Any:  # `and` / `or` are evaluated by the executor
    raise AssertionError("unreachable")


BUILTINS: dict[str, GoFunc] = {
    "and": _never,
    "or": _never,
    "call": _call,
    "html": _html,
    "index": _index,
    "slice": _slice,
    "js": _js,
    "len": _len,
    "not": _not,
    "print": _print,
    "printf": _printf,
    "println": _println,
    "urlquery": _urlquery,
    "eq": _eq,
    "ge": _ge,
    "gt": _gt,
    "le": _le,
    "lt": _lt,
    "ne": _ne,
}
