"""The title condition of /incident/list's `query`: a case-insensitive substring match that an
index answers, with the same results on each database as the plain LIKE it stands for.

The meaning is `lower(title) LIKE '%<query lowered by Python>%'`, with %, _ and / taken
literally. PostgreSQL runs exactly that, and a pg_trgm GIN index on lower(title) serves it
(migration 0005). SQLite cannot index a LIKE with a leading %, so there it becomes a MATCH on
an FTS5 trigram table of lower(title), which is the same test: the table holds what the LIKE
reads and matches case-sensitively, and a quoted FTS5 string of three or more characters
matches exactly the rows that contain it. Shorter queries have no trigram to look up and keep
the LIKE (a full read of the window)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, ColumnElement, func, literal_column, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType

from dutyline.db.like import contains_pattern
from dutyline.db.tables.incident import incident, incident_title_fts

TRIGRAM = 3


def title_contains(query: str) -> ColumnElement[bool]:
    """incident.title contains `query`, ignoring case as the database's lower() does (on
    SQLite only ASCII letters; on PostgreSQL by the database's locale)."""
    needle = query.lower()
    like = func.lower(incident.c.title).like(contains_pattern(needle), escape="/")
    # (No NUL can get here, which FTS5 would take for the end of its query: the request layer
    # refuses strings holding one, api/handler.py.)
    if len(needle) < TRIGRAM:
        return like
    return _IndexedTitleMatch(like, _fts_match(needle))


def _fts_match(needle: str) -> ColumnElement[bool]:
    # One FTS5 string (double quotes, a quote inside doubled): every character literal, the
    # whole needle one phrase of consecutive trigrams, i.e. a substring.
    phrase = '"' + needle.replace('"', '""') + '"'
    matching = select(incident_title_fts.c.rowid).where(
        incident_title_fts.c.incident_title_fts.match(phrase))
    return literal_column(f"{incident.name}.rowid").in_(matching)


class _IndexedTitleMatch(ColumnElement[bool]):
    """The LIKE on PostgreSQL, the equivalent FTS5 MATCH on SQLite. Both stay in the
    statement's cache key (and their bound values in its parameters): a statement is cached
    per dialect, and each dialect renders only its own."""

    type = Boolean()
    inherit_cache = True
    _traverse_internals: _TraverseInternalsType = [  # noqa: RUF012 (SQLAlchemy types it so)
        ("plain_like", InternalTraversal.dp_clauseelement),
        ("fts_match", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, plain_like: ColumnElement[bool], fts_match: ColumnElement[bool]) -> None:
        self.plain_like = plain_like
        self.fts_match = fts_match


@compiles(_IndexedTitleMatch)
def _compile_like(element: _IndexedTitleMatch, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.plain_like, **kw)


@compiles(_IndexedTitleMatch, "sqlite")
def _compile_fts(element: _IndexedTitleMatch, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.fts_match, **kw)
