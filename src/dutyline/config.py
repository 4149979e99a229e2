"""Settings from the environment (DUTYLINE_*) over an optional TOML file (dutyline.toml),
built once and passed down; no globals. The dataclass fields below are the one table of
settings (kit/settings_table.py): a field `smtp_url` is the file's key `smtp_url` and the
variable DUTYLINE_SMTP_URL; a secret is marked on its field."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dutyline.kit.private_files import private_dir
from dutyline.kit.settings_table import (
    GROUP,
    NOT_A_SETTING,
    ConfigError,
    Spec,
    lowered,
    read_file,
    resolve,
    secret,
    table_of,
    url_setting,
)

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./data/dutyline.db"
# Read from the working directory when present; --config (or this variable) names another.
DEFAULT_CONFIG_FILE = "dutyline.toml"
CONFIG_ENV = "DUTYLINE_CONFIG"

__all__ = ["CONFIG_ENV", "DEFAULT_CONFIG_FILE", "TABLE", "ChatApps", "ConfigError", "Loaded",
           "Settings", "link_base_url", "load_settings"]


@dataclass(frozen=True)
class ChatApps:
    """The server's own chat-platform apps (bots) that page a person in a direct message and
    post into the group chats a layer names (`*_app` targets). One app per platform per
    server: the reference's IM-app integrations (`data_source_id`) have no operations in the
    contract, so their credentials are settings, like Twilio's. Base URLs are settings so a
    private deployment (Lark instead of Feishu, a proxy) or a test's fake can stand in."""

    slack_api_url: str = url_setting("https://slack.com/api")
    slack_bot_token: str | None = secret()
    feishu_api_url: str = url_setting("https://open.feishu.cn")
    feishu_app_id: str | None = None
    feishu_app_secret: str | None = secret()
    dingtalk_api_url: str = url_setting("https://api.dingtalk.com")
    dingtalk_app_key: str | None = None
    dingtalk_app_secret: str | None = secret()
    # The app's robot; DingTalk's internal apps use the app key as robot code by default.
    dingtalk_robot_code: str | None = None
    # War rooms on DingTalk are scene groups made from a template of the developer console
    # (with the robot in it), through the server API of oapi.dingtalk.com.
    dingtalk_oapi_url: str = url_setting("https://oapi.dingtalk.com")
    dingtalk_scene_group_template_id: str | None = None
    wecom_api_url: str = url_setting("https://qyapi.weixin.qq.com")
    wecom_corp_id: str | None = None
    wecom_corp_secret: str | None = secret()
    wecom_agent_id: int = 0
    zoom_oauth_url: str = url_setting("https://zoom.us")
    zoom_api_url: str = url_setting("https://api.zoom.us")
    zoom_client_id: str | None = None
    zoom_client_secret: str | None = secret()
    zoom_bot_jid: str | None = None
    zoom_account_id: str | None = None
    # Incident war rooms (group chats an incident opens) through the Slack, Feishu and
    # DingTalk apps above; off: the apps still page, but offer no war rooms.
    war_rooms: bool = True


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    # PostgreSQL connections a process keeps open (and as many more opened for a burst, closed
    # after it): size it to the requests one process has in flight at once.
    database_pool_size: int = 20
    redis_url: str | None = None
    secret_key: str | None = secret()
    allow_private_network: bool = False
    base_url: str = url_setting("http://127.0.0.1:8080")
    smtp_url: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = secret()
    llm_model: str | None = None
    statuspage_api_url: str = "https://api.statuspage.io/v1"
    # Requests per second to the Statuspage API during a migration (its limit is 1); 0 lifts
    # our pacing (a raised quota, the bench).
    statuspage_rate_per_second: float = 1.0
    # SMS and voice through a Twilio-compatible HTTP API; Telegram through its bot API. The
    # base URLs are settings so a self-hosted gateway (or a test's fake) can stand in.
    twilio_api_url: str = url_setting("https://api.twilio.com")
    twilio_account_sid: str | None = None
    twilio_auth_token: str | None = secret()
    twilio_from_number: str | None = None
    telegram_api_url: str = url_setting("https://api.telegram.org")
    telegram_bot_token: str | None = secret()
    chat_apps: ChatApps = field(default_factory=ChatApps, metadata={GROUP: True})
    # Reverse proxies (addresses or CIDRs) whose X-Forwarded-For and X-Forwarded-Proto name
    # the client; from any other peer they are ignored. Empty: the peer is the client.
    trusted_proxies: tuple[str, ...] = ()
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
    # How long per-event rows are kept (days; 0 keeps them forever). A scheduled job
    # (work/retention.py) deletes older ones hourly, a few hundred rows per transaction.
    # Audit entries, and the events and deliveries of closed incidents (which insights
    # and the incident timeline read, over windows of up to a year), are kept long.
    audit_retention_days: int = 400
    incident_event_retention_days: int = 400
    delivery_retention_days: int = 400
    # Each delivery attempt's request and answer (the webhook history).
    delivery_attempt_retention_days: int = 30
    # Raw events of alerts that have ended (an active alert keeps its events).
    alert_event_retention_days: int = 30
    # Per-event claims of channel notification rules (sent once per rule and event).
    notify_claim_retention_days: int = 3
    # Console sessions and one-time links once expired, and sign-in failure counters.
    expired_sign_in_retention_days: int = 3
    # Rows deleted per transaction: small, so pruning never holds SQLite's writer long.
    retention_batch_rows: int = 500
    # Extra importable modules whose job handlers register on import (comma-separated env).
    job_modules: tuple[str, ...] = ()
    log_level: str = lowered("info")
    log_json: bool = True
    # Wrap the app in OpenTelemetry's ASGI middleware (needs the `otel` extra).
    otel: bool = False
    # Knobs set in code only (the tests' loopback allowances), never from env or file.
    extra: dict[str, Any] = field(default_factory=dict, metadata={NOT_A_SETTING: True})

    def __post_init__(self) -> None:
        for proxy in self.trusted_proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ConfigError(f"DUTYLINE_TRUSTED_PROXIES: {proxy!r} is not an IP address "
                                  "or network (CIDR)") from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The variables alone (no file), over the defaults."""
        return _build(TABLE, os.environ if env is None else env, {}, "")[0]

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None,
             config: str | Path | None = None) -> Settings:
        """The variables over the config file (see load_settings)."""
        return load_settings(env, config).settings

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


TABLE: list[Spec] = table_of(Settings)


@dataclass(frozen=True)
class Loaded:
    """The effective settings, where each came from (`default`, `environment` or the config
    file's path) and the file read, if any."""

    settings: Settings
    sources: dict[str, str]
    file: Path | None


def config_path(env: Mapping[str, str], config: str | Path | None) -> Path | None:
    """The file to read: the one named (--config, else DUTYLINE_CONFIG), which must exist,
    else ./dutyline.toml when there is one."""
    named = config or env.get(CONFIG_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {named}")
        return path.resolve()
    default = Path(DEFAULT_CONFIG_FILE)
    return default.resolve() if default.is_file() else None


def load_settings(env: Mapping[str, str] | None = None,
                  config: str | Path | None = None) -> Loaded:
    """Environment variables win over the file, the file over the defaults. An unknown key,
    a value of the wrong type or a missing named file raises ConfigError."""
    env = os.environ if env is None else env
    path = config_path(env, config)
    file_values = read_file(path, TABLE) if path else {}
    settings, sources = _build(TABLE, env, file_values, str(path))
    return Loaded(settings, sources, path)


def _build(table: list[Spec], env: Mapping[str, str], file_values: Mapping[str, Any],
           file_label: str) -> tuple[Settings, dict[str, str]]:
    values, sources = resolve(table, env, file_values, file_label)
    top = Settings(**values.get(None, {}))
    groups = {name: replace(getattr(top, name), **vals)
              for name, vals in values.items() if name is not None}
    return replace(top, **groups), sources


# Addresses a server listens on that no browser can open.
_ANY_ADDRESS = {"0.0.0.0", "::", ""}


def link_base_url(host: str, port: int) -> tuple[str, bool]:
    """The base of links when none is configured: the address `serve` listens on, with a
    wildcard host replaced by 127.0.0.1 (the flag says it was)."""
    wildcard = host in _ANY_ADDRESS
    if wildcard:
        host = "127.0.0.1"
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass  # a host name
    return f"http://{host}:{port}", wildcard
