"""The rules of several channels at once (the console's On call page): only live channels of
the caller's account that the caller may see, and only with channel_view."""

from __future__ import annotations

import pytest

from dutyline.api import errors
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW
from dutyline.dispatch import service as rules
from tests.dispatch.support import create_rule, layer, make_channel, rule_body
from tests.fixtures.accounts import Person, new_member
from tests.fixtures.api import Api
from tests.fixtures.sync import in_sync

pytestmark = pytest.mark.anyio


def member(api: Api, who: Person, *permissions: str) -> Actor:
    return Actor(account_id=who.account_id, person_id=who.person_id, clock=api.runtime.clock,
                 permissions=frozenset(permissions), credential="session")


async def test_only_live_channels_the_caller_sees_in_order(
        api: Api, owner: Person, other_owner: Person) -> None:
    alice = await new_member(api, owner, name="Alice")
    public = await make_channel(api, owner, "Public")
    private = int((await api.call("/channel/create", {"channel_name": "Payroll",
                                                      "is_private": True}, key=owner.key)
                   ).data["channel_id"])
    gone = await make_channel(api, owner, "Gone")
    theirs = await make_channel(api, other_owner, "Theirs")
    late = await create_rule(api, owner, rule_body(public, [layer(emails=["a@x.io"])],
                                                   rule_name="Second", priority=2))
    early = await create_rule(api, owner, rule_body(public, [layer(emails=["a@x.io"])],
                                                    rule_name="First", priority=1))
    hidden = await create_rule(api, owner, rule_body(private, [layer(emails=["a@x.io"])]))
    await create_rule(api, owner, rule_body(gone, [layer(emails=["a@x.io"])]))
    await create_rule(api, other_owner, rule_body(theirs, [layer(emails=["a@x.io"])]))
    assert (await api.call("/channel/delete", {"channel_id": gone}, key=owner.key)).status == 200
    ids = [public, private, gone, theirs]

    async with api.runtime.db.connect() as conn:
        seen = await in_sync(conn, rules.rules_of_channels_sync, member(api, alice, CHANNEL_VIEW),
                                             channel_ids=ids)
        admin = Actor(account_id=owner.account_id, person_id=owner.person_id,
                      clock=api.runtime.clock, is_admin=True,
                      permissions=frozenset({CHANNEL_VIEW}))
        everything = await in_sync(conn, rules.rules_of_channels_sync, admin, channel_ids=ids)
        with pytest.raises(errors.AccessDenied):
            await in_sync(conn, rules.rules_of_channels_sync, member(api, alice), channel_ids=ids)
        with pytest.raises(errors.InvalidParameter):
            await in_sync(conn, rules.rules_of_channels_sync,
                          admin, channel_ids=list(range(1, 102)))
    assert [r.rule_id for r in seen] == [early, late]
    assert {r.rule_id for r in everything} == {early, late, hidden}
