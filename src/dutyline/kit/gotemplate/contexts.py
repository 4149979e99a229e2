"""The escaping context html/template tracks through a template (Go's context.go).

A context is where in an HTML document the next byte of output lands: its state (text, a
tag, an attribute value, CSS...), the attribute's delimiter, how far into a URL it is, the
enclosing special element (<style>, <title>...) and the kind of attribute being read.
"""

from __future__ import annotations

from dataclasses import dataclass

# HTML states
TEXT, TAG, ATTR_NAME, AFTER_NAME, BEFORE_VALUE, ATTR, URL, CMT, RCDATA, JS = range(10)
# CSS states: a <style> element or a style attribute, and what it is inside of there
(CSS, CSS_DQ_STR, CSS_SQ_STR, CSS_DQ_URL, CSS_SQ_URL, CSS_URL, CSS_BLOCK_CMT,
 CSS_LINE_CMT) = range(10, 18)
CSS_STATES = frozenset(range(CSS, CSS_LINE_CMT + 1))
# CSS strings and url(...): a URL is being written, so its part matters
CSS_URL_STATES = frozenset({CSS_DQ_STR, CSS_SQ_STR, CSS_DQ_URL, CSS_SQ_URL, CSS_URL})
CSS_COMMENTS = frozenset({CSS_BLOCK_CMT, CSS_LINE_CMT})

# attribute value delimiters
D_NONE, D_DQ, D_SQ, D_SPACE = range(4)
# the part of a URL written so far
U_NONE, U_PRE, U_QUERY, U_UNKNOWN = range(4)
# the kind of attribute whose value is being read
A_PLAIN, A_URL, A_JS, A_CSS, A_SRCSET = range(5)


@dataclass(frozen=True, slots=True)
class Ctx:
    state: int = TEXT
    delim: int = D_NONE
    url: int = U_NONE
    element: str = ""
    attr: int = A_PLAIN
