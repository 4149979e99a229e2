"""What a subscriber's e-mail address must look like, for the public subscribe form and for
an import alike: one rule, so an address one path takes the other takes too."""

from __future__ import annotations

import re

# RFC 5321: a path of 256 octets holds an address of at most 254, a local part at most 64.
MAX_EMAIL = 254
# Deliberately simple: one @, no spaces, separators or angle brackets, a dotted domain.
_EMAIL = re.compile(r"^[^\s@,;<>\"()\[\]\\]{1,64}@[^\s@,;<>\"()\[\]\\]+\.[^\s@,;<>\"()\[\]\\.]+$")


def normalize_email(raw: str) -> str | None:
    """The address lower-cased, or None when it is not one."""
    email = raw.strip().lower()
    if len(email) > MAX_EMAIL or not _EMAIL.match(email):
        return None
    return email
