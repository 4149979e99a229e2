"""Outbound email over SMTP (async, aiosmtplib).

`DUTYLINE_SMTP_URL` names the relay:

    smtp://[user:pass@]host[:port][?from=sender@example.com&starttls=auto|require|off&timeout=10]
    smtps://[user:pass@]host[:port][?from=...]      (TLS from the first byte, port 465)

`smtp://` upgrades with STARTTLS when the server offers it (`starttls=auto`, the default),
`require` refuses to send in the clear, `off` never upgrades (a local relay or a test sink).
The relay is chosen by the operator, not by a user of the API, so it does not go through the
outbound-URL guard (the same as the database URL). Credentials are never logged: every log line
and every error names the relay by its redacted address only.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib
import structlog

log = structlog.get_logger("dutyline.mail")


class MailSettings(Protocol):
    """What sending reads of the server's settings (config.Settings; the kit imports no
    configuration of its own)."""

    @property
    def smtp_url(self) -> str | None: ...
    @property
    def base_url(self) -> str: ...

DEFAULT_TIMEOUT_S = 15.0
_STARTTLS_MODES = ("auto", "require", "off")


class MailError(Exception):
    """Sending failed; the message never carries the relay's credentials."""


class MailNotConfigured(MailError):
    def __init__(self) -> None:
        super().__init__(
            "email is not configured: set DUTYLINE_SMTP_URL (for example "
            "smtp://user:password@mail.example.com:587?from=status@example.com)"
        )


@dataclass(frozen=True)
class SmtpTarget:
    host: str
    port: int
    implicit_tls: bool
    starttls: str  # auto | require | off
    username: str | None
    password: str | None
    sender: str
    timeout: float

    @property
    def redacted(self) -> str:
        scheme = "smtps" if self.implicit_tls else "smtp"
        user = "***@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}"


def parse_smtp_url(url: str, *, base_url: str = "http://localhost") -> SmtpTarget:
    """Read the relay address; errors never echo the URL (it may hold a password)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("smtp", "smtps"):
        raise MailError("DUTYLINE_SMTP_URL must start with smtp:// or smtps://")
    if not parts.hostname:
        raise MailError("DUTYLINE_SMTP_URL has no host")
    try:
        explicit_port = parts.port
    except ValueError as exc:
        raise MailError("DUTYLINE_SMTP_URL has an invalid port") from exc
    implicit_tls = scheme == "smtps"
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    starttls = query.get("starttls", "auto").lower()
    if starttls not in _STARTTLS_MODES:
        raise MailError("DUTYLINE_SMTP_URL: starttls must be auto, require or off")
    try:
        timeout = float(query.get("timeout", DEFAULT_TIMEOUT_S))
    except ValueError as exc:
        raise MailError("DUTYLINE_SMTP_URL: timeout must be a number of seconds") from exc
    # Without an explicit sender, a no-reply address at the server's own host name.
    default_host = urlsplit(base_url).hostname or "localhost"
    sender = query.get("from") or f"dutyline@{default_host}"
    return SmtpTarget(
        host=parts.hostname,
        port=explicit_port or (465 if implicit_tls else 25),
        implicit_tls=implicit_tls,
        starttls=starttls,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        sender=sender,
        timeout=timeout,
    )


_tls_context: ssl.SSLContext | None = None


async def _tls() -> ssl.SSLContext:
    # Loading the CA bundle is ~tens of ms of blocking CPU: once per process, off the loop.
    global _tls_context
    if _tls_context is None:
        _tls_context = await asyncio.to_thread(ssl.create_default_context)
    return _tls_context


def build_message(
    sender: str, *, to: str, subject: str, text: str, html: str | None,
    headers: Mapping[str, str] | None = None,
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    domain = sender.rpartition("@")[2] or "localhost"
    msg["Message-ID"] = make_msgid(domain=domain)
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(text)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return msg


async def send_mail(
    settings: MailSettings,
    *,
    to: str,
    subject: str,
    text: str,
    html: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Send one message (plain text, plus an HTML alternative when given). `headers` adds
    extra ones, such as `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058).

    Raises MailNotConfigured when DUTYLINE_SMTP_URL is unset and MailError on any failure
    (connection, timeout, refusal), so a durable job can retry it."""
    if not settings.smtp_url:
        raise MailNotConfigured()
    target = parse_smtp_url(settings.smtp_url, base_url=settings.base_url)
    one_line = [to, subject, *(headers or {}).keys(), *(headers or {}).values()]
    if any("\n" in v or "\r" in v for v in one_line):
        raise MailError("recipient, subject and headers must be one line each")
    message = build_message(
        target.sender, to=to, subject=subject, text=text, html=html, headers=headers
    )
    tls_context = None if target.starttls == "off" and not target.implicit_tls else await _tls()
    start_tls: bool | None
    if target.implicit_tls:
        start_tls = False
    else:
        start_tls = {"auto": None, "require": True, "off": False}[target.starttls]
    try:
        await aiosmtplib.send(
            message,
            sender=target.sender,
            recipients=[to],
            hostname=target.host,
            port=target.port,
            username=target.username,
            password=target.password,
            use_tls=target.implicit_tls,
            start_tls=start_tls,
            tls_context=tls_context,
            timeout=target.timeout,
        )
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        # The exception text comes from the server or the socket layer, never from our URL.
        log.warning("mail.failed", relay=target.redacted, error=type(exc).__name__)
        raise MailError(f"sending mail through {target.redacted} failed: {exc}") from exc
    log.info("mail.sent", relay=target.redacted)


async def hello(settings: MailSettings) -> str:
    """Connect to the relay as sending would (TLS, STARTTLS as the URL says, the login when it
    names one), say EHLO, and quit without sending: what the relay answered, for an operator's
    check (`dutyline doctor`). Raises MailNotConfigured or MailError like send_mail."""
    if not settings.smtp_url:
        raise MailNotConfigured()
    target = parse_smtp_url(settings.smtp_url, base_url=settings.base_url)
    tls_context = None if target.starttls == "off" and not target.implicit_tls else await _tls()
    client = aiosmtplib.SMTP(hostname=target.host, port=target.port, use_tls=target.implicit_tls,
                             start_tls=False, tls_context=tls_context, timeout=target.timeout)
    try:
        await client.connect()
        await client.ehlo()
        upgraded = False
        if not target.implicit_tls and target.starttls != "off":
            if client.supports_extension("starttls"):
                await client.starttls()
                await client.ehlo()
                upgraded = True
            elif target.starttls == "require":
                raise MailError(f"{target.redacted} offers no STARTTLS (starttls=require)")
        if target.username:
            await client.login(target.username, target.password or "")
        await client.quit()
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        raise MailError(f"{target.redacted}: {exc}") from exc
    finally:
        if client.is_connected:
            client.close()
    tls = ("TLS" if target.implicit_tls else "STARTTLS" if upgraded else "no TLS")
    login = f", logged in as {target.username}" if target.username else ""
    return f"{target.redacted} answered EHLO ({tls}{login}), from {target.sender}"
