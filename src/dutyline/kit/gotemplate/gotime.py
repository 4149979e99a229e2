"""Go's time layouts ("2006-01-02 15:04:05") for the `date` template function."""

from __future__ import annotations

import re
from datetime import datetime

_TOKENS = re.compile(
    r"January|Jan|Monday|Mon|MST|2006|Z07:00|Z0700|Z07|-07:00|-0700|-07|"
    r"[.,](?:000000000|000000|000|999999999|999999|999)|"
    r"01|02|_2|03|04|05|06|15|PM|pm|1|2|3|4|5"
)


def _tz_offset(t: datetime, colon: bool, z: bool, hours_only: bool = False) -> str:
    off = t.utcoffset()
    secs = int(off.total_seconds()) if off is not None else 0
    if z and secs == 0:
        return "Z"
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    hh, mm = secs // 3600, secs % 3600 // 60
    if hours_only:
        return f"{sign}{hh:02d}"
    return f"{sign}{hh:02d}{':' if colon else ''}{mm:02d}"


def format_time(t: datetime, layout: str) -> str:
    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok == "2006":
            return f"{t.year:04d}"
        if tok == "06":
            return f"{t.year % 100:02d}"
        if tok == "January":
            return t.strftime("%B")
        if tok == "Jan":
            return t.strftime("%b")
        if tok == "01":
            return f"{t.month:02d}"
        if tok == "1":
            return str(t.month)
        if tok == "Monday":
            return t.strftime("%A")
        if tok == "Mon":
            return t.strftime("%a")
        if tok == "02":
            return f"{t.day:02d}"
        if tok == "_2":
            return f"{t.day:2d}"
        if tok == "2":
            return str(t.day)
        if tok == "15":
            return f"{t.hour:02d}"
        h12 = t.hour % 12 or 12
        if tok == "03":
            return f"{h12:02d}"
        if tok == "3":
            return str(h12)
        if tok == "04":
            return f"{t.minute:02d}"
        if tok == "4":
            return str(t.minute)
        if tok == "05":
            return f"{t.second:02d}"
        if tok == "5":
            return str(t.second)
        if tok == "PM":
            return "PM" if t.hour >= 12 else "AM"
        if tok == "pm":
            return "pm" if t.hour >= 12 else "am"
        if tok == "MST":
            return t.tzname() or "UTC"
        if tok.startswith("Z"):
            return _tz_offset(t, ":" in tok, True, tok == "Z07")
        if tok.startswith("-07"):
            return _tz_offset(t, ":" in tok, False, tok == "-07")
        # fractional seconds
        digits = len(tok) - 1
        frac = f"{t.microsecond:06d}000"[:digits]
        if tok[1] == "9":
            frac = frac.rstrip("0")
            return (tok[0] + frac) if frac else ""
        return tok[0] + frac

    return _TOKENS.sub(sub, layout)
