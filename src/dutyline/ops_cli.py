"""The operator's data commands: backup, restore, copy-to, and `migrate --check`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from dutyline.command_settings import settings as _settings


def migrate_check(database_url: str) -> None:
    """Say whether migrations are pending; exit 1 when they are (nothing is applied)."""
    from dutyline.db.migrate import pending

    waiting = pending(database_url)
    if waiting:
        click.echo(f"{len(waiting)} migrations pending: {', '.join(waiting)} "
                   "(run `dutyline migrate` once, then restart every process)")
        sys.exit(1)
    click.echo("database is up to date: no migration pending")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--pg-dump", default="pg_dump", show_default=True, metavar="PROGRAM",
              help="PostgreSQL: the pg_dump of the server's major version.")
def backup(file: Path, pg_dump: str) -> None:
    """Write a consistent copy of the configured database to FILE while it serves: SQLite
    through its online backup API, PostgreSQL with pg_dump (custom format)."""
    from dutyline.db.backup import BackupError
    from dutyline.db.backup import backup as run_backup

    settings = _settings()
    try:
        run_backup(settings.database_url, file, pg_dump=pg_dump)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"backed up to {file}", err=True)
    key_file = None if settings.secret_key else settings.sqlite_path()
    if key_file is not None and (key_file.parent / "secret.key").exists():
        click.echo(f"keep {key_file.parent / 'secret.key'} with the backups: it is not in "
                   "them, and stored third-party secrets cannot be opened without it", err=True)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True,
              help="Replace what the configured database holds (refused otherwise).")
@click.option("--pg-restore", default="pg_restore", show_default=True, metavar="PROGRAM",
              help="PostgreSQL: the pg_restore of the server's major version.")
def restore(file: Path, force: bool, pg_restore: str) -> None:
    """Restore a backup FILE into the configured database, which must be empty unless
    --force. Stop the servers first; they apply newer migrations when they start."""
    from dutyline.db.backup import BackupError
    from dutyline.db.backup import restore as run_restore

    settings = _settings()
    try:
        run_restore(settings.database_url, file, force=force, pg_restore=pg_restore)
    except BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"restored {file}", err=True)


@click.command("copy-to")
@click.argument("url")
@click.option("--batch", default=1000, show_default=True, type=click.IntRange(1, 100_000),
              help="Rows per insert.")
def copy_to(url: str, batch: int) -> None:
    """Copy every table of the configured database into the empty database at URL
    (postgresql://user@host/name, migrated here first). Stop the servers first; then point
    DUTYLINE_DATABASE_URL at URL and set DUTYLINE_SECRET_KEY to the key in secret.key."""
    from sqlalchemy.exc import SQLAlchemyError

    from dutyline.db.backup import tables_with_rows
    from dutyline.db.copy import copy_tables, target_url
    from dutyline.db.migrate import pending, upgrade

    settings = _settings()
    dest = target_url(url)
    if dest is None:
        raise click.BadParameter("give a postgresql:// (or sqlite:///) URL", param_hint="URL")
    if pending(settings.database_url):
        raise click.ClickException("the configured database has migrations pending: run "
                                   "`dutyline migrate` first")
    try:
        upgrade(dest)
        filled = tables_with_rows(dest)
    except (OSError, SQLAlchemyError) as exc:
        raise click.ClickException(f"the target cannot be migrated: {exc}") from None
    if filled:
        raise click.ClickException(f"the target is not empty ({len(filled)} tables hold "
                                   "rows): copy into a new database")

    def said(table: str, rows: int) -> None:
        if rows:
            click.echo(f"{table}: {rows}", err=True)

    counts = asyncio.run(copy_tables(settings.database_url, dest, batch=batch,
                                     progress=said))
    click.echo(f"copied {sum(counts.values())} rows of {len(counts)} tables", err=True)


COMMANDS = (backup, restore, copy_to)
