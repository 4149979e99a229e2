"""Localized error messages: babel .po catalogs read once at start, Accept-Language
negotiated and cached per distinct header value."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from babel import Locale, UnknownLocaleError
from babel.messages.pofile import read_po

LOCALES_DIR = Path(__file__).resolve().parent.parent / "locales"
DEFAULT_LOCALE = "en"
# Catalog directory name -> the tag we answer with.


class Translator:
    def __init__(self, locales_dir: Path = LOCALES_DIR) -> None:
        self._catalogs: dict[str, dict[str, str]] = {}
        # A language's catalog is every .po in its folder: dutyline.po (the API's errors and
        # the console's shared words) and one file per console area (console_channels.po...).
        for po_file in sorted(locales_dir.glob("*/LC_MESSAGES/*.po")):
            lang = po_file.parent.parent.name
            with po_file.open("rb") as fh:
                catalog = read_po(fh)
            self._catalogs.setdefault(lang, {}).update(
                (str(m.id), str(m.string)) for m in catalog if m.id and m.string and not m.fuzzy
            )

    def gettext(self, locale: str, msgid: str) -> str:
        catalog = self._catalogs.get(locale)
        if catalog is None:
            return msgid
        return catalog.get(msgid, msgid)

    def render(self, locale: str, message: str, fields: dict[str, Any]) -> str:
        template = self.gettext(locale, message)
        if not fields:
            return template
        # Field values that are themselves catalog messages ("is required") translate too;
        # ids and user input are not in the catalog and pass through unchanged.
        localized = {
            k: self.gettext(locale, v) if isinstance(v, str) else v for k, v in fields.items()
        }
        try:
            return template.format(**localized)
        except (KeyError, IndexError, ValueError):
            # A broken translation must never turn an error into a 500.
            return message.format(**fields)

    @property
    def languages(self) -> list[str]:
        return sorted(self._catalogs)


@lru_cache(maxsize=512)
def negotiate(accept_language: str | None) -> str:
    """Pick a catalog for an Accept-Language header; unknown or absent means English."""
    if not accept_language:
        return DEFAULT_LOCALE
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept_language.split(",")[:20]):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                quality = float(params[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            ranked.append((-quality, index, tag.strip()))
    for _, _, tag in sorted(ranked):
        if tag == "*":
            return DEFAULT_LOCALE
        try:
            locale = Locale.parse(tag, sep="-" if "-" in tag else "_")
        except (ValueError, UnknownLocaleError):
            continue
        if locale.language == "zh":
            return "zh_CN"
        if locale.language == "en":
            return "en"
    return DEFAULT_LOCALE
