"""A2A agent requests and records. Times are Unix milliseconds, as in every AI SRE record."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_SECRET, OUTBOUND_URL
from dutyline.api.secret import SECRET
from dutyline.api.types import Id, NonNegInt64, PageRequest

AuthType = Literal["none", "api_key", "bearer"]
AgentId = Annotated[str, msgspec.Meta(min_length=1, max_length=40)]
AgentName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
Instructions = Annotated[str, msgspec.Meta(max_length=2000)]
CardUrl = Annotated[str, msgspec.Meta(min_length=1, max_length=2048), OUTBOUND_URL]
SecretValue = Annotated[str, msgspec.Meta(max_length=4096), OUTBOUND_SECRET, SECRET]

# What a secret reads back as; sending it back unchanged keeps the stored secret.
MASK = "******"


class AuthConfig(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Credentials for the agent. `api_key` travels in `header_name` (default X-API-Key);
    `token` is sent as `Authorization: Bearer <token>`. Write-only: reads show MASK."""

    header_name: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    api_key: SecretValue | None = None
    token: SecretValue | None = None


class A2aAgentCreateRequest(msgspec.Struct, kw_only=True):
    agent_name: AgentName
    card_url: CardUrl
    instructions: Instructions = ""
    team_id: NonNegInt64 = 0
    auth_type: AuthType = "none"
    auth_config: AuthConfig | None = None
    streaming: bool = False


class A2aAgentUpdateRequest(msgspec.Struct, kw_only=True):
    """Fields left out (null) keep their value."""

    agent_id: AgentId
    agent_name: AgentName | None = None
    card_url: CardUrl | None = None
    instructions: Instructions | None = None
    auth_type: AuthType | None = None
    auth_config: AuthConfig | None = None
    streaming: bool | None = None


class A2aAgentIdRequest(msgspec.Struct, kw_only=True):
    agent_id: AgentId


class A2aAgentListRequest(PageRequest, kw_only=True):
    include_account: bool = True
    query: Annotated[str, msgspec.Meta(max_length=128)] = ""
    # Only team-level agents of these teams (account-level ones still follow include_account).
    team_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] | None = None


class A2aSkill(msgspec.Struct, kw_only=True):
    id: str
    name: str
    description: str = ""
    tags: list[str] = msgspec.field(default_factory=list)
    examples: list[str] = msgspec.field(default_factory=list)


class A2aAgentRecord(msgspec.Struct, kw_only=True):
    agent_id: str
    account_id: int
    team_id: int
    agent_name: str
    instructions: str
    card_url: str
    agent_card_name: str
    agent_card_skills: list[A2aSkill]
    agent_card: dict[str, Any]
    auth_type: str
    auth_config: AuthConfig
    streaming: bool
    status: str
    can_edit: bool
    created_by: int
    created_at: int
    updated_at: int


class A2aAgentListResponse(msgspec.Struct, kw_only=True):
    total: int
    agents: list[A2aAgentRecord]
