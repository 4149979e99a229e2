"""The operator's commands: serve, worker, migrate, init, app-key, config, notify-test,
doctor."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import click

from dutyline.command_settings import loaded as _loaded
from dutyline.command_settings import settings as _settings
from dutyline.config import CONFIG_ENV, DEFAULT_CONFIG_FILE, TABLE, Loaded, Settings, link_base_url
from dutyline.doctor import doctor
from dutyline.kit.settings_table import DEFAULT, ENVIRONMENT, masked
from dutyline.ops_cli import COMMANDS as DATA_COMMANDS
from dutyline.ops_cli import migrate_check

# What `serve` gives requests still open at shutdown before closing them.
GRACEFUL_SHUTDOWN_S = 5


class Shell:
    """What a command run from the server's shell acts with: the unit of work's ground
    (api/unit.Ground: the database, the clock, the audit log, no rate limit of its own), so a
    command's writes are audited as the API's are, as the server itself (credential
    "system"). `async with Shell(settings) as shell:` disposes of the database after."""

    def __init__(self, settings: Settings) -> None:
        from dutyline.api.ratelimit import NoRateLimiter
        from dutyline.db.engine import Database
        from dutyline.kit.clock import SystemClock
        from dutyline.platform.audit.sink import DatabaseAuditSink

        self.settings = settings
        self.db = Database(settings.database_url)
        self.clock = SystemClock()
        self.audit = DatabaseAuditSink(self.clock)
        self.limiter = NoRateLimiter()

    async def __aenter__(self) -> Shell:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.db.dispose()


@click.group()
@click.version_option(package_name="dutyline")
@click.option("--config", "config_file", metavar="PATH", default=None,
              help=f"TOML settings file (default: ./{DEFAULT_CONFIG_FILE} when present; "
                   f"also {CONFIG_ENV}). Environment variables win over it.")
def main(config_file: str | None) -> None:
    """dutyline: on-call, incident response and AI SRE."""


@main.command()
@click.option("--check", is_flag=True,
              help="Apply nothing: say whether migrations are pending (exit status 1).")
def migrate(check: bool) -> None:
    """Apply pending database migrations."""
    from dutyline.db.migrate import upgrade

    settings = _settings()
    if check:
        migrate_check(settings.database_url)
        return
    upgrade(settings.database_url)
    click.echo("database is up to date", err=True)


@main.command()
@click.option("--account-name", default="My team", show_default=True)
@click.option("--owner-name", default="Owner", show_default=True)
@click.option("--owner-email", default="", show_default=False)
def init(account_name: str, owner_name: str, owner_email: str) -> None:
    """Create an account, its Owner and one app key; print them as JSON."""
    from dutyline.db.migrate import upgrade

    settings = _settings()
    upgrade(settings.database_url)
    created = asyncio.run(_create_account(settings, account_name, owner_name,
                                          _owner_email(owner_email)))
    click.echo(json.dumps(created))


def _owner_email(value: str) -> str:
    """The Owner's e-mail address as given, refused here when it is none."""
    from dutyline.platform.member.service import is_email

    value = value.strip().lower()
    if value and not is_email(value):
        raise click.BadParameter(f"{value!r} is no e-mail address", param_hint="--owner-email")
    return value


async def _create_account(
    settings: Settings, account_name: str, owner_name: str, owner_email: str
) -> dict[str, Any]:
    from dutyline.db.engine import Database
    from dutyline.kit.clock import SystemClock
    from dutyline.platform.account.service import create_account

    db = Database(settings.database_url)
    try:
        async with db.transaction() as conn:
            new = await create_account(
                conn, account_name=account_name, owner_name=owner_name,
                owner_email=owner_email, now_s=int(SystemClock().now()),
            )
    finally:
        await db.dispose()
    return {"account_id": new.account_id, "person_id": new.person_id, "app_key": new.app_key}


async def _bootstrap_if_empty(settings: Settings,
                              owner_email: str = "") -> dict[str, Any] | None:
    from dutyline.db.engine import Database
    from dutyline.platform.account.service import has_any_account

    db = Database(settings.database_url)
    try:
        async with db.connect() as conn:
            if await has_any_account(conn):
                return None
    finally:
        await db.dispose()
    return await _create_account(settings, "My team", "Owner", owner_email)


