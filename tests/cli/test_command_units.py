"""The commands' writes run in a unit of work (api/unit.py) as the API's do: audited as the
server's (credential "system"), and through the services the API calls. In process, on the
test's database (the end-to-end runs of the same commands are in test_cli.py and
test_delivery_cli.py)."""

from __future__ import annotations

from typing import Any

import click
import pytest
from sqlalchemy import select

from dutyline.api.ratelimit import MemoryRateLimiter, Window
from dutyline.cli import Shell, _welcome_link
from dutyline.config import Settings
from dutyline.db.tables.platform import audit_log
from dutyline.notify.cli import run as notify_test
from dutyline.notify.delivery.trial import COOLDOWN_S
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api
from tests.fixtures.smtp import SmtpSink

pytestmark = pytest.mark.anyio


async def _rows(api: Api, account_id: int, operation: str) -> list[Any]:
    async with api.runtime.db.transaction(write=False) as conn:
        return list(await conn.execute(select(audit_log).where(
            audit_log.c.account_id == account_id, audit_log.c.operation == operation)))


async def test_an_invite_link_is_audited_as_issued_by_the_server(
        api: Api, owner: Person, settings: Settings) -> None:
    url = await _welcome_link(settings, person_id=owner.person_id)
    token = url.rsplit("/", 1)[1]
    [row] = await _rows(api, owner.account_id, "console.link.issue")
    assert (row.credential, row.member_id, row.outcome, row.is_write) == (
        "system", 0, "OK", True)
    assert str(owner.person_id) in row.target_ids
    assert token not in row.target_ids and token not in row.body  # never the link itself


async def test_notify_test_goes_through_the_audited_service_and_its_cooldown(
        api: Api, owner: Person, settings: Settings, smtp_sink: SmtpSink) -> None:
    await api.call("/member/info/reset", {"member_id": owner.person_id,
                                          "email": "oncall@acme.example"}, key=owner.key)
    settings = settings.with_(smtp_url=smtp_sink.url)
    cooldown = MemoryRateLimiter((Window(1, COOLDOWN_S),), api.runtime.clock)
    async with Shell(settings) as shell:
        answer = await notify_test(shell, settings, 0, "oncall@acme.example", ["email"],
                                   cooldown=cooldown)
        assert answer == {"member_id": owner.person_id, "results": [
            {"channel": "email", "status": "sent", "address": "oncall@acme.example"}]}
        # The same channel again within the cooldown: refused as the API refuses it.
        with pytest.raises(click.ClickException, match=r"[Tt]oo"):
            await notify_test(shell, settings, owner.person_id, "", ["email"],
                              cooldown=cooldown)
    assert len(await smtp_sink.wait_for(1)) == 1
    [row] = await _rows(api, owner.account_id, "member.notify.test")
    assert (row.credential, row.member_id, row.outcome) == ("system", 0, "OK")
    assert str(owner.person_id) in row.target_ids
