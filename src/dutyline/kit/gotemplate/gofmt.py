"""Go's fmt (Sprint, Sprintln, Sprintf) over the Go value model of values.py."""

from __future__ import annotations

import math
from typing import Any

from .budget import check_size, max_value
from .values import MISSING, GoUint8, type_name

_HEX_LOWER = "0123456789abcdefx"
_HEX_UPPER = "0123456789ABCDEFX"


class _Flags:
    __slots__ = ("minus", "plus", "prec", "sharp", "space", "wid", "zero")

    def __init__(self) -> None:
        self.plus = self.minus = self.sharp = self.space = self.zero = False
        self.wid: int | None = None
        self.prec: int | None = None


_PLAIN = _Flags()

# Go's fmt refuses widths and precisions past a million (`tooLarge`).
_TOO_LARGE = 1_000_000
# Below this size a value being built is not worth a look at the bound.
_SMALL = 1 << 16


def _grown(size: int, what: str) -> None:
    """A value under construction reached `size` characters: stop if that is over the bound."""
    if size > _SMALL and size > max_value():
        check_size(size, what)


def _parsenum(s: str, i: int, end: int) -> tuple[int, bool, int]:
    """Go's fmt.parsenum: (number, present, next index); a number past tooLarge swallows the
    rest of the format, as Go does."""
    num, present = 0, False
    while i < end and "0" <= s[i] <= "9":
        if num > _TOO_LARGE:
            return 0, False, end
        num = num * 10 + ord(s[i]) - 48
        present = True
        i += 1
    return num, present, i


def _star_arg(args: list[Any], argi: int) -> int | None:
    """Go's intFromArg: an int argument within tooLarge, else None (BADWIDTH/BADPREC)."""
    if argi < len(args) and isinstance(args[argi], int) and not isinstance(args[argi], bool) \
            and -_TOO_LARGE <= args[argi] <= _TOO_LARGE:
        return int(args[argi])
    return None


def _pad(s: str, f: _Flags) -> str:
    if not f.wid:
        return s
    width = f.wid - len(s)
    if width <= 0:
        return s
    if f.minus:
        return s + " " * width
    return ("0" if f.zero else " ") * width + s


def shortest_digits(v: float) -> tuple[str, int]:
    """(digits, dp): abs(v) == 0.digits * 10**dp with the fewest digits that round-trip."""
    r = repr(abs(v))
    mant, _, exp = r.partition("e")
    int_part, _, frac = mant.partition(".")
    digits = (int_part + frac).lstrip("0")
    lead_zeros = len(int_part + frac) - len(digits)
    dp = len(int_part) - lead_zeros + (int(exp) if exp else 0)
    digits = digits.rstrip("0")
    if not digits:
        return "0", 1
    return digits, dp


def _exp_str(e: int) -> str:
    return ("-" if e < 0 else "+") + (f"{abs(e):02d}")


