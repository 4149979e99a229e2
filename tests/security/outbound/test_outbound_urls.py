"""Outbound URLs are refused when saved, not only when called: escalation webhooks and data
sources get the outbound guard's answer (without DNS) as a 400 naming the field. IPv4
addresses written in C's old forms (octal, zero-padded, one integer, hex) are read once, in
the guard, as inet_aton reads them, and refused: never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from dutyline.db.tables.monit import monit_datasource
from dutyline.kit.ipv4_forms import NotAnAddress, legacy_ipv4
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, check_without_dns
from dutyline.monit import prom
from tests.dispatch.support import layer, make_channel, rule_body
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

REFUSED = [
    "http://127.0.0.1:9/hook", "http://localhost/hook", "http://[::1]/hook",
    "http://10.1.2.3/hook", "http://169.254.169.254/latest/meta-data",
    "http://[::ffff:169.254.169.254]/", "http://0177.0.0.1/hook", "http://127.000.000.001/",
    "http://2130706433/", "http://0x7f.1/", "file:///etc/passwd", "gopher://example.com/",
    "dict://example.com:11211/",
]
# A public literal and a name (names are resolved when called, not when saved).
ACCEPTED = ["http://93.184.216.34/hook", "https://hooks.example.com/services/x"]


async def _rule(api: Api, who: Person, channel_id: int, url: str) -> Any:
    hook = {"type": "webhook", "settings": {"url": url}}
    return await api.call("/channel/escalate/rule/create",
                          rule_body(channel_id, [layer(webhooks=[hook])]), key=who.key)


async def _datasource(api: Api, who: Person, address: str, name: str) -> Any:
    return await api.call("/monit/datasource/create", {
        "type_ident": "prometheus", "name": name, "address": address,
        "edge_cluster_name": "default"}, key=who.key)


async def test_escalation_webhook_urls_are_checked_when_saved(strict_api: Api) -> None:
    owner = await new_account(strict_api)
    channel_id = await make_channel(strict_api, owner)
    for url in REFUSED:
        reply = await _rule(strict_api, owner, channel_id, url)
        assert reply.code == "InvalidParameter", url
        assert "layers[0].target.webhooks[0].settings.url" in reply.message, url
    for url in ACCEPTED:
        assert (await _rule(strict_api, owner, channel_id, url)).status == 200, url


async def test_datasource_addresses_are_checked_when_saved(strict_api: Api) -> None:
    owner = await new_account(strict_api)
    for i, url in enumerate(REFUSED):
        reply = await _datasource(strict_api, owner, url, f"ds{i}")
        assert reply.code == "InvalidParameter", url
        assert "address" in reply.message, url
    for i, url in enumerate(ACCEPTED):
        assert (await _datasource(strict_api, owner, url, f"ok{i}")).status == 200, url


async def test_private_addresses_pass_only_where_the_operator_allows_them(
        api: Api, owner: Person) -> None:
    channel_id = await make_channel(api, owner)
    assert (await _rule(api, owner, channel_id, "http://127.0.0.1:9/hook")).status == 200
    assert (await _datasource(api, owner, "http://127.0.0.1:9", "local")).status == 200
    # The old forms are refused whatever the switch says: the guard reads them one way.
    reply = await _datasource(api, owner, "http://0177.0.0.1:9090", "octal")
    assert reply.code == "InvalidParameter"
    assert "reads as the IPv4 address 127.0.0.1" in reply.message


@pytest.mark.parametrize(("host", "reads_as"), [
    ("0177.0.0.1", "127.0.0.1"), ("127.000.000.001", "127.0.0.1"),
    ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"), ("010.0.0.1", "8.0.0.1"), ("0xA9.0xFE.0xA9.0xFE",
                                                            "169.254.169.254"),
    ("example.com", None), ("1.example", None),
])
def test_old_ipv4_forms_read_as_inet_aton_reads_them(host: str, reads_as: str | None) -> None:
    found = legacy_ipv4(host)
    assert (None if found is None else str(found)) == reads_as


@pytest.mark.parametrize("host", ["1.2.3.4.5", "09.0.0.1", "256.0.0.1", "1.0x1000000",
                                  "a.0x7f"])
def test_numeric_hosts_that_are_no_address_are_refused(host: str) -> None:
    with pytest.raises(NotAnAddress):
        legacy_ipv4(host)
    with pytest.raises(OutboundBlocked, match="not a valid IPv4 address"):
        check_without_dns(f"http://{host}/", OutboundPolicy(allow_private=True))


@pytest.mark.parametrize("address", ["http://0177.0.0.1:9090", "http://127.000.000.001:9090"])
async def test_a_stored_old_form_address_answers_400_and_fails_the_query(
        api: Api, owner: Person, address: str) -> None:
    made = await _datasource(api, owner, "http://127.0.0.1:9", "prom")
    ds_id = made.data["id"]
    # Saved before the check existed: the row holds the address as it was given.
    async with api.runtime.db.transaction() as conn:
        await conn.execute(update(monit_datasource).where(
            monit_datasource.c.id == ds_id).values(address=address))
    reply = await api.call("/monit/datasource/query", {"ds_id": ds_id, "expr": "up"},
                           key=owner.key)
    assert (reply.status, reply.code) == (400, "BadRequest")
    assert "reads as the IPv4 address 127.0.0.1" in reply.message
    # The rule evaluation's query fails the same way (a failed query, not a crashed job).
    target = prom.Target(address=address)
    with pytest.raises(prom.QueryFailed, match="reads as the IPv4 address"):
        await prom.instant_query(api.runtime.outbound_policy(), target, "up", 0.0)
