"""The app on a fake clock with e-mail going to a local SMTP sink."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dutyline.config import Settings
from dutyline.kit.clock import FakeClock
from tests.dispatch.receiver import receiver  # noqa: F401  (the fixture)
from tests.fixtures.api import Api, make_api
from tests.fixtures.fake_chat_apps import fake_chat_apps  # noqa: F401  (the fixture)
from tests.fixtures.fake_twilio import fake_twilio  # noqa: F401  (the fixture)
from tests.fixtures.smtp import SmtpSink

NOW = 1_700_000_000


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
async def papi(settings: Settings, smtp_sink: SmtpSink, clock: FakeClock) -> AsyncIterator[Api]:
    async with make_api(settings.with_(smtp_url=smtp_sink.url,
                                       base_url="http://dutyline.test"), clock=clock) as client:
        yield client
