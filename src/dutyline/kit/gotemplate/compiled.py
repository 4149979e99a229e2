"""Templates compiled to Python closures, the fast path of execution.

The tree walk in executor.py is the reference semantics; this module turns each node into a
closure once, at parse time, so a render does no per-node dispatch on node types. The common
shapes (text, `{{.A.B}}`, `{{$x.A}}`, if/with/range over compiled bodies) run inline; every
other action defers to the State's evaluation methods, so semantics stay in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import nodes as n
from .builtins import is_true
from .errors import TemplateLimitError
from .executor import LARGE_RESULT, State, _Break, _Continue
from .gofmt import sprint
from .htmlescape import ONE_ARG_ESCAPERS
from .values import MISSING

Op = Callable[[State, Any], None]


def _noop(s: State, dot: Any) -> None:
    return None


def emit(s: State, v: Any) -> None:
    if type(v) is not str:
        if v is MISSING or v is None:
            v = "<no value>"
        elif type(v) is int:
            v = str(v)
        else:
            v = sprint([v])
    s.size += len(v)
    if s.size > s.max_output:
        s.write("")
    s.out.append(v)


Getter = Callable[[State, Any], Any]


def _arg_getter(node: n.Node) -> Getter | None:
    """A fast evaluator of a simple argument, or None for the general path."""
    t = type(node)
    if t is n.String or t is n.Number or t is n.Bool:
        const = node.value  # type: ignore[attr-defined]
        return lambda s, dot: const
    if t is n.Dot:
        return lambda s, dot: dot
    if t is n.Field or t is n.Variable:
        idents = node.idents  # type: ignore[attr-defined]
        var = idents[0] if t is n.Variable else None
        fields = idents[1:] if t is n.Variable else idents

        def get(s: State, dot: Any) -> Any:
            v = dot if var is None else s.var_value(var)
            for name in fields:
                v = v.get(name, MISSING) if type(v) is dict else s.eval_field(v, name, False)
            return v

        return get
    return None


CmdOp = Callable[[State, Any, Any], Any]
_NONE = object()


def _compile_cmd(cmd: n.Command, first_stage: bool) -> CmdOp | None:
    """A simple command: a field/variable/dot alone (first stage only), or a function
    other than and/or whose arguments are simple; None for the general path."""
    head = cmd.args[0]
    getters = [_arg_getter(a) for a in cmd.args[1:]]
    if any(g is None for g in getters):
        return None
    gs: list[Getter] = [g for g in getters if g is not None]
    if type(head) is n.Identifier and not gs and not first_stage and \
            head.name in ONE_ARG_ESCAPERS:
        escape = ONE_ARG_ESCAPERS[head.name]
        return lambda s, dot, final: escape(final)
    if type(head) is n.Identifier and head.name not in ("and", "or"):
        name = head.name

        def call(s: State, dot: Any, final: Any) -> Any:
            fn = s.funcs[name]
            s.steps += 1
            if s.steps > s.check_at:
                s.checkpoint()
            args = [g(s, dot) for g in gs]
            if final is not _NONE:
                args.append(final)
            v = fn(args)
            if type(v) is str and len(v) > LARGE_RESULT:
                s.built(name, v)
            return MISSING if v is None else v

        return call
    if first_stage and not gs and type(head) in (n.Field, n.Variable, n.Dot):
        g = _arg_getter(head)
        assert g is not None
        fast = g

        def value(s: State, dot: Any, final: Any) -> Any:
            v = fast(s, dot)
            return MISSING if v is None else v

        return value
    return None


def compile_pipe(pipe: n.Pipe) -> Getter:
    """The value of a pipeline without declarations, run directly when every command is
    simple; a failure is re-run on the reference path, which words and classifies it."""
    ops = [_compile_cmd(c, i == 0) for i, c in enumerate(pipe.cmds)]
    if pipe.decl or any(o is None for o in ops):
        return lambda s, dot: s.eval_pipeline(dot, pipe)
    cmds: list[CmdOp] = [o for o in ops if o is not None]
    if len(cmds) == 2:
        first, second = cmds

        def run_two(s: State, dot: Any) -> Any:
            try:
                return second(s, dot, first(s, dot, _NONE))
            except TemplateLimitError:
                raise
            except Exception:
                return s.eval_pipeline(dot, pipe)

        return run_two
    if len(cmds) == 1:
        only = cmds[0]

        def run_one(s: State, dot: Any) -> Any:
            try:
                return only(s, dot, _NONE)
            except TemplateLimitError:
                raise
            except Exception:
                return s.eval_pipeline(dot, pipe)

        return run_one

    def run(s: State, dot: Any) -> Any:
        try:
            v: Any = _NONE
            for c in cmds:
                v = c(s, dot, v)
            return v
        except TemplateLimitError:
            raise
        except Exception:
            return s.eval_pipeline(dot, pipe)

    return run


def _field_action(idents: tuple[str, ...], start_var: str | None) -> Op:
    if start_var is None and len(idents) == 1:
        (name,) = idents

        def one_field(s: State, dot: Any) -> None:
            s.steps += 1
            if s.steps > s.check_at:
                s.checkpoint()
            v = dot.get(name, MISSING) if type(dot) is dict else s.eval_field(dot, name, False)
            if type(v) is str:
                s.size += len(v)
                if s.size > s.max_output:
                    s.write("")
                s.out.append(v)
            else:
                emit(s, v)

        return one_field

    def op(s: State, dot: Any) -> None:
        s.steps += 1
        if s.steps > s.check_at:
            s.checkpoint()
        v = dot if start_var is None else s.var_value(start_var)
        for name in idents:
            v = v.get(name, MISSING) if type(v) is dict else s.eval_field(v, name, False)
        emit(s, v)

    return op


def compile_node(node: n.Node) -> Op:
    t = type(node)
    if t is n.Text:
        text = node.text  # type: ignore[attr-defined]
        size = len(text)

        def text_op(s: State, dot: Any) -> None:
            s.size += size
            if s.size > s.max_output:
                s.write("")
            s.out.append(text)

        return text_op
    if t is n.Comment:
        return _noop
    if t is n.ListNode:
        ops = tuple(compile_node(c) for c in node.nodes)  # type: ignore[attr-defined]
        if len(ops) == 1:
            return ops[0]

        def list_op(s: State, dot: Any) -> None:
            for o in ops:
                o(s, dot)

        return list_op
    if t is n.Action:
        pipe: n.Pipe = node.pipe  # type: ignore[attr-defined]
        if not pipe.decl and len(pipe.cmds) == 1 and len(pipe.cmds[0].args) == 1:
            arg = pipe.cmds[0].args[0]
            if type(arg) is n.Field:
                return _field_action(arg.idents, None)
            if type(arg) is n.Variable:
                return _field_action(arg.idents[1:], arg.idents[0])

        if not pipe.decl:
            value = compile_pipe(pipe)

            def print_op(s: State, dot: Any) -> None:
                s.step()
                emit(s, value(s, dot))

            return print_op

        def action_op(s: State, dot: Any) -> None:
            s.step()
            s.eval_pipeline(dot, pipe)

        return action_op
    if t is n.Branch:
        return _compile_branch(node)  # type: ignore[arg-type]
    if t is n.TemplateCall:
        call: n.TemplateCall = node  # type: ignore[assignment]

        def template_op(s: State, dot: Any) -> None:
            s.step()
            s.walk_template(dot, call)

        return template_op
    if t is n.Break:
        def break_op(s: State, dot: Any) -> None:
            raise _Break

        return break_op
    if t is n.Continue:
        def continue_op(s: State, dot: Any) -> None:
            raise _Continue

        return continue_op

    def generic(s: State, dot: Any) -> None:  # pragma: no cover - every node kind is above
        s.walk(dot, node)

    return generic


def _compile_branch(node: n.Branch) -> Op:
    body = compile_node(node.body)
    else_op = compile_node(node.else_body) if node.else_body is not None else None
    pipe = node.pipe
    if node.kind == "range":
        def range_op(s: State, dot: Any) -> None:
            s.step()
            mark = len(s.vars)
            try:
                s.walk_range(dot, node, body, else_op)
            finally:
                del s.vars[mark:]

        return range_op
    is_with = node.kind == "with"
    value = compile_pipe(pipe)

    def branch_op(s: State, dot: Any) -> None:
        s.step()
        mark = len(s.vars)
        try:
            val = value(s, dot)
            if is_true(val):
                body(s, val if is_with else dot)
            elif else_op is not None:
                else_op(s, dot)
        finally:
            del s.vars[mark:]

    return branch_op


def compile_trees(trees: dict[str, n.ListNode]) -> dict[str, Op]:
    return {name: compile_node(tree) for name, tree in trees.items()}
