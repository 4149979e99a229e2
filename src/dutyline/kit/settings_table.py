"""One table of settings read from a dataclass's fields, so the environment, the config file
and `dutyline config show` agree on every name, type and secret without a hand-kept list.

Each setting has one name: the field's (`smtp_url`), which is the key in the TOML file, and
its variable `DUTYLINE_` + the name upper-cased (`DUTYLINE_SMTP_URL`). The file may also
spell a key as the variable. A value comes from the environment if set there (non-empty),
else from the file, else the field's default; where it came from is kept for display."""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ENV_PREFIX = "DUTYLINE_"
MASK = "******"
DEFAULT = "default"
ENVIRONMENT = "environment"

# Field metadata keys.
SECRET = "secret"  # never shown, never in repr
TRIM_SLASH = "trim_slash"  # a base URL: a trailing "/" would double in joined paths
LOWER = "lower"  # a case-insensitive word (a log level)
GROUP = "group"  # a nested dataclass whose fields are settings at the top level
NOT_A_SETTING = "not_a_setting"  # set in code only (tests' knobs)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# Query parameters of a URL setting whose values are masked on display.
_SECRET_QUERY_WORDS = ("pass", "secret", "token", "key", "auth")


class ConfigError(ValueError):
    """A setting that cannot be read: the message names the key (or variable) and the
    source, and is meant for the operator as is."""


def secret(default: Any = None) -> Any:
    return dataclasses.field(default=default, repr=False, metadata={SECRET: True})


def url_setting(default: str) -> Any:
    return dataclasses.field(default=default, metadata={TRIM_SLASH: True})


def lowered(default: str) -> Any:
    return dataclasses.field(default=default, metadata={LOWER: True})


@dataclass(frozen=True)
class Spec:
    name: str  # the field and file key
    kind: str  # str, opt_str, bool, int, float, list
    group: str | None  # the nested dataclass field holding it, or None
    secret: bool
    trim_slash: bool
    lower: bool

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


# Annotations as written in the dataclasses (postponed evaluation keeps them strings).
_KINDS = {"str": "str", "str | None": "opt_str", "bool": "bool", "int": "int",
          "float": "float", "tuple[str, ...]": "list"}


def table_of(cls: type[Any], group: str | None = None) -> list[Spec]:
    """The settings of a dataclass, nested groups flattened into the same namespace."""
    out: list[Spec] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get(NOT_A_SETTING):
            continue
        if f.metadata.get(GROUP):
            assert callable(f.default_factory)
            out += table_of(type(f.default_factory()), group=f.name)
            continue
        kind = _KINDS.get(str(f.type))
        if kind is None:
            raise TypeError(f"setting {f.name}: no reader for the type {f.type!r}")
        out.append(Spec(f.name, kind, group, bool(f.metadata.get(SECRET)),
                        bool(f.metadata.get(TRIM_SLASH)), bool(f.metadata.get(LOWER))))
    names = [s.name for s in out]
    assert len(names) == len(set(names)), "a nested setting shadows another"
    return out


# --- reading -------------------------------------------------------------------------------


def _normal(spec: Spec, value: Any) -> Any:
    if isinstance(value, str):
        if spec.trim_slash:
            value = value.rstrip("/")
        if spec.lower:
            value = value.lower()
    return value


def from_env_text(spec: Spec, raw: str) -> Any:
    """A variable's text as the setting's value; ConfigError names the variable."""
    kind = spec.kind
    if kind in ("str", "opt_str"):
        return _normal(spec, raw)
    if kind == "list":
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    if kind == "bool":
        word = raw.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ConfigError(f"{spec.env} must be one of 1/0, true/false, yes/no, on/off; "
                          f"got {raw!r}")
    try:
        return int(raw) if kind == "int" else float(raw)
    except ValueError:
        what = "an integer" if kind == "int" else "a number"
        raise ConfigError(f"{spec.env} must be {what}, got {raw!r}") from None


def from_file_value(spec: Spec, value: Any, where: str) -> Any:
    """A TOML value as the setting's value; ConfigError names the file and the key."""
    kind = spec.kind
    if kind in ("str", "opt_str") and isinstance(value, str):
        return _normal(spec, value)
    if kind == "list":
        if isinstance(value, str):
            return from_env_text(spec, value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(v.strip() for v in value if v.strip())
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    wanted = {"str": "a string", "opt_str": "a string", "bool": "true or false",
              "int": "an integer", "float": "a number",
              "list": "a list of strings"}[kind]
    raise ConfigError(f"{where}: {spec.name} must be {wanted}, got "
                      f"{type(value).__name__} {_shown(spec, value)}")


def _shown(spec: Spec, value: Any) -> str:
    return MASK if spec.secret else repr(value)


def read_file(path: Path, table: list[Spec]) -> dict[str, Any]:
    """{name: value} from a TOML file; an unknown key, a key given twice (by its name and by
    its variable) or a value of the wrong type is a ConfigError."""
    where = str(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {where}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {where}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from None
    by_key = {s.name: s for s in table} | {s.env: s for s in table}
    out: dict[str, Any] = {}
    for key, value in data.items():
        spec = by_key.get(key)
        if spec is None:
            close = difflib.get_close_matches(key.lower(), [s.name for s in table], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown setting {key!r}{hint}")
        if spec.name in out:
            raise ConfigError(f"{where}: {spec.name} is given twice (as {spec.name} and "
                              f"{spec.env})")
        out[spec.name] = from_file_value(spec, value, where)
    return out


def resolve(table: list[Spec], env: Mapping[str, str], file_values: Mapping[str, Any],
            file_label: str) -> tuple[dict[str | None, dict[str, Any]], dict[str, str]]:
    """The values that are not defaults, by group, and where every setting came from. An
    empty variable counts as unset, as it always has."""
    values: dict[str | None, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    for spec in table:
        raw = env.get(spec.env)
        if raw:
            value, sources[spec.name] = from_env_text(spec, raw), ENVIRONMENT
        elif spec.name in file_values:
            value, sources[spec.name] = file_values[spec.name], file_label
        else:
            sources[spec.name] = DEFAULT
            continue
        if spec.kind == "opt_str" and value == "":
            value = None
        values.setdefault(spec.group, {})[spec.name] = value
    return values, sources


# --- display -------------------------------------------------------------------------------


def masked(spec: Spec, value: Any) -> Any:
    """The value as `config show` prints it: a secret as ******, a URL without the password
    in it or in a secret-looking query parameter."""
    if value is None:
        return None
    if spec.secret:
        return MASK
    if isinstance(value, str) and "://" in value:
        return mask_url(value)
    return value


def mask_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        has_password = parts.password is not None
    except ValueError:
        return MASK
    netloc = parts.netloc
    if has_password:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}"
    query = "&".join(
        f"{k}={MASK}" if sep and any(w in k.lower() for w in _SECRET_QUERY_WORDS)
        else f"{k}{sep}{v}"
        for k, sep, v in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    if netloc == parts.netloc and query == parts.query:
        return url  # nothing to hide: as written (a round trip may respell it)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
