"""The optional extras (`pip install 'dutyline[postgres]'` and the like) and the settings that
need them.

The base install serves on SQLite with no other service; each extra backs one setting. Its
modules are imported only where that setting is in force, through `require`, so a missing
extra is one clear sentence naming the setting and the install command, never a traceback
from deep inside a request."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


class MissingExtra(RuntimeError):
    """A setting is in force whose optional dependency is not installed."""


@dataclass(frozen=True)
class Extra:
    name: str
    module: str  # the module whose import proves the extra is installed

    def install_hint(self) -> str:
        return f"pip install 'dutyline[{self.name}]'"


POSTGRES = Extra("postgres", "asyncpg")
REDIS = Extra("redis", "redis")
OTEL = Extra("otel", "opentelemetry.instrumentation.asgi")


def require(extra: Extra, *, setting: str, module: str | None = None) -> ModuleType:
    """Import `module` (default: the extra's own) for `setting`, or raise MissingExtra saying
    which extra to install."""
    name = module or extra.module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise MissingExtra(
            f"{setting} is set, which needs the optional '{extra.name}' dependencies "
            f"(module {exc.name!r} is not installed): {extra.install_hint()}"
        ) from None


def missing(needed: list[tuple[Extra, str]]) -> list[str]:
    """One message per (extra, setting) pair whose extra is not installed."""
    problems = []
    for extra, setting in needed:
        try:
            require(extra, setting=setting)
        except MissingExtra as exc:
            problems.append(str(exc))
    return problems


def needed_for(*, database_url: str, redis_url: str | None, otel: bool) -> list[tuple[Extra, str]]:
    """The extras that these settings put in force, each with the setting that needs it."""
    needed: list[tuple[Extra, str]] = []
    if database_url.startswith("postgresql"):
        needed.append((POSTGRES, "DUTYLINE_DATABASE_URL (PostgreSQL)"))
    if redis_url:
        needed.append((REDIS, "DUTYLINE_REDIS_URL"))
    if otel:
        needed.append((OTEL, "DUTYLINE_OTEL"))
    return needed
