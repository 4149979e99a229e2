"""The settings of the command being run: read once per command, from the environment and
the config file the command line names, and checked for the optional extras they need."""

from __future__ import annotations

import click

from dutyline.config import ConfigError, Loaded, Settings, load_settings


def loaded() -> Loaded:
    """The settings of this run, read once (on the first command that needs them, so that
    `--help` works beside a broken file); a bad file ends the command with its message."""
    ctx = click.get_current_context().find_root()
    if "loaded" not in ctx.meta:
        try:
            ctx.meta["loaded"] = load_settings(config=ctx.params.get("config_file"))
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from None
    loaded: Loaded = ctx.meta["loaded"]
    return loaded


def settings() -> Settings:
    """The settings, once every optional extra they put in force is known to be installed:
    a missing one ends the command with what to install, before anything starts."""
    from dutyline.kit import extras

    settings = loaded().settings
    problems = extras.missing(extras.needed_for(
        database_url=settings.database_url, redis_url=settings.redis_url, otel=settings.otel))
    if problems:
        raise click.ClickException("\n".join(problems))
    return settings
