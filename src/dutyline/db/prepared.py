"""A hot read's statement, compiled once per dialect and run straight on the driver's cursor.

SQLAlchemy's execution of even a cached statement (its execution context, the result object,
a Row per row) costs more than the small indexed reads of a list page themselves. A
`Prepared` select keeps the SQL text SQLAlchemy compiled for the dialect and the order of its
parameters, and runs it on the DBAPI cursor of the connection, inside the connection's own
transaction: rows come back as the driver's tuples, for the caller to read straight into its
response structs by position (`Prepared.position`).

For selects whose columns need no result processing (integers, text) and whose parameters
need no bind processing: plain values bound by name, no expanding IN lists (a separator or
other literal bound at build time is rendered into the text). Writes never go this way, so
the engine's statement hooks (db/signals.py) miss nothing; `before_cursor_execute` listeners
are called as for any statement."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Select
from sqlalchemy.engine.interfaces import Dialect

_POSTCOMPILE = re.compile(r"__\[POSTCOMPILE_(\w+)\]")


def _run(conn: Connection, sql: str, values: tuple[Any, ...]) -> Sequence[Any]:
    """Every row of `sql` run on the connection's DBAPI cursor, inside its transaction."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None, "the connection is open, inside its transaction"
    cursor = dbapi.cursor()
    try:
        # Whoever listens for statements on the engine (a bench recording what a request
        # sends, a test reading plans) sees this one too; nothing is done when none does.
        for listener in conn.dispatch.before_cursor_execute:
            listener(conn, cursor, sql, values, None, False)
        cursor.execute(sql, values)
        return cursor.fetchall()
    finally:
        cursor.close()


class Prepared:
    __slots__ = ("_compiled", "columns", "statement")

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement
        # The result's column names, in order.
        self.columns: tuple[str, ...] = tuple(statement.selected_columns.keys())
        # dialect name -> (SQL text, parameter names in order, values bound at build time)
        self._compiled: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {}

    def position(self, column: str) -> int:
        return self.columns.index(column)

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Any]:
        """Every row of the statement, as the driver's tuples."""
        compiled = self._compiled.get(conn.dialect.name)
        if compiled is None:
            compiled = self._compiled[conn.dialect.name] = self._compile(conn.dialect)
        sql, names, bound = compiled
        return _run(conn, sql, tuple(params[n] if n in params else bound[n] for n in names))

    def _compile(self, dialect: Dialect) -> tuple[str, tuple[str, ...], dict[str, Any]]:
        compiled: Any = self.statement.compile(dialect=dialect)
        if not compiled.positional:
            raise ValueError(f"{dialect.name}: a positional parameter style is expected")
        literal: dict[str, Any] = {}
        for name in _POSTCOMPILE.findall(compiled.string):
            bind = compiled.binds[name]
            if bind.expanding or not isinstance(bind.value, str) or "'" in bind.value:
                raise ValueError(f"{name}: only a plain text literal can be rendered")
            literal[name] = bind.value
        sql = _POSTCOMPILE.sub(lambda m: f"'{literal[m[1]]}'", compiled.string)
        names = tuple(n for n in compiled.positiontup or () if n not in literal)
        bound = {n: compiled.binds[n].value for n in names}
        return sql, names, bound


class _Slot:
    """Where a value of the caller's parameters goes: `params[name]`, or its `index`-th item
    for an expanding IN list."""

    __slots__ = ("index", "name")

    def __init__(self, name: str, index: int | None) -> None:
        self.name, self.index = name, index


class PreparedIn:
    """`Prepared` for a select with expanding IN lists (`bindparam(..., expanding=True)`):
    its SQL text is rendered once per dialect and length of each list (SQLAlchemy's own
    expansion, so each dialect numbers its parameters as it does), then run the same way on
    the driver's cursor. Every list must hold at least one value."""

    __slots__ = ("_compiled", "_expanded", "_lists", "columns", "statement")

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement
        self.columns: tuple[str, ...] = tuple(statement.selected_columns.keys())
        self._compiled: dict[str, Any] = {}
        self._lists: tuple[str, ...] = tuple(
            name for name, bind in statement.compile().binds.items() if bind.expanding)
        # (dialect name, length of each list) -> (SQL text, each value's slot or constant)
        self._expanded: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> Sequence[Any]:
        """Every row of the statement, as the driver's tuples."""
        key = (conn.dialect.name, *(len(params[n]) for n in self._lists))
        found = self._expanded.get(key)
        if found is None:
            found = self._expanded[key] = self._expand(conn.dialect, params)
        sql, slots = found
        values = tuple(
            (params[s.name] if s.index is None else params[s.name][s.index])
            if type(s) is _Slot else s for s in slots)
        return _run(conn, sql, values)

    def _expand(self, dialect: Dialect, params: Mapping[str, Any]
                ) -> tuple[str, tuple[Any, ...]]:
        compiled: Any = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = self.statement.compile(dialect=dialect)
        if not compiled.positional:
            raise ValueError(f"{dialect.name}: a positional parameter style is expected")
        if any(not params[n] for n in self._lists):
            raise ValueError("an expanding list must hold at least one value")
        marked = {n: ([_Slot(n, i) for i in range(len(v))] if n in self._lists
                      else _Slot(n, None)) for n, v in params.items()}
        state = compiled.construct_expanded_state(marked)
        return state.statement, tuple(state.parameters[n] for n in state.positiontup or ())