def format_float_g_shortest(v: float, upper: bool = False) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64) without the sign."""
    digits, dp = shortest_digits(v)
    if v == 0:
        return "0"
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return mant + ("E" if upper else "e") + _exp_str(exp)
    if dp <= 0:
        return "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _float_hex(v: float, upper: bool, prec: int | None) -> str:
    if v == 0:
        s = "0x0p+00"
    else:
        h = float.hex(abs(v))  # 0x1.8000000000000p+0
        mant, _, exp = h[2:].partition("p")
        lead, _, frac = mant.partition(".")
        frac = frac.rstrip("0")
        if prec is not None:
            frac = (frac + "0" * prec)[:prec]
        e = int(exp)
        s = "0x" + lead + ("." + frac if frac else "") + "p" + ("-" if e < 0 else "+") + (
            f"{abs(e):02d}")
    return s.upper().replace("0X", "0X") if upper else s


def fmt_float(v: float, verb: str, f: _Flags) -> str:
    if math.isinf(v) or math.isnan(v):
        s = "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
        if s == "+Inf" and not f.plus:
            s = " Inf" if f.space else "Inf"
        elif s == "NaN" and (f.plus or f.space):
            s = ("+" if f.plus else " ") + s
        old, f.zero = f.zero, False
        out = _pad(s, f)
        f.zero = old
        return out
    neg = math.copysign(1.0, v) < 0
    a = abs(v)
    prec = f.prec
    if verb in "vgG" and prec is None:
        body = format_float_g_shortest(a, verb == "G")
    elif verb in "gG":
        body = f"%.{prec}{verb}" % a
    elif verb in "eEfF":
        body = f"%.{6 if prec is None else prec}{'f' if verb == 'F' else verb}" % a
    elif verb in "xX":
        body = _float_hex(a, verb == "X", prec)
    else:
        body = f"%.{prec}g" % a
    if f.sharp and verb in "vgG" and "." not in body:
        # '#' keeps the decimal point
        if "e" in body or "E" in body:
            m, e_char, e = body.partition("e" if "e" in body else "E")
            body = m + "." + e_char + e
        else:
            body += "."
    sign = "-" if neg else ("+" if f.plus else (" " if f.space else ""))
    if sign and f.zero and not f.minus and f.wid and f.wid > len(body) + 1:
        return sign + "0" * (f.wid - len(body) - 1) + body
    if f.zero and not f.minus and f.wid and f.wid > len(body) and not sign:
        return "0" * (f.wid - len(body)) + body
    old, f.zero = f.zero, False
    out = _pad(sign + body, f)
    f.zero = old
    return out


def fmt_integer(v: int, base: int, verb: str, f: _Flags, upper: bool = False) -> str:
    digits = _HEX_UPPER if upper else _HEX_LOWER
    neg = v < 0
    u = -v if neg else v
    prec = 0
    if f.prec is not None:
        prec = f.prec
        if prec == 0 and u == 0:
            old, f.zero = f.zero, False
            out = " " * (f.wid or 0)
            f.zero = old
            return out
    elif f.zero and not f.minus and f.wid:
        prec = f.wid - (1 if (neg or f.plus or f.space) else 0)
    if base == 10:
        s = str(u)
    else:
        s = ""
        while True:
            s = digits[u % base] + s
            u //= base
            if u == 0:
                break
    if len(s) < prec:
        s = "0" * (prec - len(s)) + s
    if f.sharp:
        if base == 2:
            s = "0b" + s
        elif base == 8 and not s.startswith("0"):
            s = "0" + s
        elif base == 16:
            s = "0" + digits[16] + s
    if verb == "O":
        s = "0o" + s
    if neg:
        s = "-" + s
    elif f.plus:
        s = "+" + s
    elif f.space:
        s = " " + s
    old, f.zero = f.zero, False
    out = _pad(s, f)
    f.zero = old
    return out


def quote(s: str, ascii_only: bool = False, quote_char: str = '"') -> str:
    out = [quote_char]
    for ch in s:
        o = ord(ch)
        if ch == quote_char or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\v":
            out.append("\\v")
        elif o < 0x80 and (o < 0x20 or o == 0x7F):
            out.append(f"\\x{o:02x}")
        elif o < 0x80 or (not ascii_only and ch.isprintable()):
            out.append(ch)
        elif 0xD800 <= o < 0xE000:
            out.append("\\ufffd")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append(quote_char)
    return "".join(out)


def _can_backquote(s: str) -> bool:
    return all(ch == "\t" or (ch >= " " and ch not in "`\x7f\ufeff") for ch in s)


def _fmt_string(s: str, verb: str, f: _Flags) -> str:
    if verb in "vs":
        if f.prec is not None:
            s = s[: f.prec]
        return _pad(s, f)
    if verb == "q":
        if f.prec is not None:
            s = s[: f.prec]
        if f.sharp and _can_backquote(s):
            return _pad("`" + s + "`", f)
        return _pad(quote(s, ascii_only=f.plus), f)
    # x / X: hex of the bytes
    b = s.encode()
    if f.prec is not None:
        b = b[: f.prec]
    hexd = b.hex() if verb == "x" else b.hex().upper()
    pairs = [hexd[i : i + 2] for i in range(0, len(hexd), 2)]
    prefix = ("0x" if verb == "x" else "0X") if f.sharp else ""
    if f.space:
        body = " ".join(prefix + p for p in pairs)
    else:
        body = prefix + "".join(pairs) if pairs else ""
    return _pad(body, f)


def _bad_verb(v: Any, verb: str, f: _Flags) -> str:
    if v is None or v is MISSING:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(v)}={format_value(v, 'v', _PLAIN)})"


def format_value(v: Any, verb: str, f: _Flags, depth: int = 0) -> str:
    if verb == "T":
        return _pad(type_name(v), f)
    if v is None or v is MISSING:
        if depth > 0 or verb == "v":
            return _pad("<nil>", f)
        return _bad_verb(v, verb, f)
    if isinstance(v, bool):
        if verb in "vt":
            return _pad("true" if v else "false", f)
        return _bad_verb(v, verb, f)
    if isinstance(v, int):
        if verb in "vd":
            return fmt_integer(v, 10, verb, f)
        if verb == "b":
            return fmt_integer(v, 2, verb, f)
        if verb in "oO":
            return fmt_integer(v, 8, verb, f)
        if verb in "xX":
            return fmt_integer(v, 16, verb, f, upper=verb == "X")
        if verb == "c":
            return _pad(_rune(v), f)
        if verb == "q":
            r = _rune(v)
            if f.sharp and r != "`" and _can_backquote(r) and r != "'":
                return _pad("`" + r + "`", f)
            return _pad(quote(r, ascii_only=f.plus, quote_char="'"), f)
        if verb == "U":
            s = f"U+{v:04X}"
            if f.sharp and _rune(v).isprintable():
                s += f" '{_rune(v)}'"
            return _pad(s, f)
        return _bad_verb(v, verb, f)
    if isinstance(v, float):
        if verb in "vbgGxXfFeE":
            if verb == "b":
                return _bad_verb(v, verb, f) if False else _float_b(v, f)
            return fmt_float(v, verb, f)
        return _bad_verb(v, verb, f)
    if isinstance(v, str):
        if verb in "vsqxX":
            return _fmt_string(v, verb, f)
        return _bad_verb(v, verb, f)
    if isinstance(v, dict):
        parts = []
        size = 0
        for k in sorted(v, key=_sort_key):
            part = format_value(k, verb, f, depth + 1) + ":" + format_value(
                v[k], verb, f, depth + 1)
            size += len(part) + 1
            _grown(size, "printing a map")
            parts.append(part)
        return "map[" + " ".join(parts) + "]"
    if isinstance(v, list | tuple):
        items = []
        size = 0
        for x in v:
            item = format_value(x, verb, f, depth + 1)
            size += len(item) + 1
            _grown(size, "printing a list")
            items.append(item)
        return "[" + " ".join(items) + "]"
    return _pad(str(v), f)


def _float_b(v: float, f: _Flags) -> str:
    m, e = math.frexp(abs(v))
    mant = int(m * (1 << 53))
    s = f"{mant}p{e - 53:+d}" if v != 0 else "0p-1074"
    return _pad(("-" if v < 0 else ("+" if f.plus else "")) + s, f)


def _rune(v: int) -> str:
    if 0 <= v <= 0x10FFFF and not 0xD800 <= v < 0xE000:
        return chr(v)
    return "\ufffd"


def _sort_key(k: Any) -> Any:
    return (0, k) if isinstance(k, str) else (1, str(k))


def _is_string(v: Any) -> bool:
    return isinstance(v, str)


def sprint(args: list[Any]) -> str:
    out: list[str] = []
    prev_string = False
    size = 0
    for i, a in enumerate(args):
        is_str = _is_string(a)
        if i > 0 and not is_str and not prev_string:
            out.append(" ")
        piece = format_value(a, "v", _PLAIN)
        size += len(piece) + 1
        _grown(size, "print")
        out.append(piece)
        prev_string = is_str
    return "".join(out)


def sprintln(args: list[Any]) -> str:
    out: list[str] = []
    size = 0
    for a in args:
        piece = format_value(a, "v", _PLAIN)
        size += len(piece) + 1
        _grown(size, "println")
        out.append(piece)
    return " ".join(out) + "\n"


def sprintf(fmt: str, args: list[Any]) -> str:
    out: list[str] = []
    argi = 0
    i, end = 0, len(fmt)
    reordered = False
    size = 0
    while i < end:
        j = fmt.find("%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:j])
        i = j + 1
        f = _Flags()
        while i < end and fmt[i] in "#0+- ":
            c = fmt[i]
            if c == "#":
                f.sharp = True
            elif c == "0":
                f.zero = True
            elif c == "+":
                f.plus = True
            elif c == "-":
                f.minus = True
            else:
                f.space = True
            i += 1
        # width
        if i < end and fmt[i] == "*":
            i += 1
            star = _star_arg(args, argi)
            if star is not None:
                f.wid = star
                if f.wid < 0:
                    f.wid, f.minus, f.zero = -f.wid, True, False
            else:
                out.append("%!(BADWIDTH)")
            argi += 1
        else:
            num, present, i = _parsenum(fmt, i, end)
            if present:
                f.wid = num
        if i < end and fmt[i] == ".":
            i += 1
            if i < end and fmt[i] == "*":
                i += 1
                star = _star_arg(args, argi)
                if star is not None:
                    f.prec = star if star >= 0 else None
                else:
                    out.append("%!(BADPREC)")
                argi += 1
            else:
                f.prec, _, i = _parsenum(fmt, i, end)
        if (f.wid or 0) > _SMALL or (f.prec or 0) > _SMALL:
            _grown(max(f.wid or 0, f.prec or 0), "printf")
        if i < end and fmt[i] == "[":
            reordered = True
            close = fmt.find("]", i)
            if close > 0 and fmt[i + 1 : close].isdigit():
                argi = int(fmt[i + 1 : close]) - 1
                i = close + 1
        if f.minus:
            f.zero = False
        if i >= end:
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            out.append("%")
            continue
        if argi >= len(args) or argi < 0:
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[argi]
        argi += 1
        if verb == "v":
            if f.sharp:
                f.sharp = False
                out.append(_go_syntax(arg))
                continue
            f.plus = False
        if verb == "w":
            out.append(_bad_verb(arg, verb, f))
            continue
        piece = format_value(arg, verb, f)
        size += len(piece)
        _grown(size, "printf")
        out.append(piece)
    if not reordered and argi < len(args):
        extra = ", ".join(
            "<nil>" if a is None or a is MISSING
            else f"{type_name(a)}={format_value(a, 'v', _PLAIN)}"
            for a in args[argi:]
        )
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _go_syntax(v: Any, top: bool = True) -> str:
    if v is None or v is MISSING:
        return "<nil>" if top else "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, GoUint8):
        return f"0x{v:x}"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float_g_shortest(v) if v >= 0 else "-" + format_float_g_shortest(-v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, dict | list | tuple):
        parts = []
        size = 0
        for k in sorted(v, key=_sort_key) if isinstance(v, dict) else v:
            part = quote(k) + ":" + _go_syntax(v[k], False) if isinstance(v, dict) \
                else _go_syntax(k, False)
            size += len(part) + 2
            _grown(size, "printf %#v")
            parts.append(part)
        if isinstance(v, dict):
            return "map[string]interface {}{" + ", ".join(parts) + "}"
        return "[]interface {}{" + ", ".join(parts) + "}"
    return str(v)
