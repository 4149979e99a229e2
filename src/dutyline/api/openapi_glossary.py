"""Our own words for the fields the reference does not describe (api/openapi_words.py):
`FIELDS` by field name, `FIELDS_OF` by "Schema.field" where a name means something else in
one schema."""

from __future__ import annotations

FIELDS: dict[str, str] = {
}

FIELDS_OF: dict[str, str] = {
}
