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
class ChatApps:
    """The server's own chat-platform apps (bots) that page a person in a direct message and
    post into the group chats a layer names (`*_app` targets). One app per platform per
    server: the reference's IM-app integrations (`data_source_id`) have no operations in the
    contract, so their credentials are settings, like Twilio's. Base URLs are settings so a
    private deployment (Lark instead of Feishu, a proxy) or a test's fake can stand in."""

    slack_api_url: str = "https://slack.com/api"
    slack_bot_token: str | None = field(default=None, repr=False)
    feishu_api_url: str = "https://open.feishu.cn"
    feishu_app_id: str | None = None
    feishu_app_secret: str | None = field(default=None, repr=False)
    dingtalk_api_url: str = "https://api.dingtalk.com"
    dingtalk_app_key: str | None = None
    dingtalk_app_secret: str | None = field(default=None, repr=False)
    # The app's robot; DingTalk's internal apps use the app key as robot code by default.
    dingtalk_robot_code: str | None = None
    wecom_api_url: str = "https://qyapi.weixin.qq.com"
    wecom_corp_id: str | None = None
    wecom_corp_secret: str | None = field(default=None, repr=False)
    wecom_agent_id: int = 0
    zoom_oauth_url: str = "https://zoom.us"
    zoom_api_url: str = "https://api.zoom.us"
    zoom_client_id: str | None = None
    zoom_client_secret: str | None = field(default=None, repr=False)
    zoom_bot_jid: str | None = None
    zoom_account_id: str | None = None

    @classmethod
    def from_env(cls, e: dict[str, str]) -> ChatApps:
        def url(name: str, default: str) -> str:
            return (e.get(name) or default).rstrip("/")

        def opt(name: str) -> str | None:
            return e.get(name) or None

        return cls(
            slack_api_url=url("DUTYLINE_SLACK_API_URL", cls.slack_api_url),
            slack_bot_token=opt("DUTYLINE_SLACK_BOT_TOKEN"),
            feishu_api_url=url("DUTYLINE_FEISHU_API_URL", cls.feishu_api_url),
            feishu_app_id=opt("DUTYLINE_FEISHU_APP_ID"),
            feishu_app_secret=opt("DUTYLINE_FEISHU_APP_SECRET"),
            dingtalk_api_url=url("DUTYLINE_DINGTALK_API_URL", cls.dingtalk_api_url),
            dingtalk_app_key=opt("DUTYLINE_DINGTALK_APP_KEY"),
            dingtalk_app_secret=opt("DUTYLINE_DINGTALK_APP_SECRET"),
            dingtalk_robot_code=opt("DUTYLINE_DINGTALK_ROBOT_CODE"),
            wecom_api_url=url("DUTYLINE_WECOM_API_URL", cls.wecom_api_url),
            wecom_corp_id=opt("DUTYLINE_WECOM_CORP_ID"),
            wecom_corp_secret=opt("DUTYLINE_WECOM_CORP_SECRET"),
            wecom_agent_id=_int(e, "DUTYLINE_WECOM_AGENT_ID", 0),
            zoom_oauth_url=url("DUTYLINE_ZOOM_OAUTH_URL", cls.zoom_oauth_url),
            zoom_api_url=url("DUTYLINE_ZOOM_API_URL", cls.zoom_api_url),
            zoom_client_id=opt("DUTYLINE_ZOOM_CLIENT_ID"),
            zoom_client_secret=opt("DUTYLINE_ZOOM_CLIENT_SECRET"),
            zoom_bot_jid=opt("DUTYLINE_ZOOM_BOT_JID"),
            zoom_account_id=opt("DUTYLINE_ZOOM_ACCOUNT_ID"),
        )


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
    chat_apps: ChatApps = field(default_factory=ChatApps)
    max_body_bytes: int = 1024 * 1024
    rate_limit_per_second: int = 50
    rate_limit_per_minute: int = 1000
    # Durable-work loops run inside `serve` unless turned off (then run `dutyline worker`).
    run_workers: bool = True
    worker_concurrency: int = 4
    # How often a process polls the runner_task rows it relays (aisre/runner/hub.py); with
    # Redis, rings wake it sooner and this is only the fallback.
    runner_relay_poll_seconds: float = 0.2
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
            chat_apps=ChatApps.from_env(e),
            max_body_bytes=_int(e, "DUTYLINE_MAX_BODY_BYTES", 1024 * 1024),
            rate_limit_per_second=_int(e, "DUTYLINE_RATE_LIMIT_PER_SECOND", 50),
            rate_limit_per_minute=_int(e, "DUTYLINE_RATE_LIMIT_PER_MINUTE", 1000),
            run_workers=_bool(get("DUTYLINE_RUN_WORKERS"), True),
            worker_concurrency=_int(e, "DUTYLINE_WORKER_CONCURRENCY", 4),
            runner_relay_poll_seconds=float(
                get("DUTYLINE_RUNNER_RELAY_POLL_SECONDS") or 0.2),
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
