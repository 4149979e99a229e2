"""`dutyline doctor`: checks what a server needs before and while it runs, and prints, for each
thing wrong, what to set. Run it with the server's own settings (the same environment file,
config file and working directory), on the machine that runs it.

Each check is one line: `ok`, `warn` (works, but not as a deployment would want) or `FAIL`
(something will not work), with a `->` line saying what to do. The command exits 1 when any
check failed. Nothing is written: the database is not migrated, no key file is created, no
mail is sent."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import click
import httpx
from sqlalchemy import text

from dutyline.config import ConfigError, Loaded, Settings, load_settings
from dutyline.kit import extras
from dutyline.kit.mail import MailError, hello
from dutyline.kit.settings_table import DEFAULT, ENVIRONMENT
from dutyline.kit.url_secrets import mask_url

Status = Literal["ok", "warn", "FAIL"]
TIMEOUT_S = 5.0
# Clocks further apart than this make leases, signed links and rate windows misjudge time.
MAX_SKEW_S = 2.0
MIN_SECRET_KEY_CHARS = 32


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Findings:
    checks: list[Check] = field(default_factory=list)
    # Other clocks read along the way: (whose, their time minus ours, in seconds).
    clocks: list[tuple[str, float]] = field(default_factory=list)

    def add(self, name: str, status: Status, detail: str, fix: str = "") -> None:
        self.checks.append(Check(name, status, detail, fix))

    @property
    def failed(self) -> bool:
        return any(c.status == "FAIL" for c in self.checks)


def run(config_file: str | None) -> Findings:
    found = Findings()
    loaded = _configuration(found, config_file)
    if loaded is not None:
        _secret_key(found, loaded.settings)
        asyncio.run(_services(found, loaded))
        _clock(found)
    return found


def _configuration(found: Findings, config_file: str | None) -> Loaded | None:
    try:
        loaded = load_settings(config=config_file)
    except ConfigError as exc:
        found.add("configuration", "FAIL", str(exc),
                  "correct the file or the variable named; `dutyline config show` lists "
                  "every setting")
        return None
    settings = loaded.settings
    where = (f"{loaded.file} and the environment" if loaded.file
             else "the environment alone (no ./dutyline.toml)")
    changed = sum(1 for source in loaded.sources.values() if source != DEFAULT)
    problems = extras.missing(extras.needed_for(
        database_url=settings.database_url, redis_url=settings.redis_url, otel=settings.otel))
    if problems:
        found.add("configuration", "FAIL", f"read from {where}; " + "; ".join(problems),
                  "install the extra named")
        return None
    found.add("configuration", "ok", f"read from {where}: {changed} settings set")
    return loaded


def _secret_key(found: Findings, settings: Settings) -> None:
    if settings.secret_key:
        if len(settings.secret_key) < MIN_SECRET_KEY_CHARS:
            found.add("secret key", "warn",
                      f"DUTYLINE_SECRET_KEY is {len(settings.secret_key)} characters long",
                      f"use at least {MIN_SECRET_KEY_CHARS} random characters (python3 -c "
                      "\"import secrets; print(secrets.token_urlsafe(32))\")")
        else:
            found.add("secret key", "ok", "set (DUTYLINE_SECRET_KEY)")
        return
    db_path = settings.sqlite_path()
    if db_path is None:
        found.add("secret key", "FAIL", "DUTYLINE_SECRET_KEY is not set: off SQLite every "
                  "process must share one, and serve and worker refuse to start without it",
                  "set DUTYLINE_SECRET_KEY to the same random value on every machine "
                  "(python3 -c \"import secrets; print(secrets.token_urlsafe(32))\")")
        return
    key_file = db_path.parent / "secret.key"
    if key_file.exists():
        found.add("secret key", "ok", f"kept beside the database in {key_file.resolve()} "
                  "(back it up with the database)")
    else:
        found.add("secret key", "ok", f"serve will generate it in {key_file.resolve()} on "
                  "its first start (back it up with the database)")


async def _services(found: Findings, loaded: Loaded) -> None:
    settings = loaded.settings
    await _database(found, settings)
    await _redis(found, settings)
    await _smtp(found, settings)
    await _base_url(found, loaded)


async def _database(found: Findings, settings: Settings) -> None:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from dutyline.db.engine import Database
    from dutyline.db.migrate import MIGRATIONS_DIR

    shown = mask_url(settings.database_url)
    path = settings.sqlite_path()
    if path is not None and not path.exists():
        found.add("database", "warn", f"{shown}: no database file yet",
                  "`dutyline serve` (or `dutyline migrate`) creates it")
        return
    db = Database(settings.database_url)
    try:
        async with db.connect() as conn:
            await conn.execute(text("SELECT 1"))
            if not settings.is_sqlite:
                now = (await conn.execute(text("SELECT extract(epoch from now())")))
                found.clocks.append(("PostgreSQL", float(now.scalar_one()) - time.time()))
            current = await conn.run_sync(
                lambda sync: MigrationContext.configure(sync).get_current_heads())
    except Exception as exc:  # what the driver says is the finding
        found.add("database", "FAIL", f"{shown}: {type(exc).__name__}: {exc}",
                  "check DUTYLINE_DATABASE_URL and that the database server runs")
        return
    finally:
        await db.dispose()
    found.add("database", "ok", f"{shown}: connected")
    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    head = scripts.get_current_head()
    known = {rev.revision for rev in scripts.walk_revisions()}
    if not current:
        found.add("migrations", "warn", "the database is empty (no migration applied)",
                  "`dutyline serve` applies them at start, or run `dutyline migrate`")
    elif any(rev not in known for rev in current):
        found.add("migrations", "FAIL", f"the database is at {', '.join(current)}, which this "
                  "dutyline does not know: a newer version migrated it",
                  "run the newer dutyline (or restore a backup made for this version)")
    elif tuple(current) != (head,):
        pending = [rev.revision for rev in scripts.iterate_revisions(head, current[0])]
        found.add("migrations", "warn", f"{len(pending)} pending (at {current[0]}, "
                  f"head {head})", "run `dutyline migrate` once, then restart every process")
    else:
        found.add("migrations", "ok", f"at head ({head})")


async def _redis(found: Findings, settings: Settings) -> None:
    if not settings.redis_url:
        return
    import redis.asyncio as aioredis

    shown = mask_url(settings.redis_url)
    client = aioredis.from_url(settings.redis_url, socket_timeout=TIMEOUT_S,
                               socket_connect_timeout=TIMEOUT_S)
    try:
        await client.ping()
        seconds, micros = await client.time()
        found.clocks.append(("Redis", seconds + micros / 1e6 - time.time()))
    except Exception as exc:  # what the client says is the finding
        found.add("redis", "FAIL", f"{shown}: {type(exc).__name__}: {exc}",
                  "check DUTYLINE_REDIS_URL and that Redis runs (or unset it on one process)")
        return
    finally:
        await client.aclose()
    found.add("redis", "ok", f"{shown}: answered PING")


async def _smtp(found: Findings, settings: Settings) -> None:
    if not settings.smtp_url:
        found.add("e-mail", "warn", "DUTYLINE_SMTP_URL is not set: nobody is paged by "
                  "e-mail, and the console sends no password resets",
                  "set DUTYLINE_SMTP_URL (smtp://user:password@relay.example.com:587"
                  "?from=oncall@example.com)")
        return
    try:
        answered = await hello(settings)
    except MailError as exc:
        found.add("e-mail", "FAIL", str(exc),
                  "check the host, port, starttls and credentials of DUTYLINE_SMTP_URL")
        return
    found.add("e-mail", "ok", answered)


async def _base_url(found: Findings, loaded: Loaded) -> None:
    settings, source = loaded.settings, loaded.sources["base_url"]
    url = settings.base_url.rstrip("/")
    configured = source != DEFAULT
    origin = ("DUTYLINE_BASE_URL" if source == ENVIRONMENT
              else f"base_url in {source}" if configured else "the default")
    set_it = ("set DUTYLINE_BASE_URL (or base_url) to the address people open, such as "
              "https://oncall.example.com")
    # The operator's own address, asked from the operator's machine: not a user's URL, so
    # not through the outbound guard (which would refuse the usual loopback or private one).
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as client:
            answer = await client.get(f"{url}/healthz")
    except httpx.HTTPError as exc:
        unconfigured = "" if configured else "not configured, and "
        found.add("base URL", "FAIL", f"{unconfigured}{url} ({origin}) does not answer from "
                  f"here: {type(exc).__name__}: {exc}",
                  "start the server" + ("; " + set_it if not configured else
                                        ", or correct DUTYLINE_BASE_URL (behind a proxy: the "
                                        "proxy's address)"))
        return
    stated = answer.headers.get("date")
    if stated:
        parsed = email.utils.parsedate_to_datetime(stated)
        found.clocks.append((f"the server at {url}", parsed.timestamp() - time.time()))
    if answer.status_code != 200 or not answer.text.startswith('{"status":"ok"'):
        found.add("base URL", "FAIL", f"{url}/healthz ({origin}) answered "
                  f"{answer.status_code}, not dutyline's health check",
                  "point DUTYLINE_BASE_URL at dutyline (behind a proxy: check its "
                  "configuration, docs/deploy.md)")
    elif not configured:
        found.add("base URL", "warn", f"not configured: links in mails and commands name "
                  f"{url}, which answers here but may not be where people reach it", set_it)
    else:
        found.add("base URL", "ok", f"{url} ({origin}) answers /healthz")


def _clock(found: Findings) -> None:
    now = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    if not found.clocks:
        found.add("clock", "ok", f"{now}; no other clock to compare with (keep NTP on)")
        return
    worst_name, worst = max(found.clocks, key=lambda c: abs(c[1]))
    # An HTTP Date has whole seconds: a second of difference is its rounding.
    if abs(worst) > MAX_SKEW_S:
        found.add("clock", "FAIL", f"{now}; {worst_name} is {worst:+.1f} s off this machine",
                  "synchronise the clocks of every machine (NTP: systemd-timesyncd, chrony)")
        return
    names = ", ".join(name for name, _ in found.clocks)
    found.add("clock", "ok", f"{now}; within {MAX_SKEW_S:.0f} s of {names}")


def report(found: Findings, echo: Callable[[str], None]) -> None:
    width = max(len(c.name) for c in found.checks)
    for c in found.checks:
        echo(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix and c.status != "ok":
            echo(f"{'':<4}  {'':<{width}}  -> {c.fix}")
    failed = sum(1 for c in found.checks if c.status == "FAIL")
    warned = sum(1 for c in found.checks if c.status == "warn")
    echo(f"\n{failed} failed, {warned} to look at, "
         f"{len(found.checks) - failed - warned} ok")


@click.command()
@click.pass_context
def doctor(ctx: click.Context) -> None:
    """Check the configuration, the database and its migrations, Redis, the SMTP server,
    the base URL, the secret key and the clock; print what is wrong and what to set."""
    found = run(ctx.find_root().params.get("config_file"))
    report(found, click.echo)
    if found.failed:
        ctx.exit(1)

