"""Run a parsed Go template (text/template/exec.go semantics) inside sandbox bounds."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import budget
from . import nodes as n
from .builtins import GoFunc, is_true
from .errors import TemplateExecError, TemplateLimitError
from .gofmt import sprint
from .values import MISSING, type_name

_NO_FINAL = object()


@dataclass(frozen=True, slots=True)
class Limits:
    """Sandbox bounds of one execution, enforced while it runs."""

    max_steps: int = 200_000  # node evaluations and function calls
    max_output: int = 1_000_000  # characters
    max_depth: int = 50  # nested {{template}} calls
    max_value: int = budget.DEFAULT_MAX_VALUE  # characters of any one value built
    max_iterations: int = 100_000  # `range` iterations, all loops together
    max_seconds: float = 2.0  # wall clock, looked at every _CLOCK_EVERY steps
    clock: Callable[[], float] = time.monotonic


# Steps between two looks at the clock: a step is bounded work (no value over max_value), so
# a render overshoots its time budget by at most this many steps.
_CLOCK_EVERY = 256
# A function result longer than this took work in proportion to its size (a copy, an escape,
# a format): the clock is looked at after it, so 256 such steps cannot add up past the budget.
# Functions whose cost is not in their result's size look at it themselves (budget.py).
LARGE_RESULT = 4096


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class State:
    __slots__ = ("check_at", "compiled", "deadline", "depth", "funcs", "iterations", "limits",
                 "max_output", "max_value", "meter", "name", "out", "size", "steps", "trees",
                 "vars")

    def __init__(
        self, trees: dict[str, n.ListNode], funcs: dict[str, GoFunc], limits: Limits, name: str
    ) -> None:
        self.trees = trees
        self.funcs = funcs
        self.limits = limits
        # the fast paths compare `steps` with `check_at` inline and call checkpoint() past it
        self.check_at = min(limits.max_steps, _CLOCK_EVERY)
        # the functions' bounds (budget.py): the same deadline, one read of the clock
        self.meter = budget.Meter(limits.max_value, limits.max_seconds, limits.clock)
        self.deadline = self.meter.deadline
        self.max_output = limits.max_output
        self.max_value = limits.max_value
        self.iterations = 0
        self.name = name
        self.out: list[str] = []
        self.size = 0
        self.steps = 0
        self.depth = 0
        self.vars: list[list[Any]] = []
        self.compiled: dict[str, Any] = {}

    def error(self, msg: str) -> TemplateExecError:
        return TemplateExecError(f"template: {self.name}: {msg}")

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.check_at:
            self.checkpoint()

    def checkpoint(self) -> None:
        """The step and time bounds, every _CLOCK_EVERY steps (the step fast paths)."""
        limits = self.limits
        if self.steps > limits.max_steps:
            raise TemplateLimitError(
                f"template: {self.name}: exceeded the step limit ({limits.max_steps})"
            )
        self.check_time()
        self.check_at = min(limits.max_steps, self.steps + _CLOCK_EVERY)

    def check_time(self) -> None:
        if self.limits.clock() > self.deadline:
            raise TemplateLimitError(
                f"template: {self.name}: exceeded the time limit ({self.limits.max_seconds:g} s)"
            )

    def built(self, name: str, value: Any) -> Any:
        """A function's result, refused when it is a string over the value bound; after a
        large one, a look at the clock."""
        if type(value) is str and len(value) > LARGE_RESULT:
            if len(value) > self.max_value:
                raise TemplateLimitError(
                    f"template: {self.name}: {name} built a value of {len(value)} characters, "
                    f"over the limit of {self.max_value}"
                )
            self.check_time()
        return value

    def write(self, s: str) -> None:
        self.size += len(s)
        if self.size > self.limits.max_output:
            raise TemplateLimitError(
                f"template: {self.name}: output exceeds {self.limits.max_output} characters"
            )
        self.out.append(s)

    # -- walking --------------------------------------------------------------------------
    def walk(self, dot: Any, node: n.Node) -> None:
        self.step()
        t = type(node)
        if t is n.Text:
            self.write(node.text)  # type: ignore[attr-defined]
        elif t is n.Action:
            pipe = node.pipe  # type: ignore[attr-defined]
            val = self.eval_pipeline(dot, pipe)
            if not pipe.decl:
                self.write("<no value>" if val is MISSING else sprint([val]))
        elif t is n.ListNode:
            for child in node.nodes:  # type: ignore[attr-defined]
                self.walk(dot, child)
        elif t is n.Branch:
            self.walk_branch(dot, node)  # type: ignore[arg-type]
        elif t is n.TemplateCall:
            self.walk_template(dot, node)  # type: ignore[arg-type]
        elif t is n.Break:
            raise _Break
        elif t is n.Continue:
            raise _Continue

    def walk_branch(self, dot: Any, node: n.Branch) -> None:
        mark = len(self.vars)
        try:
            if node.kind == "range":
                self.walk_range(dot, node)
                return
            val = self.eval_pipeline(dot, node.pipe)
            if is_true(val):
                self.walk(val if node.kind == "with" else dot, node.body)
            elif node.else_body is not None:
                self.walk(dot, node.else_body)
        finally:
            del self.vars[mark:]

    def walk_range(self, dot: Any, node: n.Branch, body: Any = None,
                   else_op: Any = None) -> None:
        val = self.eval_pipeline(dot, node.pipe)
        decl = node.pipe.decl
        mark = len(self.vars)

        def one(index: Any, elem: Any) -> bool:
            self.step()
            self.iterations += 1
            if self.iterations > self.limits.max_iterations:
                raise TemplateLimitError(
                    f"template: {self.name}: exceeded the range iteration limit "
                    f"({self.limits.max_iterations})"
                )
            if decl:
                if node.pipe.is_assign:
                    self.set_var(decl[0], index if len(decl) > 1 else elem)
                else:
                    self.vars[mark - 1][1] = elem
            if len(decl) > 1:
                if node.pipe.is_assign:
                    self.set_var(decl[1], elem)
                else:
                    self.vars[mark - 2][1] = index
            try:
                if body is None:
                    self.walk(elem, node.body)
                else:
                    body(self, elem)
            except _Continue:
                pass
            finally:
                del self.vars[mark:]
            return True

        ran = False
        try:
            if isinstance(val, list | tuple):
                for i, e in enumerate(val):
                    ran = one(i, e)
            elif isinstance(val, dict):
                for k in sorted(val):
                    ran = one(k, val[k])
            elif isinstance(val, int) and not isinstance(val, bool):
                if len(decl) > 1:
                    raise self.error(f"can't use {val} to iterate over more than one variable")
                for i in range(val):
                    ran = one(MISSING, i)
            elif val is not MISSING:
                raise self.error(f"range can't iterate over {sprint([val])}")
        except _Break:
            return
        if not ran and node.else_body is not None:
            if else_op is None:
                self.walk(dot, node.else_body)
            else:
                else_op(self, dot)

    def walk_template(self, dot: Any, node: n.TemplateCall) -> None:
        tree = self.trees.get(node.name)
        if tree is None:
            raise self.error(f'no such template "{node.name}"')
        if self.depth >= self.limits.max_depth:
            raise TemplateLimitError(
                f"template: {self.name}: exceeded maximum template depth ({self.limits.max_depth})"
            )
        new_dot = self.eval_pipeline(dot, node.pipe) if node.pipe is not None else None
        if node.pipe is None:
            new_dot = MISSING
        saved = self.vars
        self.vars = [["$", new_dot]]
        self.depth += 1
        try:
            op = self.compiled.get(node.name)
            if op is None:
                self.walk(new_dot, tree)
            else:
                op(self, new_dot)
        finally:
            self.depth -= 1
            self.vars = saved

    # -- variables ------------------------------------------------------------------------
    def var_value(self, name: str) -> Any:
        for i in range(len(self.vars) - 1, -1, -1):
            if self.vars[i][0] == name:
                return self.vars[i][1]
        raise self.error(f"undefined variable: {name}")

    def set_var(self, name: str, value: Any) -> None:
        for i in range(len(self.vars) - 1, -1, -1):
            if self.vars[i][0] == name:
                self.vars[i][1] = value
                return
        raise self.error(f"undefined variable: {name}")

    # -- evaluation -----------------------------------------------------------------------
    def eval_pipeline(self, dot: Any, pipe: n.Pipe) -> Any:
        value: Any = _NO_FINAL
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
            if value is None:
                value = MISSING
        for name in pipe.decl:
            if pipe.is_assign:
                self.set_var(name, value)
            else:
                self.vars.append([name, value])
        return value

    def not_a_function(self, cmd: n.Command, final: Any) -> None:
        if len(cmd.args) > 1 or final is not _NO_FINAL:
            raise self.error("can't give argument to non-function")

    def eval_command(self, dot: Any, cmd: n.Command, final: Any) -> Any:
        first = cmd.args[0]
        t = type(first)
        if t is n.Field:
            return self.eval_field_chain(
                dot, dot, first.idents, len(cmd.args) > 1 or final is not _NO_FINAL  # type: ignore[attr-defined]
            )
        if t is n.Identifier:
            return self.eval_function(dot, first.name, cmd.args[1:], final)  # type: ignore[attr-defined]
        if t is n.Variable:
            idents = first.idents  # type: ignore[attr-defined]
            value = self.var_value(idents[0])
            if len(idents) == 1:
                self.not_a_function(cmd, final)
                return value
            return self.eval_field_chain(
                dot, value, idents[1:], len(cmd.args) > 1 or final is not _NO_FINAL
            )
        if t is n.Chain:
            base = self.eval_arg(dot, first.node)  # type: ignore[attr-defined]
            if type(first.node) is n.Nil:  # type: ignore[attr-defined]
                raise self.error("indirection through explicit nil")
            return self.eval_field_chain(
                dot, base, first.fields, len(cmd.args) > 1 or final is not _NO_FINAL  # type: ignore[attr-defined]
            )
        if t is n.Pipe:
            self.not_a_function(cmd, final)
            return self.eval_pipeline(dot, first)  # type: ignore[arg-type]
        self.not_a_function(cmd, final)
        if t is n.Nil:
            raise self.error("nil is not a command")
        return self.eval_arg(dot, first)

    def eval_field_chain(self, dot: Any, receiver: Any, idents: tuple[str, ...],
                         has_args: bool) -> Any:
        last = len(idents) - 1
        for i, name in enumerate(idents):
            receiver = self.eval_field(receiver, name, has_args and i == last)
        return receiver

    def eval_field(self, receiver: Any, name: str, has_args: bool) -> Any:
        if receiver is MISSING:
            return MISSING
        if receiver is None:
            raise self.error(f"nil pointer evaluating interface {{}}.{name}")
        if isinstance(receiver, dict):
            if has_args:
                raise self.error(f"{name} is not a method but has arguments")
            return receiver.get(name, MISSING)
        raise self.error(f"can't evaluate field {name} in type {type_name(receiver)}")

    def eval_arg(self, dot: Any, node: n.Node) -> Any:
        t = type(node)
        if t is n.Dot:
            return dot
        if t is n.String:
            return node.value  # type: ignore[attr-defined]
        if t is n.Number:
            return node.value  # type: ignore[attr-defined]
        if t is n.Bool:
            return node.value  # type: ignore[attr-defined]
        if t is n.Nil:
            return None
        if t is n.Field:
            return self.eval_field_chain(dot, dot, node.idents, False)  # type: ignore[attr-defined]
        if t is n.Variable:
            idents = node.idents  # type: ignore[attr-defined]
            value = self.var_value(idents[0])
            return self.eval_field_chain(dot, value, idents[1:], False) if len(idents) > 1 \
                else value
        if t is n.Pipe:
            return self.eval_pipeline(dot, node)  # type: ignore[arg-type]
        if t is n.Identifier:
            return self.eval_function(dot, node.name, [], _NO_FINAL)  # type: ignore[attr-defined]
        if t is n.Chain:
            if type(node.node) is n.Nil:  # type: ignore[attr-defined]
                raise self.error("indirection through explicit nil")
            base = self.eval_arg(dot, node.node)  # type: ignore[attr-defined]
            return self.eval_field_chain(dot, base, node.fields, False)  # type: ignore[attr-defined]
        raise self.error(f"can't handle {type(node).__name__}")

    def eval_function(self, dot: Any, name: str, args: list[n.Node], final: Any) -> Any:
        self.step()
        if name in ("and", "or"):
            if not args and final is _NO_FINAL:
                raise self.error(f"wrong number of args for {name}: want at least 1 got 0")
            want = name == "or"
            v: Any = MISSING
            for a in args:
                v = self.eval_arg(dot, a)
                if is_true(v) == want:
                    return v
            if final is not _NO_FINAL:
                v = final
            return v
        fn = self.funcs.get(name)
        if fn is None:
            raise self.error(f'"{name}" is not a defined function')
        values = [self.eval_arg(dot, a) for a in args]
        if final is not _NO_FINAL:
            values.append(final)
        try:
            return self.built(name, fn(values))
        except TemplateLimitError as e:
            if str(e).startswith("template: "):
                raise
            raise TemplateLimitError(f"template: {self.name}: {e}") from None
        except TemplateExecError as e:
            raise self.error(f"error calling {name}: {e}") from None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                ZeroDivisionError) as e:
            raise self.error(f"error calling {name}: {e}") from None


def execute(trees: dict[str, n.ListNode], name: str, funcs: dict[str, GoFunc], data: Any,
            limits: Limits, compiled: dict[str, Any] | None = None) -> str:
    tree = trees.get(name)
    if tree is None:
        raise TemplateExecError(f'template: no template "{name}" associated')
    state = State(trees, funcs, limits, name)
    state.vars = [["$", data]]
    token = budget.bind(state.meter)
    try:
        if compiled is None:
            state.walk(data, tree)
        else:
            state.compiled = compiled
            compiled[name](state, data)
    except RecursionError:
        raise TemplateLimitError(f"template: {name}: nesting too deep") from None
    finally:
        budget.unbind(token)
    return "".join(state.out)
