"""The CSS escapers and decoder on Go's own test vectors (html/template/css_test.go), without
the Go toolchain; the differential test checks them in templates against Go itself."""

from __future__ import annotations

import pytest

from dutyline.kit.gotemplate.css import css_escape, css_value_filter, decode_css, index_tag_end


@pytest.mark.parametrize(("css", "want"), [
    ("", ""), ("foo", "foo"), ("foo\\", "foo"), ("foo\\\\", "foo\\"), ("\\", ""),
    ("\\A", "\n"), ("\\a", "\n"), ("\\0a", "\n"), ("\\00000a", "\n"),
    ("\\000000a", "\u0000a"), ("\\1234 5", "\u12345"), ("\\1234\\20 5", "\u1234 5"),
    ("\\1234\\A 5", "\u1234\n5"), ("\\1234\t5", "\u12345"), ("\\1234\n5", "\u12345"),
    ("\\1234\r\n5", "\u12345"), ("\\12345", "\U00012345"), ("\\\\", "\\"),
    ("\\\\ ", "\\ "), ('\\"', '"'), ("\\'", "'"), ("\\.", "."), ("\\. .", ". ."),
    ("The \\3c i\\3equick\\3c/i\\3e,\\d\\A\\3cspan style=\\27 color:brown\\27\\3e brown"
     "\\3c/span\\3e  fox jumps\\2028over the \\3c canine class=\\22lazy\\22 \\3e dog"
     "\\3c/canine\\3e",
     "The <i>quick</i>,\r\n<span style='color:brown'>brown</span> fox jumps\u2028over the "
     '<canine class="lazy">dog</canine>'),
    # past the last code point: one hex digit fewer; a surrogate is U+FFFD
    ("\\ffffff", "\U000fffff" + "f"), ("\\d800", "\ufffd"),
])
def test_decode_css(css: str, want: str) -> None:
    assert decode_css(css) == want
    assert decode_css(css_escape(want)) == want  # escaping and decoding are dual


def test_css_escaper_on_every_ascii_character_and_beyond() -> None:
    given = ("".join(map(chr, range(0x80))) + "\u00a0\u0100\u2028\u2029\ufeff\U0001d11e")
    want = ("\\0\x01\x02\x03\x04\x05\x06\x07\x08\\9 \\a\x0b\\c \\d\x0e\x0f"
            + "".join(map(chr, range(0x10, 0x20)))
            + ' !\\22#$%\\26\\27\\28\\29*\\2b,-.\\2f 0123456789\\3a\\3b\\3c=\\3e?'
            + "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmno"
            + "pqrstuvwxyz\\7b|\\7d~\x7f\u00a0\u0100\u2028\u2029\ufeff\U0001d11e")
    assert css_escape(given) == want
    assert decode_css(want) == given


@pytest.mark.parametrize(("css", "want"), [
    ("", ""), ("foo", "foo"), ("0", "0"), ("0px", "0px"), ("-5px", "-5px"),
    ("1.25in", "1.25in"), ("+.33em", "+.33em"), ("100%", "100%"), ("12.5%", "12.5%"),
    (".foo", ".foo"), ("#bar", "#bar"), ("corner-radius", "corner-radius"),
    ("-moz-corner-radius", "-moz-corner-radius"), ("#000", "#000"), ("#48f", "#48f"),
    ("#123456", "#123456"), ("U+00-FF, U+980-9FF", "U+00-FF, U+980-9FF"),
    ("color: red", "color: red"), ("<!--", "ZgotmplZ"), ("-->", "ZgotmplZ"),
    ("<![CDATA[", "ZgotmplZ"), ("]]>", "ZgotmplZ"), ("</style", "ZgotmplZ"),
    ('"', "ZgotmplZ"), ("'", "ZgotmplZ"), ("`", "ZgotmplZ"), ("\x00", "ZgotmplZ"),
    ("/* foo */", "ZgotmplZ"), ("//", "ZgotmplZ"), ("[href=~", "ZgotmplZ"),
    ("expression(alert(1337))", "ZgotmplZ"), ("-expression(alert(1337))", "ZgotmplZ"),
    ("expression", "ZgotmplZ"), ("Expression", "ZgotmplZ"), ("EXPRESSION", "ZgotmplZ"),
    ("-moz-binding", "ZgotmplZ"), ("-expr\x00ession(alert(1337))", "ZgotmplZ"),
    ("-expr\\0ession(alert(1337))", "ZgotmplZ"), ("-express\\69on(alert(1337))", "ZgotmplZ"),
    ("-express\\69 on(alert(1337))", "ZgotmplZ"), ("-exp\\72 ession(alert(1337))", "ZgotmplZ"),
    ("-exp\\52 ession(alert(1337))", "ZgotmplZ"),
    ("-exp\\000052 ession(alert(1337))", "ZgotmplZ"),
    ("-expre\\0000073sion", "-expre\x073sion"), ("@import url evil.css", "ZgotmplZ"),
    ("<", "ZgotmplZ"), (">", "ZgotmplZ"),
    # letters split by anything but a name character still spell the keyword
    ("expres-sion", "ZgotmplZ"), ("mo.z-bin ding", "ZgotmplZ"),
])
def test_css_value_filter(css: str, want: str) -> None:
    assert css_value_filter(css) == want


@pytest.mark.parametrize(("text", "want"), [
    (b"a{}</style>", 3), (b"a{}</STYLE >", 3), (b"a{}</style/", 3), (b"a{}</style\n", 3),
    (b"a{}</stylex></style>", 12), (b"a{}</style", -1), (b"</sty", -1), (b"x", -1),
])
def test_the_end_tag_needs_a_separator(text: bytes, want: int) -> None:
    assert index_tag_end(text, b"style") == want
