"""kit/mail: sending through a real SMTP peer on loopback, URL parsing, errors without secrets."""

from __future__ import annotations

import pytest
import structlog

from dutyline.config import Settings
from dutyline.kit.mail import MailError, MailNotConfigured, parse_smtp_url, send_mail
from tests.fixtures.server import free_port
from tests.fixtures.smtp import AUTH_PASSWORD, SINK_SENDER, SmtpSink

pytestmark = [
    pytest.mark.anyio,
    # The sink speaks no TLS, so aiosmtpd warns that it takes AUTH in the clear: intended here.
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


async def test_sends_text_and_html(smtp_sink: SmtpSink) -> None:
    settings = Settings(smtp_url=smtp_sink.url)
    await send_mail(
        settings, to="ann@example.com", subject="Hello ünïcode", text="plain body",
        html="<p>html <b>body</b></p>",
    )
    [msg] = await smtp_sink.wait_for(1)
    assert msg.rcpt_tos == ["ann@example.com"]
    assert msg.mail_from == SINK_SENDER
    assert msg.subject == "Hello ünïcode"
    assert "plain body" in msg.text
    assert "<b>body</b>" in msg.html
    assert msg.message["Message-ID"] and msg.message["Date"]


async def test_extra_headers(smtp_sink: SmtpSink) -> None:
    link = "https://status.example.com/status/acme/unsubscribe?token=abc"
    await send_mail(
        Settings(smtp_url=smtp_sink.url), to="d@example.com", subject="s", text="t",
        headers={"List-Unsubscribe": f"<{link}>",
                 "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
    )
    [msg] = await smtp_sink.wait_for(1)
    assert str(msg.message["List-Unsubscribe"]).strip() == f"<{link}>"
    assert msg.message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    with pytest.raises(MailError):
        await send_mail(Settings(smtp_url=smtp_sink.url), to="d@example.com", subject="s",
                        text="t", headers={"X-Evil": "a\r\nBcc: x@evil.test"})


async def test_text_only(smtp_sink: SmtpSink) -> None:
    await send_mail(Settings(smtp_url=smtp_sink.url), to="b@example.com", subject="s", text="t")
    [msg] = await smtp_sink.wait_for(1)
    assert msg.text.strip() == "t" and msg.html == ""


async def test_authenticates_with_quoted_credentials(smtp_sink_auth: SmtpSink) -> None:
    await send_mail(Settings(smtp_url=smtp_sink_auth.url), to="c@example.com", subject="s",
                    text="t")
    await smtp_sink_auth.wait_for(1)
    assert smtp_sink_auth.authenticated == [True]


async def test_wrong_password_is_an_error_without_the_password(smtp_sink_auth: SmtpSink) -> None:
    url = smtp_sink_auth.url.replace("p%40ss", "wrong")
    with structlog.testing.capture_logs() as logs, pytest.raises(MailError) as info:
        await send_mail(Settings(smtp_url=url), to="c@example.com", subject="s", text="t")
    assert "wrong" not in str(info.value) and AUTH_PASSWORD not in str(info.value)
    assert "***@127.0.0.1" in str(info.value)
    assert logs and all("wrong" not in repr(entry) for entry in logs)
    assert smtp_sink_auth.messages == []


async def test_not_configured() -> None:
    with pytest.raises(MailNotConfigured, match="DUTYLINE_SMTP_URL"):
        await send_mail(Settings(smtp_url=None), to="a@example.com", subject="s", text="t")


async def test_unreachable_relay_is_a_mail_error() -> None:
    url = f"smtp://user:secret@127.0.0.1:{free_port()}?starttls=off&timeout=5"
    with pytest.raises(MailError) as info:
        await send_mail(Settings(smtp_url=url), to="a@example.com", subject="s", text="t")
    assert "secret" not in str(info.value)


async def test_header_injection_refused(smtp_sink: SmtpSink) -> None:
    with pytest.raises(MailError):
        await send_mail(Settings(smtp_url=smtp_sink.url), to="a@example.com\nBcc: x@evil.test",
                        subject="s", text="t")
    assert smtp_sink.messages == []


def test_parse_defaults_and_options() -> None:
    plain = parse_smtp_url("smtp://mail.example.com", base_url="https://status.example.org")
    assert (plain.host, plain.port, plain.implicit_tls, plain.starttls) == (
        "mail.example.com", 25, False, "auto")
    assert plain.sender == "dutyline@status.example.org"
    assert plain.username is None
    tls = parse_smtp_url("smtps://u%40x:p%2Fw@mail.example.com?from=a@b.c&timeout=3")
    assert (tls.port, tls.implicit_tls, tls.username, tls.password, tls.sender, tls.timeout) == (
        465, True, "u@x", "p/w", "a@b.c", 3.0)
    assert tls.redacted == "smtps://***@mail.example.com:465"


@pytest.mark.parametrize(
    "url",
    ["http://mail.example.com", "smtp://", "smtp://h:notaport", "smtp://h?starttls=maybe",
     "smtp://h?timeout=soon"],
)
def test_parse_rejects(url: str) -> None:
    with pytest.raises(MailError):
        parse_smtp_url(url)
