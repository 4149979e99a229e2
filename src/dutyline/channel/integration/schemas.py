"""Integration requests and records (our own endpoints; same conventions as the reference)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_URL
from dutyline.api.types import Id, PageRequest

IntegrationName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
# `standard`: alerts come in with its key. `change`: change events come in with its key.
# `custom_action`: an action members run on the channel's incidents
# (/incident/custom-action/do), a signed POST to `url`.
IntegrationType = Literal["standard", "change", "custom_action"]
# Its credentials (userinfo, `?token=`) are write-only: masked in answers and the audit log.
ActionUrl = Annotated[str, msgspec.Meta(min_length=1, max_length=2048), OUTBOUND_URL]


# What an integration's key pushes: alerts (/event/push/alert/*) or change events
# (/event/push/change/standard). A key is accepted on its own kind's paths only.
PushedKind = Literal["standard", "change"]


class CreateIntegrationRequest(msgspec.Struct, kw_only=True):
    channel_id: Id
    integration_name: IntegrationName
    integration_type: IntegrationType = "standard"
    # Where a custom action POSTs (required for `custom_action`, refused otherwise).
    url: ActionUrl | None = None


class CreateIntegrationResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    integration_id: int
    integration_name: str
    # The plaintext key: shown in this response only, stored as a SHA-256 hash. Empty for a
    # custom action, which takes no alerts.
    integration_key: str
    integration_type: str = "standard"
    # A custom action's signing key (HMAC-SHA256 of its requests): shown in this response
    # only, stored sealed with the server key.
    signing_secret: str = ""


class RotateKeyResponse(msgspec.Struct, kw_only=True):
    integration_id: int
    # The new plaintext key: shown in this response only; the old key stopped working.
    integration_key: str


class IntegrationIDRequest(msgspec.Struct, kw_only=True):
    integration_id: Id


class ListIntegrationsRequest(PageRequest, kw_only=True):
    channel_id: Id | None = None


class IntegrationItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    integration_id: int
    integration_name: str
    integration_type: str
    channel_id: int
    channel_name: str
    account_id: int
    status: str
    # The key's last characters, so a person can tell keys apart; never the key.
    key_suffix: str
    creator_id: int
    created_at: int
    updated_at: int
    # A custom action's address, credentials in it masked (absent for other types).
    url: str | None = None


class ListIntegrationsResponse(msgspec.Struct, kw_only=True):
    p: int
    limit: int
    total: int
    items: list[IntegrationItem]
