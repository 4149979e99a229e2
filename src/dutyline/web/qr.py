"""QR codes drawn on the server as SVG (segno: pure Python, no dependencies), put inline in a
page: no script draws them and nothing leaves the server, which matters for what they carry
(a second factor's key).

    qr_svg("otpauth://totp/...")  -> Markup('<svg ... aria-hidden="true" ...>...</svg>')

The drawing is dark modules on a transparent ground; the page gives it a light ground and
its accessible name (the SVG itself is hidden from assistive tools)."""

from __future__ import annotations

import io

import segno
from markupsafe import Markup

# Medium error correction: a phone's camera reads it off a screen at an angle.
ERROR = "m"
SCALE = 4
QUIET_ZONE = 4  # modules of empty border the standard asks for


def qr_code(text: str) -> segno.QRCode:
    return segno.make(text, error=ERROR, micro=False)


def qr_svg(text: str) -> Markup:
    """`text` as the SVG of a QR code: markup of segno's own (no text of ours inside it)."""
    out = io.BytesIO()
    qr_code(text).save(out, kind="svg", scale=SCALE, border=QUIET_ZONE, xmldecl=False,
                       svgns=True, nl=False, omitsize=True, svgclass="qr-svg",
                       lineclass=None, dark="#000")
    svg = out.getvalue().decode("ascii")
    return Markup(svg.replace("<svg ", '<svg aria-hidden="true" focusable="false" ', 1))
