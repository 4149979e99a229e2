"""Helpers of the change event tests: a channel with a change integration, and pushes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply

CHANGE_PATH = "/event/push/change/standard"


@dataclass(frozen=True)
class ChangeWire:
    account: Person
    channel_id: int
    integration_id: int
    key: str


async def change_integration(api: Api, account: Person, channel_id: int,
                             name: str = "Deploys") -> ChangeWire:
    reply = await api.call("/integration/create", {
        "channel_id": channel_id, "integration_name": name, "integration_type": "change",
    }, key=account.key)
    assert reply.status == 200, reply.body
    return ChangeWire(account, channel_id, int(reply.data["integration_id"]),
                      reply.data["integration_key"])


async def wire_changes(api: Api, account: Person, name: str = "Payments",
                       **channel: Any) -> ChangeWire:
    created = await api.call("/channel/create", {"channel_name": name, **channel},
                             key=account.key)
    assert created.status == 200, created.body
    return await change_integration(api, account, int(created.data["channel_id"]))


def change(key: str = "deploy-1", status: str = "Processing", title: str = "Deploy api v42",
           **extra: Any) -> dict[str, Any]:
    return {"title": title, "change_key": key, "change_status": status, **extra}


async def push_change(api: Api, key: str | None, body: Any, *,
                      raw: bytes | None = None,
                      headers: dict[str, str] | None = None) -> Reply:
    params = {"integration_key": key} if key is not None else {}
    if raw is not None:
        response = await api.client.post(CHANGE_PATH, params=params, content=raw,
                                          headers=headers)
    else:
        response = await api.client.post(CHANGE_PATH, params=params, json=body)
    return Reply(response.status_code, response.json(), response.headers)
