"""Threshold expressions of alert rules: `$A > 90`, `$A.value >= 1 && $B < 3`, `$A > 2 * $B`.

A query is named `$A` or bare `A` (the live service's own examples write `"critical": "A"`
for a query whose PromQL already filters, `avg(cpu_usage_idle) < 10`). A condition that is
only a query's name holds when that query returned a value for the series, whatever the value
(`up == 0` returns 0-valued series, which must alert).

Parsed with Python's `ast` into a whitelist of nodes (comparisons, and/or/not, arithmetic,
numbers, query names) and evaluated by a small walker: never `eval`."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

_VAR = re.compile(r"\$([A-Za-z][A-Za-z0-9_]*)(?:\.value)?")
_BARE_VALUE = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*)\.value\b")
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_ARITH: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Mod: operator.mod,
}


class ConditionInvalid(ValueError):
    pass


class _Missing(Exception):
    """A query the expression names has no value for this series: the condition is false."""


@lru_cache(maxsize=1024)
def compile_condition(text: str) -> ast.Expression:
    source = _VAR.sub(lambda m: f"q_{m.group(1)}", text.strip())
    source = source.replace("&&", " and ").replace("||", " or ")
    source = re.sub(r"!(?!=)", " not ", source)
    source = _BARE_VALUE.sub(r"\1", source).strip()  # `A.value` is `A`; no leading indent
    if not source:
        raise ConditionInvalid("is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        raise ConditionInvalid(f"cannot parse {text[:80]!r}") from None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Expression, ast.BoolOp, ast.BinOp, ast.UnaryOp,
                                 ast.Compare, ast.Name, ast.Constant, ast.Load, ast.And,
                                 ast.Or, ast.Not, ast.USub, ast.UAdd, *_COMPARE, *_ARITH)):
            raise ConditionInvalid(f"{type(node).__name__} is not allowed in {text[:80]!r}")
        if isinstance(node, ast.Name) and not node.id.startswith("q_"):
            node.id = f"q_{node.id}"  # a query named bare: `A` is `$A`
        if isinstance(node, ast.Constant) and (
                isinstance(node.value, bool) or not isinstance(node.value, (int, float))):
            raise ConditionInvalid(f"only numbers are allowed in {text[:80]!r}")
    return tree


def names_in(text: str) -> set[str]:
    """The query names a (valid) condition uses, `$A` and bare `A` alike."""
    return {node.id[2:] for node in ast.walk(compile_condition(text))
            if isinstance(node, ast.Name)}


def evaluate(text: str, values: Mapping[str, float | None]) -> bool:
    """True when the condition holds for these query values ({"A": 93.5})."""
    tree = compile_condition(text)
    if isinstance(tree.body, ast.Name):  # only a query's name: it returned a value
        return values.get(tree.body.id[2:]) is not None
    try:
        return bool(_walk(tree.body, values))
    except _Missing:
        return False
    except (ZeroDivisionError, OverflowError, TypeError):
        return False


def _walk(node: ast.AST, values: Mapping[str, float | None]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = values.get(node.id[2:])
        if value is None:
            raise _Missing
        return value
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_walk(v, values) for v in node.values)
        return any(_walk(v, values) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        operand = _walk(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not operand
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        return _ARITH[type(node.op)](_walk(node.left, values), _walk(node.right, values))
    if isinstance(node, ast.Compare):
        left = _walk(node.left, values)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _walk(right_node, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise ConditionInvalid(type(node).__name__)
