"""Row keys and CSV of mapping data (docs/enrichment.md).

A row is keyed by its source-label values: one value as it is, several joined by `|` with `\\`
and `|` escaped, so no two value tuples share a key and the key of one source label is the
plain value (the reference's `"key": "server01"`).

CSV out: a header of source then result labels, one line per row; a cell starting with
`= + - @` gets a leading `'` so a spreadsheet shows it instead of running it. CSV in: the same
header (in any order of columns, all labels present, nothing else), every line as many cells as
the header, values checked like upserted ones; the first bad line is reported by its number
and nothing is written. A cell our download neutralised (`'=...`) loads back without its `'`,
so a downloaded file uploads to the same rows; formulas are stored as text and never run."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence

from dutyline.api import errors

MAX_SOURCE_VALUE = 255
MAX_RESULT_VALUE = 1024
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_UPLOAD_ROWS = 1_000_000
_FORMULA_START = ("=", "+", "-", "@")
_LINE = "\n"


def row_key(source_values: Sequence[str]) -> str:
    if len(source_values) == 1:
        return source_values[0]
    return "|".join(v.replace("\\", "\\\\").replace("|", "\\|") for v in source_values)


def neutralise(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def unneutralise(text: str) -> str:
    """The inverse of `neutralise`: a downloaded file uploads back to the same values."""
    if len(text) > 1 and text[0] == "'" and text[1] in "=+-@":
        return text[1:]
    return text


def check_value(value: str, *, source: bool, where: str) -> str:
    """One cell's value, as upsert and upload accept it; raises naming `where`."""
    if "\x00" in value:
        raise errors.invalid(where, "must not contain NUL characters")
    if source:
        if not value.strip():
            raise errors.invalid(where, "a source label value must not be blank")
        if len(value) > MAX_SOURCE_VALUE:
            raise errors.invalid(where, f"a source label value is at most {MAX_SOURCE_VALUE} "
                                        "characters")
    elif len(value) > MAX_RESULT_VALUE:
        raise errors.invalid(where, f"a result label value is at most {MAX_RESULT_VALUE} "
                                    "characters")
    return value


class _Line:
    """A file-like the csv writer writes one line into, read back at once."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return len(s)

    def take(self) -> str:
        out = "".join(self.parts)
        self.parts.clear()
        return out


class CsvWriter:
    """Renders batches of rows to CSV text, neutralising formula cells."""

    def __init__(self) -> None:
        self._buffer = _Line()
        self._writer = csv.writer(self._buffer, lineterminator=_LINE)

    def rows(self, rows: Iterable[Sequence[str]]) -> str:
        write = self._writer.writerow
        for row in rows:
            write([neutralise(v) for v in row])
        return self._buffer.take()


_PLAIN = re.compile(r'[,"\r\n]')


def csv_line(values: Sequence[str]) -> str:
    """One row as its download line. Most rows need neither quoting nor neutralising: those
    are joined directly; the rest go through the csv module."""
    if not any(_PLAIN.search(v) or v.startswith(_FORMULA_START) for v in values):
        return ",".join(values) + _LINE
    return CsvWriter().rows([values])


def parse_upload(data: bytes, source_labels: list[str],
                 result_labels: list[str]) -> Iterator[list[str]]:
    """Yield each data line as values in schema order (source then result labels); raises
    400 naming the first bad line. Decode and header errors are raised before any row."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise errors.EntityTooLarge(limit=MAX_UPLOAD_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise errors.invalid("file", f"is not UTF-8 text (line {line}, byte {exc.start})"
                             ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise errors.invalid("file", f"line {line}: must not contain NUL characters")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise errors.invalid("file", f"line 1: {exc}") from None
    if not header or not any(h.strip() for h in header):
        raise errors.invalid("file", "line 1: the header row is missing")
    header = [h.strip() for h in header]
    wanted = source_labels + result_labels
    if sorted(header) != sorted(wanted) or len(set(header)) != len(header):
        raise errors.invalid(
            "file", "line 1: the header must name exactly the labels "
                    + ",".join(wanted) + " (got " + ",".join(header) + ")")
    order = [header.index(label) for label in wanted]
    width = len(header)
    n_source = len(source_labels)
    rows = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise errors.invalid("file", f"line {reader.line_num}: {exc}") from None
        line = reader.line_num
        if not cells:
            continue  # a blank line
        if len(cells) != width:
            raise errors.invalid("file", f"line {line}: {len(cells)} cells, the header has "
                                         f"{width}")
        rows += 1
        if rows > MAX_UPLOAD_ROWS:
            raise errors.invalid("file", f"at most {MAX_UPLOAD_ROWS} rows")
        values = [unneutralise(cells[i]) for i in order]
        for i, value in enumerate(values):
            check_value(value, source=i < n_source, where=f"file line {line} ({wanted[i]})")
        yield values
