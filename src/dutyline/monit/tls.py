"""The TLS settings of a data source (reference `DSPrometheusConfig`, after Go's
TLSClientConfig) as the SSL context of the client that queries it.

- `tls_ca`: PEM of the CA(s) that sign the server's certificate; given, it *replaces* the
  system bundle (as Go's RootCAs does), so a private CA does not widen what else is trusted.
- `tls_cert` + `tls_key` (+ `tls_key_pwd` for an encrypted key): the client certificate for a
  server that asks for one (mutual TLS).
- `tls_skip_verify`: no certificate or host name check at all (a lab's self-signed server).
- `tls_server_name`: the name sent as SNI and checked against the certificate, when the
  address names the server otherwise (an IP, a load balancer).
- `tls_min_version` / `tls_max_version`: `1.0` ... `1.3` (also `TLS12`, `tls1.2`).

Contexts are cached per settings (building one with the system bundle costs ~90 ms of CPU),
and Python's ssl module reads a certificate chain only from files: the key is written to a
private temporary directory for the instant of loading and removed at once."""

from __future__ import annotations

import functools
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import certifi

from dutyline.monit.schemas import DSPrometheusConfig

_VERSIONS = {
    "1.0": ssl.TLSVersion.TLSv1, "1.1": ssl.TLSVersion.TLSv1_1,
    "1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3,
}


class TlsInvalid(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclass(frozen=True)
class TlsSettings:
    ca: str = ""
    cert: str = ""
    key: str = ""
    key_pwd: str = ""
    skip_verify: bool = False
    server_name: str = ""
    min_version: str = ""
    max_version: str = ""

    @property
    def is_default(self) -> bool:
        """Nothing asks for a context of its own (the server name is a request setting)."""
        return not (self.ca or self.cert or self.key or self.skip_verify or self.min_version
                    or self.max_version)


def settings_of(cfg: DSPrometheusConfig) -> TlsSettings:
    return TlsSettings(
        ca=cfg.tls_ca.strip(), cert=cfg.tls_cert.strip(), key=cfg.tls_key.strip(),
        key_pwd=cfg.tls_key_pwd, skip_verify=cfg.tls_skip_verify,
        server_name=cfg.tls_server_name.strip(), min_version=cfg.tls_min_version.strip(),
        max_version=cfg.tls_max_version.strip(),
    )


def _version(text: str, field: str) -> ssl.TLSVersion | None:
    if not text:
        return None
    key = text.lower().removeprefix("tlsv").removeprefix("tls").strip()
    if key.isdigit() and len(key) == 2:  # "TLS12"
        key = f"{key[0]}.{key[1]}"
    if key not in _VERSIONS:
        raise TlsInvalid(field, f"must be one of {', '.join(_VERSIONS)}")
    return _VERSIONS[key]


@functools.lru_cache(maxsize=128)
def context_for(settings: TlsSettings) -> ssl.SSLContext:
    """The SSL context of these settings; TlsInvalid names the field at fault."""
    if settings.ca:
        try:
            context = ssl.create_default_context(cadata=settings.ca)
        except (ssl.SSLError, ValueError) as exc:
            raise TlsInvalid("tls_ca", f"is not a PEM certificate ({_why(exc)})") from None
    else:
        context = ssl.create_default_context(cafile=certifi.where())
    if settings.skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    lowest = _version(settings.min_version, "tls_min_version")
    highest = _version(settings.max_version, "tls_max_version")
    if lowest is not None:
        context.minimum_version = lowest
    if highest is not None:
        context.maximum_version = highest
    if lowest is not None and highest is not None and lowest > highest:
        raise TlsInvalid("tls_min_version", "is above tls_max_version")
    if settings.cert or settings.key:
        if not (settings.cert and settings.key):
            raise TlsInvalid("tls_cert" if not settings.cert else "tls_key",
                             "a client certificate needs both tls_cert and tls_key")
        _load_chain(context, settings)
    return context


def _load_chain(context: ssl.SSLContext, settings: TlsSettings) -> None:
    with tempfile.TemporaryDirectory(prefix="dutyline-tls-") as folder:  # 0700
        cert_path, key_path = Path(folder) / "cert.pem", Path(folder) / "key.pem"
        cert_path.write_text(settings.cert)
        key_path.touch(mode=0o600)
        key_path.write_text(settings.key)
        try:
            context.load_cert_chain(cert_path, key_path, password=settings.key_pwd or None)
        except (ssl.SSLError, ValueError, OSError) as exc:
            raise TlsInvalid("tls_key", f"does not load with tls_cert ({_why(exc)})") from None


def _why(exc: Exception) -> str:
    return (getattr(exc, "reason", None) or type(exc).__name__).lower().replace("_", " ")
