"""The app on a fake clock with e-mail going to a local SMTP sink (tests/fixtures/paging.py),
a webhook receiver and a fake Twilio."""

from __future__ import annotations

from tests.dispatch.receiver import receiver  # noqa: F401  (the fixture)
from tests.fixtures.fake_twilio import fake_twilio  # noqa: F401  (the fixture)
from tests.fixtures.paging import clock, papi  # noqa: F401  (the fixtures)
