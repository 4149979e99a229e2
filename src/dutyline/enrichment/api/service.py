"""Rules of mapping APIs (reference MappingAPI*): names unique in the account, at most 50,
an http(s) address the outbound guard allows (private addresses only where the operator
allows them, as for every outbound call), headers sealed at rest and shown masked (a masked
value sent back keeps the stored one; a move to another origin drops them), timeout
1-3 s, retry_count 0-1. An API used by an enrichment rule cannot be deleted. TLS is always
verified: `insecure_skip_verify: true` is refused rather than silently ignored."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors, outbound_urls
from dutyline.api.access import reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import headers_to_store, mask_url, url_to_store
from dutyline.api.permissions import MAPPING_DATA_MANAGE, MAPPING_DATA_VIEW
from dutyline.enrichment import references
from dutyline.enrichment.api import repository as repo
from dutyline.enrichment.api.schemas import (
    MASK,
    MAX_APIS,
    ApiCreateResponse,
    MappingApiItem,
)
from dutyline.kit.ids import hex_id
from dutyline.kit.origin import same_origin
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox
from dutyline.platform.team import service as teams

_decode_headers = msgspec.json.Decoder(dict[str, str])


def _item(row: Any, secrets: SecretBox) -> MappingApiItem:
    names = _decode_headers.decode(secrets.open(row.headers_sealed)) if row.headers_sealed \
        else {}
    return MappingApiItem(
        api_id=row.api_id, api_name=row.api_name, description=row.description,
        url=mask_url(row.url),
        headers=dict.fromkeys(names, MASK), timeout=row.timeout, retry_count=row.retry_count,
        insecure_skip_verify=bool(row.insecure_skip_verify), status=row.status,
        team_id=row.team_id, creator_id=row.creator_id, updated_by=row.updated_by,
        created_at=row.created_at, updated_at=row.updated_at)


async def _check_url(url: str, policy: OutboundPolicy) -> str:
    url = url.strip()
    if not url.lower().startswith(("http://", "https://")):
        raise errors.invalid("url", "must start with http:// or https://")
    await outbound_urls.check(url, policy, field="url")
    return url


def _sealed(secrets: SecretBox, headers: dict[str, str]) -> str:
    return secrets.seal(msgspec.json.encode(headers).decode()) if headers else ""


async def _checks(conn: AsyncConnection, actor: Actor, *, name: str | None,
                  insecure: bool | None, team_id: int | None, but: str = "") -> str | None:
    if insecure:
        raise errors.invalid("insecure_skip_verify", "is not supported: TLS certificates "
                                                     "are always verified")
    if team_id and not await teams.existing_team_ids(conn, actor, [team_id]):
        raise errors.invalid("team_id", f"team {team_id} not found")
    if name is None:
        return None
    name = name.strip()
    if not name:
        raise errors.invalid("api_name", "must not be blank")
    if await repo.name_taken(conn, actor.account_id, name, but=but):
        raise errors.invalid("api_name", f"{name!r} already exists")
    return name


@writes("/enrichment/mapping/api/create", MAPPING_DATA_MANAGE,
        targets=lambda created: [created.api_id])
async def create_api(
    conn: AsyncConnection, actor: Actor, *, api_name: str, url: str, description: str = "",
    insecure_skip_verify: bool = False, headers: dict[str, str] | None = None,
    timeout_s: int = 2, retry_count: int = 0, team_id: int = 0, deps: Deps,
) -> ApiCreateResponse:
    """A new API; `timeout_s` bounds each call of it, `retry_count` retries a failed one."""
    name = await _checks(conn, actor, name=api_name, insecure=insecure_skip_verify,
                         team_id=team_id)
    assert name is not None
    url = await _check_url(url_to_store(url, "", keep=False, field="url"), deps.policy)
    if await repo.count(conn, actor.account_id) >= MAX_APIS:
        raise errors.invalid("api_name", f"an account has at most {MAX_APIS} mapping APIs")
    api_id, now = hex_id(), actor.now_s
    try:
        await repo.insert_api(conn, {
            "api_id": api_id, "account_id": actor.account_id, "team_id": team_id,
            "api_name": name, "description": description, "url": url,
            "headers_sealed": _sealed(deps.box, headers_to_store(headers or {}, {}, keep=False,
                                                                 field="headers")),
            "timeout": timeout_s,
            "retry_count": retry_count, "insecure_skip_verify": False,
            "status": "enabled", "creator_id": actor.person_id,
            "updated_by": actor.person_id, "created_at": now, "updated_at": now})
    except IntegrityError:
        raise errors.invalid("api_name", f"{name!r} already exists") from None
    return ApiCreateResponse(api_id=api_id, api_name=name)


def api_info_sync(conn: Connection, actor: Actor, *, api_id: str,
                  deps: Deps) -> MappingApiItem:
    """The API; an unknown id (or another account's) is ResourceNotFound, as for every
    other info operation."""
    row = repo.get_sync(conn, actor.account_id, api_id)
    if row is None:
        raise errors.not_found("mapping API", api_id)
    return _item(row, deps.box)


@reads_sync(MAPPING_DATA_VIEW, MAPPING_DATA_MANAGE)
def list_apis_sync(conn: Connection, actor: Actor, *, deps: Deps) -> list[MappingApiItem]:
    return [_item(r, deps.box) for r in repo.list_all_sync(conn, actor.account_id)]


async def _existing(conn: AsyncConnection, actor: Actor, api_id: str) -> Any:
    row = await repo.get(conn, actor.account_id, api_id)
    if row is None:
        raise errors.not_found("mapping API", api_id)
    return row


@writes("/enrichment/mapping/api/update", MAPPING_DATA_MANAGE)
async def update_api(
    conn: AsyncConnection, actor: Actor, *, api_id: str, api_name: str | None = None,
    url: str | None = None, description: str | None = None,
    insecure_skip_verify: bool | None = None, headers: dict[str, str] | None = None,
    timeout_s: int | None = None, retry_count: int | None = None, team_id: int | None = None,
    deps: Deps,
) -> None:
    """None keeps a field; `headers` replaces the set (a masked value keeps the stored
    one while the origin stays)."""
    row = await _existing(conn, actor, api_id)
    actor.note_audit_targets(row.api_id)
    name = await _checks(conn, actor, name=api_name, insecure=insecure_skip_verify,
                         team_id=team_id, but=row.api_id)
    values: dict[str, Any] = {"updated_by": actor.person_id,
                              # Never the same second twice: it keys ingestion's caches.
                              "updated_at": max(actor.now_s, row.updated_at + 1)}
    if name is not None:
        values["api_name"] = name
    if url is not None:
        values["url"] = await _check_url(url_to_store(url, row.url, keep=True, field="url"),
                                         deps.policy)
    # The stored headers were entered for the URL's origin (api/outbound_secrets.py).
    keep = same_origin(row.url, values.get("url", row.url))
    if headers is not None:
        stored = _decode_headers.decode(deps.box.open(row.headers_sealed)) \
            if row.headers_sealed else {}
        values["headers_sealed"] = _sealed(
            deps.box, headers_to_store(headers, stored, keep=keep, field="headers"))
    elif not keep:
        values["headers_sealed"] = ""
    changed = {"description": description, "timeout": timeout_s, "retry_count": retry_count,
               "team_id": team_id}
    values.update({k: v for k, v in changed.items() if v is not None})
    try:
        await repo.update_api(conn, actor.account_id, row.api_id, values)
    except IntegrityError:
        raise errors.invalid("api_name", "already exists") from None


@writes("/enrichment/mapping/api/delete", MAPPING_DATA_MANAGE)
async def delete_api(conn: AsyncConnection, actor: Actor, *, api_id: str) -> str:
    row = await _existing(conn, actor, api_id)
    await references.refuse_while_referenced(conn, kind="api", ref_id=row.api_id)
    await repo.delete_api(conn, actor.account_id, row.api_id)
    return str(row.api_id)


async def existing_api_ids(conn: AsyncConnection, actor: Actor, *,
                           api_ids: list[str]) -> set[str]:
    """For enrichment rules: which of these ids are APIs of the account."""
    return await repo.existing_ids(conn, actor.account_id, api_ids) if api_ids else set()
