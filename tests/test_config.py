"""Settings from the environment over an optional TOML file: one table of names for both,
the environment winning, clear errors for unknown keys and wrong types, masked display."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dutyline.config import (
    TABLE,
    ChatApps,
    ConfigError,
    Settings,
    link_base_url,
    load_settings,
)
from dutyline.kit.settings_table import MASK, mask_url, masked


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory is an empty one: no ./dutyline.toml unless the test writes it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


FILE = """
database_url = "postgresql+asyncpg://app:db-pass@db.internal/dutyline"
base_url = "https://oncall.example.com/"
smtp_url = "smtp://mailer:mail-pass@mail.example.com:587?from=oncall@example.com"
telegram_bot_token = "123:tg-secret"
worker_concurrency = 8
statuspage_rate_per_second = 2
run_workers = false
job_modules = ["tests.work.jobs_for_test"]
log_level = "DEBUG"
slack_bot_token = "xoxb-file"
wecom_agent_id = 1000002
DUTYLINE_FEISHU_APP_ID = "cli_upper"
"""


def test_the_file_gives_every_kind_of_setting_and_says_where_each_came_from(
        in_tmp: Path) -> None:
    path = write(in_tmp / "custom.toml", FILE)
    loaded = load_settings({}, config=path)
    s = loaded.settings
    assert loaded.file == path.resolve()
    assert s.database_url == "postgresql+asyncpg://app:db-pass@db.internal/dutyline"
    assert s.base_url == "https://oncall.example.com"  # a base URL loses its trailing /
    assert s.telegram_bot_token == "123:tg-secret"
    assert (s.worker_concurrency, s.statuspage_rate_per_second) == (8, 2.0)
    assert isinstance(s.statuspage_rate_per_second, float)
    assert s.run_workers is False
    assert s.job_modules == ("tests.work.jobs_for_test",)
    assert s.log_level == "debug"
    # The chat apps' settings are top-level keys too, like their variables.
    assert (s.chat_apps.slack_bot_token, s.chat_apps.wecom_agent_id) == ("xoxb-file", 1000002)
    assert s.chat_apps.feishu_app_id == "cli_upper"  # the variable's spelling as a key
    assert s.chat_apps.dingtalk_api_url == ChatApps().dingtalk_api_url
    assert loaded.sources["worker_concurrency"] == str(path.resolve())
    assert loaded.sources["feishu_app_id"] == str(path.resolve())
    assert loaded.sources["redis_url"] == "default"
    assert set(loaded.sources) == {spec.name for spec in TABLE}


def test_environment_wins_over_the_file_and_an_empty_variable_does_not(in_tmp: Path) -> None:
    path = write(in_tmp / "dutyline.toml", FILE)
    loaded = load_settings({"DUTYLINE_WORKER_CONCURRENCY": "3", "DUTYLINE_RUN_WORKERS": "yes",
                            "DUTYLINE_SLACK_BOT_TOKEN": "xoxb-env", "DUTYLINE_BASE_URL": ""})
    s = loaded.settings
    assert loaded.file == path.resolve()  # ./dutyline.toml is read without --config
    assert (s.worker_concurrency, s.run_workers) == (3, True)
    assert s.chat_apps.slack_bot_token == "xoxb-env"
    assert s.base_url == "https://oncall.example.com"
    assert loaded.sources["worker_concurrency"] == "environment"
    assert loaded.sources["slack_bot_token"] == "environment"
    assert loaded.sources["base_url"] == str(path.resolve())


def test_dutyline_config_names_the_file_and_from_env_reads_no_file(in_tmp: Path) -> None:
    write(in_tmp / "dutyline.toml", "worker_concurrency = 5\n")
    elsewhere = write(in_tmp / "other.toml", "worker_concurrency = 6\n")
    assert load_settings({"DUTYLINE_CONFIG": str(elsewhere)}).settings.worker_concurrency == 6
    assert load_settings({}, config=elsewhere).settings.worker_concurrency == 6
    assert load_settings({}).settings.worker_concurrency == 5
    assert Settings.from_env({}).worker_concurrency == Settings().worker_concurrency


def test_no_file_at_all_is_the_defaults(in_tmp: Path) -> None:
    loaded = load_settings({})
    assert loaded.file is None
    assert loaded.settings == Settings()
    assert set(loaded.sources.values()) == {"default"}


def test_a_named_file_that_is_missing_is_an_error(in_tmp: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: nope\.toml"):
        load_settings({}, config="nope.toml")
    with pytest.raises(ConfigError, match=r"config file not found: gone\.toml"):
        load_settings({"DUTYLINE_CONFIG": "gone.toml"})


@pytest.mark.parametrize(("text", "message"), [
    ("databse_url = 'x'\n", r"unknown setting 'databse_url' \(did you mean 'database_url'\?\)"),
    ("[chat_apps]\nslack_bot_token = 'x'\n", "unknown setting 'chat_apps'"),
    ("worker_concurrency = '4'\n", "worker_concurrency must be an integer, got str '4'"),
    ("run_workers = 'no'\n", "run_workers must be true or false, got str 'no'"),
    ("max_body_bytes = true\n", "max_body_bytes must be an integer, got bool True"),
    ("job_modules = [1, 2]\n", "job_modules must be a list of strings"),
    ("smtp_url = 25\n", "smtp_url must be a string, got int 25"),
    # A secret of the wrong type is not echoed.
    ("telegram_bot_token = 123\n", r"telegram_bot_token must be a string, got int \*\*\*\*\*\*"),
    ("smtp_url = 'a'\nDUTYLINE_SMTP_URL = 'b'\n", "smtp_url is given twice"),
    ("smtp_url = \n", "is not valid TOML"),
])
def test_a_bad_file_is_an_error_naming_the_file_and_the_key(
        in_tmp: Path, text: str, message: str) -> None:
    path = write(in_tmp / "bad.toml", text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings({}, config=path)
    assert str(path.resolve()) in str(caught.value)


@pytest.mark.parametrize(("env", "message"), [
    ({"DUTYLINE_WORKER_CONCURRENCY": "four"}, "DUTYLINE_WORKER_CONCURRENCY must be an integer"),
    ({"DUTYLINE_RUNNER_RELAY_POLL_SECONDS": "soon"},
     "DUTYLINE_RUNNER_RELAY_POLL_SECONDS must be a number"),
    ({"DUTYLINE_LOG_JSON": "maybe"}, "DUTYLINE_LOG_JSON must be one of 1/0"),
])
def test_a_bad_variable_is_an_error_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(env)


def test_secrets_are_marked_on_their_fields_and_masked() -> None:
    by_name = {spec.name: spec for spec in TABLE}
    # Anything named like a credential is marked secret (the app key and id of a chat app
    # are identifiers, not credentials).
    credential_words = ("token", "secret", "password", "api_key")
    for spec in TABLE:
        if any(word in spec.name for word in credential_words):
            assert spec.secret, spec.name
    assert {s.name for s in TABLE if s.secret} == {
        "secret_key", "llm_api_key", "twilio_auth_token", "telegram_bot_token",
        "slack_bot_token", "feishu_app_secret", "dingtalk_app_secret", "wecom_corp_secret",
        "zoom_client_secret"}
    assert masked(by_name["telegram_bot_token"], "123:abc") == MASK
    assert masked(by_name["telegram_bot_token"], None) is None
    assert masked(by_name["smtp_url"], "smtp://bob:hunter2@mail:587?from=a@b") == (
        f"smtp://bob:{MASK}@mail:587?from=a@b")
    assert masked(by_name["redis_url"], "redis://:pw@cache:6379/0") == f"redis://:{MASK}@cache:6379/0"
    assert masked(by_name["database_url"], "sqlite+aiosqlite:///./data/dutyline.db") == (
        "sqlite+aiosqlite:///./data/dutyline.db")
    assert mask_url("https://gw.example/api?api_key=k1&region=eu") == (
        f"https://gw.example/api?api_key={MASK}&region=eu")
    assert "hunter2" not in repr(Settings(secret_key="hunter2"))


@pytest.mark.parametrize(("host", "port", "url", "wildcard"), [
    ("127.0.0.1", 9000, "http://127.0.0.1:9000", False),
    ("0.0.0.0", 8080, "http://127.0.0.1:8080", True),
    ("::", 8080, "http://127.0.0.1:8080", True),
    ("::1", 9000, "http://[::1]:9000", False),
    ("oncall.internal", 80, "http://oncall.internal:80", False),
])
def test_the_link_base_follows_the_listen_address(
        host: str, port: int, url: str, wildcard: bool) -> None:
    assert link_base_url(host, port) == (url, wildcard)


def test_the_example_file_lists_every_setting_with_its_default(in_tmp: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "dutyline.example.toml"
    lines = example.read_text().splitlines()
    keys = [m.group(1) for line in lines if (m := re.match(r"# (\w+) = ", line))]
    assert sorted(keys) == sorted(spec.name for spec in TABLE)
    # Uncommented as it stands, it is a valid file of the defaults (but the example URL).
    uncommented = write(in_tmp / "all.toml", "\n".join(
        line[2:] if re.match(r"# \w+ = ", line) else line for line in lines))
    loaded = load_settings({}, config=uncommented)
    assert loaded.settings == Settings(base_url="https://oncall.example.com")
