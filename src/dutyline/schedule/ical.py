"""A small RFC 5545 writer: just what a feed of on-call shifts needs.

Lines end with CRLF and are folded at 75 octets (never inside a UTF-8 sequence); TEXT values
escape backslash, semicolon, comma and newlines; times are UTC (`…Z`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

_LIMIT = 75


@dataclass(frozen=True, slots=True)
class Event:
    uid: str
    start_s: int
    end_s: int
    summary: str
    description: str = ""


def utc_stamp(at_s: int) -> str:
    return datetime.fromtimestamp(at_s, UTC).strftime("%Y%m%dT%H%M%SZ")


def escape_text(value: str) -> str:
    return (value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
            .replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n"))


def fold(line: str) -> bytes:
    """One content line, folded: at most 75 octets per physical line, continuation lines
    start with a space (which counts in their 75)."""
    data = line.encode("utf-8")
    out: list[bytes] = []
    limit = _LIMIT
    while len(data) > limit:
        cut = limit
        while cut > 0 and (data[cut] & 0xC0) == 0x80:  # inside a multi-byte character
            cut -= 1
        out.append(data[:cut])
        data = data[cut:]
        limit = _LIMIT - 1
    out.append(data)
    return b"\r\n ".join(out) + b"\r\n"


def calendar(name: str, events: list[Event], *, now_s: int) -> bytes:
    stamp = utc_stamp(now_s)
    lines = [
        "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//dutyline//on-call shifts//EN",
        "CALSCALE:GREGORIAN", "METHOD:PUBLISH", f"X-WR-CALNAME:{escape_text(name)}",
    ]
    for e in events:
        lines += [
            "BEGIN:VEVENT", f"UID:{e.uid}", f"DTSTAMP:{stamp}",
            f"DTSTART:{utc_stamp(e.start_s)}", f"DTEND:{utc_stamp(e.end_s)}",
            f"SUMMARY:{escape_text(e.summary)}",
        ]
        if e.description:
            lines.append(f"DESCRIPTION:{escape_text(e.description)}")
        lines += ["TRANSP:OPAQUE", "END:VEVENT"]
    lines.append("END:VCALENDAR")
    return b"".join(fold(line) for line in lines)
