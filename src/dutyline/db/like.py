"""Substring search with LIKE, the same on SQLite and PostgreSQL: the user's text matched
anywhere, with its own `%`, `_` and the escape character taken literally."""

from __future__ import annotations

from sqlalchemy import ColumnElement, String, bindparam, func, or_

ESCAPE = "/"


def contains_pattern(text: str) -> str:
    """The LIKE pattern (used with `escape=ESCAPE`) that finds `text` anywhere."""
    escaped = text.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"


def any_contains(text: str, *columns: ColumnElement[str]) -> ColumnElement[bool]:
    """Any of `columns` contains `text`, ignoring case as the database's lower() does (on
    SQLite only ASCII letters): the list filters' `query`. A column that already holds a
    lower-cased key is lowered again, which changes nothing."""
    pattern = contains_pattern(text.lower())
    return or_(*(func.lower(column).like(pattern, escape=ESCAPE) for column in columns))


def any_contains_bound(name: str, *columns: ColumnElement[str]) -> ColumnElement[bool]:
    """`any_contains` with its pattern bound at execution (parameter `name`, the value
    `contains_pattern(text.lower())`), for statements built once."""
    pattern = bindparam(name, type_=String())
    return or_(*(func.lower(column).like(pattern, escape=ESCAPE) for column in columns))