async def _welcome_link(settings: Settings, *, person_id: int | None = None,
                        email: str = "") -> str:
    """A one-time link to the console's set-password page for a member, named by id or by
    e-mail address (which must then be in one account only); issued in a unit of work, so
    the account's audit log keeps that the server's operator issued it."""
    from dutyline.api.errors import ApiError
    from dutyline.api.unit import system_actor, unit
    from dutyline.platform.app_key import service as keys
    from dutyline.platform.member import service as members
    from dutyline.web import service as console

    async with Shell(settings) as shell, unit(shell, None, write=True) as work:
        if person_id is None:
            found = await members.operator_find_by_email(work.conn, email=email)
            if len(found) != 1:
                raise click.ClickException(
                    f"no member has the e-mail address {email}" if not found else
                    f"{email} is a member of {len(found)} accounts: use --person-id")
            account_id, person_id = found[0]
        else:
            try:
                account_id = await keys.account_of_member(work.conn, person_id=person_id)
            except ApiError:
                raise click.ClickException(f"no enabled member {person_id}") from None
        token = await console.issue_link(work.conn, system_actor(account_id, shell.clock),
                                         purpose="welcome", person_id=person_id)
    return console.link_url(settings.base_url, "welcome", token)


@main.command("invite-link")
@click.option("--email", default="", help="The member's e-mail address.")
@click.option("--person-id", type=int, default=None, help="The member's id.")
def invite_link(email: str, person_id: int | None) -> None:
    """Print a one-time link with which a member sets their password and signs in to the
    console (for servers that send no e-mail). Earlier links of theirs stop working."""
    from dutyline.db.migrate import upgrade

    if bool(email) == (person_id is not None):
        raise click.UsageError("give one of --email and --person-id")
    settings = _settings()
    upgrade(settings.database_url)
    click.echo(asyncio.run(_welcome_link(settings, person_id=person_id, email=email)))
    _say_when_no_base_url(_loaded())


def _say_when_no_base_url(loaded: Loaded) -> None:
    """A command that prints a link, run where no base URL is configured, cannot know the
    address people open (the server may listen elsewhere): it says so."""
    if loaded.sources["base_url"] == DEFAULT:
        click.echo(f"note: no base URL is configured, so this link names {loaded.settings.base_url}"
                   ", the default, which may not be where the server is reached; set "
                   "DUTYLINE_BASE_URL or base_url in the config file to the address people "
                   "open", err=True)


def _require_secret_key(settings: Settings) -> None:
    """Off SQLite the server's secret key cannot be generated beside the database (every
    process must share it): without one, sealed secrets, signed links, list cursors and
    console sessions would fail on first use. A server or worker refuses to start instead."""
    if settings.secret_key or settings.sqlite_path() is not None:
        return
    raise click.ClickException(
        "DUTYLINE_SECRET_KEY (secret_key) is not set: off SQLite every process must share "
        "one key, which seals stored third-party secrets and signs console sessions, links "
        "and cursors. Set it (for example to the output of `python -c \"import secrets; "
        "print(secrets.token_urlsafe(32))\"`) in the environment or the config file.")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=int,
              help="Server processes; use PostgreSQL and Redis when more than one.")
@click.option("--owner-email", envvar="DUTYLINE_OWNER_EMAIL", default="", metavar="ADDRESS",
              help="First start only: the Owner's e-mail address, with which they sign in "
                   "(also DUTYLINE_OWNER_EMAIL). Without it, the welcome link asks for it.")
