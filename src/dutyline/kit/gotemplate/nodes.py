"""The parse tree of a Go template (the node kinds of Go's text/template/parse)."""

from __future__ import annotations

from dataclasses import dataclass, field


class Node:
    __slots__ = ("pos",)
    pos: int


@dataclass(slots=True)
class Text(Node):
    text: str
    pos: int = 0


@dataclass(slots=True)
class Comment(Node):
    pos: int = 0


@dataclass(slots=True)
class Field(Node):
    idents: tuple[str, ...]
    pos: int = 0


@dataclass(slots=True)
class Variable(Node):
    """`$x.A.B`: idents[0] is the variable name (with `$`)."""

    idents: tuple[str, ...]
    pos: int = 0


@dataclass(slots=True)
class Identifier(Node):
    name: str
    pos: int = 0


@dataclass(slots=True)
class Dot(Node):
    pos: int = 0


@dataclass(slots=True)
class Nil(Node):
    pos: int = 0


@dataclass(slots=True)
class Bool(Node):
    value: bool
    pos: int = 0


@dataclass(slots=True)
class Number(Node):
    """An ideal constant: `value` is int or float; `text` as written."""

    text: str
    value: int | float
    pos: int = 0


@dataclass(slots=True)
class String(Node):
    value: str
    quoted: str
    pos: int = 0


@dataclass(slots=True)
class Chain(Node):
    """`(pipeline).Field.Other` or `$x.Y` on a non-variable operand."""

    node: Node
    fields: tuple[str, ...]
    pos: int = 0


@dataclass(slots=True)
class Command(Node):
    args: list[Node]
    pos: int = 0


@dataclass(slots=True)
class Pipe(Node):
    decl: list[str]
    is_assign: bool
    cmds: list[Command]
    pos: int = 0


@dataclass(slots=True)
class Action(Node):
    pipe: Pipe
    pos: int = 0


@dataclass(slots=True)
class ListNode(Node):
    nodes: list[Node] = field(default_factory=list)
    pos: int = 0


@dataclass(slots=True)
class Branch(Node):
    """if / with / range."""

    kind: str
    pipe: Pipe
    body: ListNode
    else_body: ListNode | None
    pos: int = 0


@dataclass(slots=True)
class TemplateCall(Node):
    name: str
    pipe: Pipe | None
    pos: int = 0


@dataclass(slots=True)
class Break(Node):
    pos: int = 0


@dataclass(slots=True)
class Continue(Node):
    pos: int = 0
