"""Substring search with LIKE, the same on SQLite and PostgreSQL: the user's text matched
anywhere, with its own `%`, `_` and the escape character taken literally."""

from __future__ import annotations

ESCAPE = "/"


def contains_pattern(text: str) -> str:
    """The LIKE pattern (used with `escape=ESCAPE`) that finds `text` anywhere."""
    escaped = text.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"