def serve(host: str, port: int, workers: int, owner_email: str) -> None:
    """Apply migrations and serve the API (durable-work loops run inside)."""
    import uvicorn

    from dutyline.db.migrate import upgrade

    owner_email = _owner_email(owner_email)
    _settings()  # the extras its settings need are installed, or stop here
    loaded = _loaded()
    settings = _follow_listen_address(loaded, host, port)
    _require_secret_key(settings)
    upgrade(settings.database_url)
    created = asyncio.run(_bootstrap_if_empty(settings, owner_email))
    if created:
        base = settings.base_url.rstrip("/")
        welcome = asyncio.run(_welcome_link(settings, person_id=created["person_id"]))
        sets = (f"password (they sign in as {owner_email})" if owner_email
                else "e-mail address and password")
        click.echo(
            "\nFirst start: created an account and its Owner. This app key is shown once:\n\n"
            f"  {created['app_key']}\n\n"
            "Try it:\n\n"
            f"  curl -s -X POST '{base}/team/list?app_key={created['app_key']}' "
            "-H 'Content-Type: application/json' -d '{}'\n\n"
            f"Sign in to the console: this one-time link sets the Owner's {sets} (it works "
            "once, within 7 days):\n\n"
            f"  {welcome}\n",
            err=True,
        )
    _announce_delivery(settings)
    if workers > 1 and settings.is_sqlite:
        click.echo("note: several processes on SQLite share one writer; rate limits are "
                   "per process unless DUTYLINE_REDIS_URL is set", err=True)
    # The server processes (one, or --workers N) build their settings from the environment
    # again: the file and the base URL chosen here reach them through it.
    if loaded.file is not None:
        os.environ[CONFIG_ENV] = str(loaded.file)
    os.environ["DUTYLINE_BASE_URL"] = settings.base_url
    uvicorn.run(
        "dutyline.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        access_log=False,
        # uvicorn's own proxy headers would trust 127.0.0.1 (or FORWARDED_ALLOW_IPS) behind
        # the operator's back: the app trusts only DUTYLINE_TRUSTED_PROXIES (app.py).
        proxy_headers=False,
        forwarded_allow_ips="",
        # Open event streams (the console's live incident list) never finish by themselves:
        # at shutdown they get this long, then are closed and the browsers reconnect.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )


def _follow_listen_address(loaded: Loaded, host: str, port: int) -> Settings:
    """Links in notifications name the address `serve` listens on unless a base URL is
    configured; the banner says which one and why."""
    settings = loaded.settings
    source = loaded.sources["base_url"]
    if source == DEFAULT:
        url, wildcard = link_base_url(host, port)
        settings = settings.with_(base_url=url)
        why = (f"--host {host} is no address to link to, so 127.0.0.1" if wildcard
               else "the --host and --port served")
        _echo_links(url, f"{why}; set DUTYLINE_BASE_URL or base_url in the config file to "
                         "the address people open")
    else:
        _echo_links(settings.base_url, "DUTYLINE_BASE_URL" if source == ENVIRONMENT
                    else f"base_url in {source}")
    return settings


def _echo_links(url: str, why: str) -> None:
    click.echo(f"links in notifications use {url} ({why})", err=True)


@main.command()
def worker() -> None:
    """Run only the durable-work loops (no HTTP)."""
    from dutyline.api.observe import configure_logging
    from dutyline.app import build_runtime
    from dutyline.db.migrate import upgrade
    from dutyline.kit import heap
    from dutyline.work.worker import run_standalone

    settings = _settings()  # the extras its settings need are installed, or stop here
    _require_secret_key(settings)
    loaded = _loaded()
    if loaded.sources["base_url"] == DEFAULT:
        # A worker serves nothing: it cannot guess where the API is reached.
        _echo_links(settings.base_url, "the default; set DUTYLINE_BASE_URL or base_url in "
                                       "the config file to the address people open")
    upgrade(settings.database_url)
    configure_logging(settings.log_level, settings.log_json)
    _announce_delivery(settings)
    runtime = build_runtime(settings)
    heap.settle()
    _run_fast(run_standalone(runtime))


def _announce_delivery(settings: Settings) -> None:
    """One line per delivery channel these settings cannot send by, and what to set."""
    from dutyline.api.observe import configure_logging
    from dutyline.notify.delivery.readiness import announce

    configure_logging(settings.log_level, settings.log_json)
    announce(settings)


def _run_fast(main_coro: Any) -> None:
    """Run a long-lived process's loop on uvloop, as `serve` does through uvicorn: its
    sockets, timers and callbacks cost a fraction of asyncio's, and a worker's time is
    mostly database and HTTP round trips. Plain asyncio where uvloop is not installed
    (uvicorn[standard] brings it on every platform that has it)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main_coro)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main_coro)


@main.group("app-key")
def app_key_group() -> None:
    """Issue, list and revoke app keys from the server's shell."""


@app_key_group.command("create")
@click.option("--person-id", type=int, required=True)
@click.option("--name", "key_name", default="cli", show_default=True)
def app_key_create(person_id: int, key_name: str) -> None:
    """Issue a key for a member; the key is printed once."""
    result = asyncio.run(_key_op(_settings(), "create", person_id=person_id,
                                 key_name=key_name))
    click.echo(json.dumps(result))


@app_key_group.command("list")
@click.option("--account-id", type=int, default=None)
def app_key_list(account_id: int | None) -> None:
    """List keys (never the secrets)."""
    listed = asyncio.run(_key_op(_settings(), "list", account_id=account_id))
    click.echo(json.dumps(listed, indent=2))


@app_key_group.command("revoke")
@click.argument("key_id", type=int)
def app_key_revoke(key_id: int) -> None:
    """Revoke a key: it stops working at once."""
    result = asyncio.run(_key_op(_settings(), "revoke", key_id=key_id))
    if not result["revoked"]:
        click.echo(f"no key {key_id}", err=True)
        sys.exit(1)
    click.echo(json.dumps(result))


async def _key_op(settings: Settings, action: str, **kwargs: Any) -> Any:
    """Run one app-key service call in a unit of work of its own, acting for the account the
    named member or key belongs to; a refusal (ApiError) ends the command with its message."""
    from dutyline.api.errors import ApiError
    from dutyline.db.migrate import upgrade

    await asyncio.to_thread(upgrade, settings.database_url)
    try:
        async with Shell(settings) as shell:
            return await _key_service_call(shell, action, **kwargs)
    except ApiError as exc:
        if action == "revoke":
            return {"key_id": kwargs["key_id"], "revoked": False}
        raise click.ClickException(str(exc)) from None


async def _key_service_call(shell: Shell, action: str, **kwargs: Any) -> Any:
    """Issuing and revoking are audited like the API's: one row in the account's log, in the
    unit's transaction, naming the server itself (credential "system") as who acted."""
    from dutyline.api.unit import system_actor, unit
    from dutyline.platform.app_key import service

    async with unit(shell, None, write=True) as work:
        conn = work.conn
        if action == "list":
            return await service.operator_list(conn, account_id=kwargs["account_id"])
        if action == "create":
            person_id = kwargs["person_id"]
            actor = system_actor(await service.account_of_member(conn, person_id=person_id),
                                 shell.clock)
            issued = await service.create_key(conn, actor, key_name=kwargs["key_name"],
                                              person_id=person_id)
            return {"key_id": issued.key_id, "key_name": issued.key_name,
                    "person_id": person_id, "app_key": issued.app_key}
        key_id = kwargs["key_id"]
        actor = system_actor(await service.account_of_key(conn, key_id=key_id), shell.clock)
        await service.delete_key(conn, actor, key_id=key_id)
        return {"key_id": key_id, "revoked": True}


@main.command("notify-test")
@click.option("--member-id", type=int, default=0, help="The member to test.")
@click.option("--email", default="", help="Or the member's e-mail address.")
@click.option("--channel", "channels", multiple=True,
              help="A channel to test (repeatable); default: every channel of the member.")
def notify_test(member_id: int, email: str, channels: tuple[str, ...]) -> None:
    """Send a test notification to a member through each of their channels and print what
    happened at each (sent, failed or skipped, with the reason) as JSON. Exits 1 when
    nothing was sent. Audited, and under the same per-channel cooldown as the API's."""
    from dutyline.api.observe import configure_logging
    from dutyline.db.migrate import upgrade
    from dutyline.notify.cli import run

    if bool(member_id) == bool(email):
        raise click.UsageError("give one of --member-id or --email")
    settings = _settings()
    # Logs go to stderr, so stdout is the answer alone.
    configure_logging(settings.log_level, settings.log_json)
    upgrade(settings.database_url)

    async def send() -> dict[str, Any]:
        async with Shell(settings) as shell:
            return await run(shell, settings, member_id, email, list(channels))

    answer = asyncio.run(send())
    click.echo(json.dumps(answer, indent=2))
    if not any(r["status"] == "sent" for r in answer["results"]):
        sys.exit(1)


@main.group("config")
def config_group() -> None:
    """Inspect the settings this server runs with."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
def config_show(as_json: bool) -> None:
    """Print every setting's effective value (secrets masked) and where it came from:
    default, environment or the config file."""
    loaded = _loaded()
    rows = []
    for spec in TABLE:
        holder = getattr(loaded.settings, spec.group) if spec.group else loaded.settings
        value = masked(spec, getattr(holder, spec.name))
        rows.append({"name": spec.name, "variable": spec.env,
                     "value": list(value) if isinstance(value, tuple) else value,
                     "source": loaded.sources[spec.name]})
    file = str(loaded.file) if loaded.file else None
    if as_json:
        click.echo(json.dumps({"config_file": file, "settings": rows}, indent=2))
        return
    click.echo(f"# config file: {file or f'none (no ./{DEFAULT_CONFIG_FILE})'}")
    width = max(len(r["name"]) for r in rows)
    value_width = min(48, max(len(_shown(r["value"])) for r in rows))
    for r in rows:
        source = r["source"]
        if source == ENVIRONMENT:
            source = f"env {r['variable']}"
        elif source != DEFAULT:
            source = f"file {source}"
        elif r["name"] == "base_url":
            source = "default (serve: the --host and --port it listens on)"
        click.echo(f"{r['name']:<{width}}  {_shown(r['value']):<{value_width}}  [{source}]")


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value) or "(none)"
    return str(value)


main.add_command(doctor)
for _command in DATA_COMMANDS:
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
