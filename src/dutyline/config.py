"""Settings from the environment (DUTYLINE_*), built once and passed down; no globals."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dutyline.kit.private_files import private_dir

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./data/dutyline.db"


def _bool(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    secret_key: str | None = None
    allow_private_network: bool = False
    base_url: str = "http://127.0.0.1:8080"
    smtp_url: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str | None = None
    statuspage_api_url: str = "https://api.statuspage.io/v1"
    # Requests per second to the Statuspage API during a migration (its limit is 1); 0 lifts
    # our pacing (a raised quota, the bench).
    statuspage_rate_per_second: float = 1.0
    # SMS and voice through a Twilio-compatible HTTP API; Telegram through its bot API. The
    # base URLs are settings so a self-hosted gateway (or a test's fake) can stand in.
    twilio_api_url: str = "https://api.twilio.com"
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = field(default=None, repr=False)
    twilio_from_number: str | None = None
    telegram_api_url: str = "https://api.telegram.org"
    telegram_bot_token: str | None = field(default=None, repr=False)
    max_body_bytes: int = 1024 * 1024
    rate_limit_per_second: int = 50
    rate_limit_per_minute: int = 1000
    # Durable-work loops run inside `serve` unless turned off (then run `dutyline worker`).
    run_workers: bool = True
    worker_concurrency: int = 4
    job_lease_seconds: int = 30
    # Done jobs older than this are pruned by the workers (dead ones are kept for inspection).
    job_retention_days: int = 7
    # Extra importable modules whose job handlers register on import (comma-separated env).
    job_modules: tuple[str, ...] = ()
    log_level: str = "info"
    log_json: bool = True
    # Wrap the app in OpenTelemetry's ASGI middleware (needs the `otel` extra).
    otel: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        get = e.get
        return cls(
            database_url=get("DUTYLINE_DATABASE_URL") or DEFAULT_DATABASE_URL,
            redis_url=get("DUTYLINE_REDIS_URL") or None,
            secret_key=get("DUTYLINE_SECRET_KEY") or None,
            allow_private_network=_bool(get("DUTYLINE_ALLOW_PRIVATE_NETWORK"), False),
            base_url=(get("DUTYLINE_BASE_URL") or "http://127.0.0.1:8080").rstrip("/"),
            smtp_url=get("DUTYLINE_SMTP_URL") or None,
            llm_base_url=get("DUTYLINE_LLM_BASE_URL") or None,
            llm_api_key=get("DUTYLINE_LLM_API_KEY") or None,
            llm_model=get("DUTYLINE_LLM_MODEL") or None,
            statuspage_api_url=get("DUTYLINE_STATUSPAGE_API_URL")
            or "https://api.statuspage.io/v1",
            statuspage_rate_per_second=float(get("DUTYLINE_STATUSPAGE_RATE_PER_SECOND") or 1.0),
            twilio_api_url=(get("DUTYLINE_TWILIO_API_URL")
                            or "https://api.twilio.com").rstrip("/"),
            twilio_account_sid=get("DUTYLINE_TWILIO_ACCOUNT_SID") or None,
            twilio_auth_token=get("DUTYLINE_TWILIO_AUTH_TOKEN") or None,
            twilio_from_number=get("DUTYLINE_TWILIO_FROM_NUMBER") or None,
            telegram_api_url=(get("DUTYLINE_TELEGRAM_API_URL")
                              or "https://api.telegram.org").rstrip("/"),
            telegram_bot_token=get("DUTYLINE_TELEGRAM_BOT_TOKEN") or None,
            max_body_bytes=_int(e, "DUTYLINE_MAX_BODY_BYTES", 1024 * 1024),
            rate_limit_per_second=_int(e, "DUTYLINE_RATE_LIMIT_PER_SECOND", 50),
            rate_limit_per_minute=_int(e, "DUTYLINE_RATE_LIMIT_PER_MINUTE", 1000),
            run_workers=_bool(get("DUTYLINE_RUN_WORKERS"), True),
            worker_concurrency=_int(e, "DUTYLINE_WORKER_CONCURRENCY", 4),
            job_lease_seconds=_int(e, "DUTYLINE_JOB_LEASE_SECONDS", 30),
            job_retention_days=_int(e, "DUTYLINE_JOB_RETENTION_DAYS", 7),
            job_modules=tuple(
                m.strip() for m in (get("DUTYLINE_JOB_MODULES") or "").split(",") if m.strip()
            ),
            log_level=(get("DUTYLINE_LOG_LEVEL") or "info").lower(),
            log_json=_bool(get("DUTYLINE_LOG_JSON"), True),
            otel=_bool(get("DUTYLINE_OTEL"), False),
        )

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def sqlite_path(self) -> Path | None:
        if not self.is_sqlite:
            return None
        _, _, rest = self.database_url.partition(":///")
        if not rest or rest.startswith(":memory:"):
            return None
        return Path(rest)

    def resolved_secret_key(self) -> str:
        """The key that encrypts third-party secrets at rest.

        On the embedded default it is generated once and kept beside the database file, so a
        new user need not invent one; with PostgreSQL the operator must set it, since several
        machines must share it."""
        if self.secret_key:
            return self.secret_key
        db_path = self.sqlite_path()
        if db_path is None:
            raise RuntimeError("DUTYLINE_SECRET_KEY must be set when not on a SQLite file")
        key_file = db_path.parent / "secret.key"
        if key_file.exists():
            return key_file.read_text().strip()
        private_dir(key_file.parent)
        key = secrets.token_urlsafe(32)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key)
        return key
