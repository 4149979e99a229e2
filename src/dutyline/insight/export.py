"""CSV for the /insight/*/export operations: a header row of column keys, then one row per
record; a cell starting with = + - @ gets a leading ' so a spreadsheet shows it rather than
running it as a formula (as for the mapping data download)."""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from dutyline.api import errors

_FORMULA_START = ("=", "+", "-", "@")
_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"[ \t]+")


def neutralise(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return neutralise(msgspec.json.encode(value).decode())
    return neutralise(str(value))


def html_to_text(text: str) -> str:
    """Markup dropped, entities decoded, runs of spaces folded."""
    return _SPACES.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def columns(available: Sequence[str], wanted: list[str]) -> list[str]:
    """The export's columns: the asked ones in the asked order, or all of them."""
    if not wanted:
        return list(available)
    unknown = [w for w in wanted if w not in available]
    if unknown:
        raise errors.invalid("export_fields", "unknown columns: " + ", ".join(unknown)
                             + "; known: " + ", ".join(available))
    return list(dict.fromkeys(wanted))


def render(header: list[str], records: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([neutralise(h) for h in header])
    for record in records:
        writer.writerow([cell(record.get(h)) for h in header])
    return out.getvalue()
