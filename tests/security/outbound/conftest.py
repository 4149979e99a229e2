"""The app on a fake clock with three loopback receivers: two a tenant may point targets at
(two origins), and the operator's (the server's Telegram bot API base)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from dutyline.config import Settings
from tests.dispatch.receiver import Receiver, build
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.smtp import SmtpSink

NOW = 1_700_000_000
SERVER_BOT_TOKEN = "424242:operator-bot-secret"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver, Receiver]]:
    """(first, second, operator): each on its own port, so each its own origin."""
    made = (Receiver(), Receiver(), Receiver())
    with (serve_asgi(build(made[0])) as a, serve_asgi(build(made[1])) as b,
          serve_asgi(build(made[2])) as c):
        for r, url in zip(made, (a, b, c), strict=True):
            r.base_url = url
        yield made


@pytest.fixture
async def api(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock,
              receivers: tuple[Receiver, Receiver, Receiver]) -> AsyncIterator[Api]:
    async with make_api(settings.with_(
            smtp_url=smtp_sink.url, base_url="http://dutyline.test",
            telegram_api_url=receivers[2].url("/tg"), telegram_bot_token=SERVER_BOT_TOKEN),
            clock=clock) as client:
        yield client


@pytest.fixture
async def strict_api(settings: Settings, clock: FakeClock) -> AsyncIterator[Api]:
    """The app as shipped: private networks refused."""
    async with make_api(settings.with_(allow_private_network=False), clock=clock) as client:
        yield client
