"""The console's Jinja environment: templates in per-area folders under templates/, the
helpers every template may call, and the filters.

- `static(name)`: a static file's URL, with its digest (web/assets.py).
- `nav(actor, path)`: the groups of the navigation this reader is shown (web/navigation.py).
- `t(message, **fields)`: `message` in the reader's language, from the catalogs the API's
  errors use (every .po of locales/<lang>/LC_MESSAGES/); `{name}` placeholders are filled
  with `fields` after translating (a field is never itself translated), and anything the
  catalog lacks stays English.
- `lang_attr()`: ` lang="zh-CN"` on an element whose text `t` translated, when the reader's
  language is not the page's English (so a screen reader reads it in the right voice).
- `when` (filter): a time in the reader's time zone with its abbreviation (web/times.py);
  `isotime`: the same instant for `<time datetime="...">`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from dutyline.api.i18n import DEFAULT_LOCALE
from dutyline.web import navigation, times

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


def environment(static: Any) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(static=static, nav=navigation.menu, t=translate, lang_attr=lang_attr)
    env.filters.update(isotime=iso_time, when=when)
    return env


def _locale(context: jinja2.runtime.Context) -> str:
    ctx = context.get("ctx")
    return str(getattr(ctx, "locale", DEFAULT_LOCALE))


@jinja2.pass_context
def translate(context: jinja2.runtime.Context, message: str, **fields: Any) -> str:
    ctx = context.get("ctx")
    locale = _locale(context)
    text = message
    if ctx is not None and locale != DEFAULT_LOCALE:
        text = ctx.runtime.translator.gettext(locale, message)
    if not fields:
        return text
    try:
        return text.format(**fields)
    except (KeyError, IndexError, ValueError):
        # A broken translation must never break the page.
        return message.format(**fields)


@jinja2.pass_context
def lang_attr(context: jinja2.runtime.Context) -> Markup:
    locale = _locale(context)
    if locale == DEFAULT_LOCALE:
        return Markup("")
    return Markup(' lang="{}"').format(locale.replace("_", "-"))


def iso_time(unix_s: int) -> str:
    return times.iso(unix_s)


@jinja2.pass_context
def when(context: jinja2.runtime.Context, unix_s: int) -> str:
    """`unix_s` in the reader's time zone (`ctx.zone`: theirs, else their account's, else
    UTC), with its abbreviation: 2026-04-14 09:30 JST. Beside it, `<time datetime=
    "{{ value|isotime }}">` keeps the instant for machines."""
    ctx = context.get("ctx")
    zone = getattr(ctx, "zone", None)
    tz = zone[1] if zone is not None else times.UTC_ZONE
    return times.label(unix_s, tz)
