"""Resolving and validating an agent card through the official a2a-sdk resolver.

`card_url` is either a full card URL (a path ending in .json or under /.well-known/) or the
agent's base URL, where the current path (/.well-known/agent-card.json) is tried first and the
legacy one (/.well-known/agent.json) only when the first is not there (404/410). Every fetch
goes through the outbound guard with the agent's own auth headers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, AgentCardResolutionError
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol

# protobuf ships no type stubs; the card types themselves come typed from a2a-sdk.
from google.protobuf.json_format import (  # type: ignore[import-untyped]
    MessageToDict,
    ParseDict,
    ParseError,
)

from dutyline.api import errors, outbound_urls
from dutyline.kit.outbound import OutboundBlocked, OutboundPolicy, guarded_client

LEGACY_CARD_PATH = "/.well-known/agent.json"
CARD_FETCH_TIMEOUT_S = 10.0
# The transports the gateway can speak (gRPC would need the SDK's grpc extra).
SUPPORTED_BINDINGS = (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
_NOT_THERE = (404, 410)


@dataclass(frozen=True)
class ResolvedCard:
    url: str  # where the card was found
    name: str
    skills: list[dict[str, Any]]
    card: dict[str, Any]  # the card as the SDK parsed it (current shape), JSON-ready


def card_from_json(card: dict[str, Any]) -> AgentCard:
    """The stored (already normalized) card back as the SDK's type."""
    parsed: AgentCard = ParseDict(card, AgentCard(), ignore_unknown_fields=True)
    return parsed


def is_full_card_url(url: str) -> bool:
    path = urlsplit(url).path
    return path.endswith(".json") or "/.well-known/" in path


def _fetch_error(url: str, why: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(
        "Invalid parameter {field}: the agent card at {url} could not be fetched: {why}",
        field="card_url", url=url, why=why,
    )


def _invalid_card(url: str, why: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(
        "Invalid parameter {field}: the agent card at {url} is invalid: {why}",
        field="card_url", url=url, why=why,
    )


def _refused(url: str, reason: str) -> errors.InvalidParameter:
    return errors.InvalidParameter(
        "Invalid parameter {field}: {url} is refused by the outbound guard: {why}",
        field="card_url", url=url, why=reason,
    )


def _cause_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def connect_reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words: httpx hides the refusal a few causes down."""
    chain = _cause_chain(exc)
    if any(isinstance(c, ConnectionRefusedError) for c in chain):
        return "connection refused"
    return f"cannot connect ({chain[-1]})"


def _explain(url: str, exc: AgentCardResolutionError, timeout: float) -> errors.InvalidParameter:
    """One clear reason from the SDK's error, whose own message is long and technical."""
    if exc.status_code is not None:
        return _fetch_error(url, f"HTTP {exc.status_code}")
    for cause in _cause_chain(exc):
        if isinstance(cause, httpx.TimeoutException):
            return _fetch_error(url, f"timed out after {timeout:g} s")
        if isinstance(cause, httpx.ConnectError):
            return _fetch_error(url, connect_reason(cause))
        if isinstance(cause, httpx.RequestError):
            return _fetch_error(url, f"network error ({type(cause).__name__})")
        if isinstance(cause, json.JSONDecodeError):
            return _invalid_card(url, "the response is not JSON")
        if isinstance(cause, ParseError):
            return _invalid_card(url, str(cause))
    return _invalid_card(url, exc.message)


def _validate(url: str, card: AgentCard) -> None:
    """What we need to talk to the agent. Other fields the spec marks REQUIRED (description,
    version, modes, skill tags...) are not enforced: many agents in the wild omit some."""
    if not card.name.strip():
        raise _invalid_card(url, "the card has no name")
    usable = [
        i for i in card.supported_interfaces
        if i.protocol_binding in SUPPORTED_BINDINGS
        and urlsplit(i.url).scheme in ("http", "https")
    ]
    if not usable:
        raise _invalid_card(url, "the card offers no JSON-RPC or HTTP+JSON interface")


def _skills(card: AgentCard) -> list[dict[str, Any]]:
    return [
        {"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags),
         "examples": list(s.examples)}
        for s in card.skills
    ]


async def resolve_card(
    card_url: str,
    *,
    policy: OutboundPolicy,
    headers: dict[str, str] | None = None,
    fetch_timeout_s: float = CARD_FETCH_TIMEOUT_S,
    transport: httpx.AsyncBaseTransport | None = None,
) -> ResolvedCard:
    """Fetch, parse and validate the card, or raise InvalidParameter naming card_url and why."""
    url = card_url.strip()
    if urlsplit(url).scheme.lower() not in ("http", "https") or not urlsplit(url).hostname:
        raise errors.invalid("card_url", "must be an http or https URL")
    reason = await outbound_urls.refused(url, policy)
    if reason:  # the card's own wording: it names the URL it fetched
        raise _refused(url, reason)
    if is_full_card_url(url):
        attempts = [(url, "")]
    else:
        attempts = [(url, AGENT_CARD_WELL_KNOWN_PATH), (url, LEGACY_CARD_PATH)]
    # Card fetches are GETs: a 503 or a refused connect is retried, within the fetch timeout.
    async with guarded_client(
        policy.retry_within(fetch_timeout_s), timeout=fetch_timeout_s, headers=headers,
        transport=transport,
    ) as client:
        last: errors.InvalidParameter | None = None
        for base, path in attempts:
            resolver = A2ACardResolver(client, base, agent_card_path=path)
            target = resolver.base_url + path if path else resolver.base_url
            try:
                card = await resolver.get_agent_card()
            except OutboundBlocked as exc:
                raise _refused(target, exc.reason) from None
            except AgentCardResolutionError as exc:
                last = _explain(target, exc, fetch_timeout_s)
                if exc.status_code in _NOT_THERE:
                    continue
                raise last from None
            _validate(target, card)
            return ResolvedCard(
                url=target, name=card.name, skills=_skills(card), card=MessageToDict(card)
            )
    assert last is not None
    raise last
