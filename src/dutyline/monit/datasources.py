"""Data sources of monit (Prometheus-compatible query APIs).

Credentials (basic auth password, TLS key and its password, header values) are sealed at
rest, never shown again, and dropped when an update moves the address to another origin
without supplying them anew (api/outbound_secrets.py), so they are never sent where they were
not entered. The address passes the outbound guard's static check when it is saved."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors, outbound_urls
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.outbound_secrets import (
    headers_to_store,
    mask_url,
    secret_to_store,
    url_to_store,
)
from dutyline.api.permissions import ALERT_RULE_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.kit.origin import origin_of, same_origin
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox
from dutyline.monit import repository as repo
from dutyline.monit import tls
from dutyline.monit.schemas import (
    DS_TYPES,
    SUPPORTED_DS_TYPES,
    UNSUPPORTED_DS_TYPE,
    DataSourceItem,
    DSPayload,
    DSPrometheusConfig,
    RuleBody,
)

MASK = "******"
_payload_decoder = msgspec.json.Decoder(DSPayload)
_body_decoder = msgspec.json.Decoder(RuleBody)


# --- data sources ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DataSourceSpec:
    """A data source to create, or the whole new definition of `id` to update (blank
    secrets in `payload` keep the stored ones on the same origin)."""

    type_ident: str
    name: str
    edge_cluster_name: str = ""
    payload: DSPayload = field(default_factory=DSPayload)
    id: int = 0
    note: str = ""
    address: str = ""
    enabled: bool = True


def _check_address(address: str, policy: OutboundPolicy) -> str:
    text = address.strip()
    found = origin_of(text)
    if found is None or found[0] not in ("http", "https"):
        raise errors.invalid("address", "must be an http(s) URL")
    outbound_urls.check_static(text, policy, field="address")
    return text


def http_config(payload: DSPayload, type_ident: str) -> DSPrometheusConfig | None:
    """The HTTP settings block of a data source of this type (Prometheus and Loki share
    their fields)."""
    return payload.loki if type_ident == "loki" else payload.prometheus


def _payload_with(type_ident: str, cfg: DSPrometheusConfig) -> DSPayload:
    return DSPayload(loki=cfg) if type_ident == "loki" else DSPayload(prometheus=cfg)


def _header_pairs(lines: list[str], field: str,
                  block: str = "prometheus") -> list[tuple[str, str]]:
    pairs = []
    for line in lines:
        name, sep, value = line.partition(":" if field == "headers" else "=")
        if not sep or not name.strip():
            raise errors.invalid(f"payload.{block}.{field}",
                                 "entries must be 'Key: Value'" if field == "headers"
                                 else "entries must be 'key=value'")
        pairs.append((name.strip(), value.strip()))
    return pairs


def _merge_secrets(new: DSPrometheusConfig, old: DSPrometheusConfig | None,
                   keep: bool, block: str) -> DSPrometheusConfig:
    """Blank (or masked) secret fields keep the stored value only on the same origin."""
    if old is None:
        old = DSPrometheusConfig()
    field = f"payload.{block}"

    def kept(name: str, sep: str) -> list[str]:
        # Each masked value keeps the stored one of that name on the same origin (query
        # parameters carry tokens too).
        values = headers_to_store(dict(_header_pairs(getattr(new, name), name, block)),
                                  dict(_header_pairs(getattr(old, name), name, block)),
                                  keep=keep,
                                  field=f"{field}.{name}")
        return [f"{n}{sep}{v}" for n, v in values.items()]

    def pick(name: str) -> str:
        return secret_to_store(getattr(new, name), getattr(old, name), keep=keep,
                               field=f"{field}.{name}", blank_keeps=True)

    return msgspec.structs.replace(
        new, headers=kept("headers", ": "), params=kept("params", "="),
        basic_auth_password=pick("basic_auth_password"), tls_key=pick("tls_key"),
        tls_key_pwd=pick("tls_key_pwd"),
    )


async def _check_tls(cfg: DSPrometheusConfig, block: str) -> None:
    """The TLS settings load now (a bad PEM, a key that does not match its certificate or its
    password) rather than failing every evaluation later."""
    settings = tls.settings_of(cfg)
    if settings.is_default:
        return
    try:
        await anyio.to_thread.run_sync(tls.context_for, settings)
    except tls.TlsInvalid as exc:
        raise errors.invalid(f"payload.{block}.{exc.field}", exc.reason) from None


def open_payload(box: SecretBox, sealed: str) -> DSPayload:
    if not sealed:
        return DSPayload()
    return _payload_decoder.decode(box.open(sealed))


def _public_payload(payload: DSPayload) -> DSPayload:
    """Without credentials: secrets blank, header and query parameter values masked."""

    def public(cfg: DSPrometheusConfig | None) -> DSPrometheusConfig | None:
        if cfg is None:
            return None
        headers = [f"{n}: {MASK}" for n, _ in _header_pairs(cfg.headers, "headers")]
        params = [f"{n}={MASK}" for n, _ in _header_pairs(cfg.params, "params")]
        return msgspec.structs.replace(cfg, basic_auth_password="", tls_key="", tls_key_pwd="",
                                       headers=headers, params=params)

    return DSPayload(prometheus=public(payload.prometheus), loki=public(payload.loki))


def _ds_item(box: SecretBox, row: Any) -> DataSourceItem:
    return DataSourceItem(
        id=row.id, account_id=row.account_id, type_ident=row.type_ident, name=row.name,
        enabled=row.enabled, note=row.note, address=mask_url(row.address),
        payload=_public_payload(open_payload(box, row.payload_sealed)),
        edge_cluster_name=row.edge_cluster_name, updated_at=row.updated_at,
    )


@writes("/monit/datasource/create", ALERT_RULE_MANAGE, targets=lambda item: [item.id])
async def create_datasource(conn: AsyncConnection, actor: Actor, *, spec: DataSourceSpec,
                            deps: Deps) -> DataSourceItem:
    return await _upsert(conn, actor, spec=spec, create=True, deps=deps)


@writes("/monit/datasource/update", ALERT_RULE_MANAGE, targets=lambda item: [item.id])
async def update_datasource(conn: AsyncConnection, actor: Actor, *, spec: DataSourceSpec,
                            deps: Deps) -> DataSourceItem:
    """Blank secrets are kept unless the address moves to another origin."""
    return await _upsert(conn, actor, spec=spec, create=False, deps=deps)


async def _upsert(conn: AsyncConnection, actor: Actor, *, spec: DataSourceSpec, create: bool,
                  deps: Deps) -> DataSourceItem:
    req, box = spec, deps.box
    if req.type_ident not in DS_TYPES:
        raise errors.invalid("type_ident", f"must be one of {', '.join(DS_TYPES)}")
    if req.type_ident not in SUPPORTED_DS_TYPES:
        raise errors.invalid("type_ident", UNSUPPORTED_DS_TYPE)
    name = req.name.strip()
    if not name:
        raise errors.invalid("name", "is required")
    address = _check_address(req.address, deps.policy)
    block = req.type_ident
    prom = http_config(req.payload, block) or DSPrometheusConfig()
    _header_pairs(prom.params, "params", block)
    old = None
    if not create:
        if not req.id:
            raise errors.invalid("id", "is required")
        old = await repo.get_datasource(conn, actor.account_id, req.id)
        if old is None:
            raise errors.not_found("datasource", req.id)
    ds_id = old.id if old is not None else numeric_id()
    # An address read back with its credentials masked keeps the stored ones.
    address = url_to_store(address, old.address if old is not None else "",
                           keep=old is not None, field="address")
    if await repo.datasource_name_taken(conn, actor.account_id, name, ds_id):
        raise errors.invalid("name", "already exists")
    # Secrets stay with their origin and their type: a data source that changes type asks
    # for them anew.
    stored = (None if old is None or old.type_ident != block
              else http_config(open_payload(box, old.payload_sealed), block))
    keep = old is not None and same_origin(old.address, address)
    prom = _merge_secrets(prom, stored, keep, block)
    await _check_tls(prom, block)
    values = {
        "type_ident": req.type_ident, "name": name, "enabled": req.enabled,
        "note": req.note, "address": address, "edge_cluster_name": req.edge_cluster_name,
        "payload_sealed": box.seal(msgspec.json.encode(_payload_with(block, prom)).decode()),
        "updated_at": actor.now_s,
    }
    if old is None:
        await repo.insert_datasource(conn, {"id": ds_id, "account_id": actor.account_id,
                                            "created_at": actor.now_s, **values})
    else:
        await repo.update_datasource(conn, actor.account_id, ds_id, values)
    row = await repo.get_datasource(conn, actor.account_id, ds_id)
    return _ds_item(box, row)


@reads_sync(ALERT_RULE_MANAGE)
def get_datasource_sync(conn: Connection, actor: Actor, *, ds_id: int,
                        deps: Deps) -> DataSourceItem:
    row = repo.get_datasource_sync(conn, actor.account_id, ds_id)
    if row is None:
        raise errors.not_found("datasource", ds_id)
    return _ds_item(deps.box, row)


@reads(ALERT_RULE_MANAGE)
async def get_datasource(conn: AsyncConnection, actor: Actor, *, ds_id: int,
                         deps: Deps) -> DataSourceItem:
    return await conn.run_sync(lambda sync: get_datasource_sync(sync, actor, ds_id=ds_id,
                                                                deps=deps))


async def require_datasource_row(conn: AsyncConnection, actor: Actor, *, ds_id: int) -> Any:
    row = await repo.get_datasource(conn, actor.account_id, ds_id)
    if row is None:
        raise errors.not_found("datasource", ds_id)
    return row


@reads_sync(ALERT_RULE_MANAGE)
def list_datasources_sync(conn: Connection, actor: Actor, *, type_ident: str,
                          deps: Deps) -> list[DataSourceItem]:
    if type_ident and type_ident not in DS_TYPES:
        raise errors.invalid("type", f"must be one of {', '.join(DS_TYPES)}")
    return [_ds_item(deps.box, r)
            for r in repo.list_datasources_sync(conn, actor.account_id, type_ident)]


@reads(ALERT_RULE_MANAGE)
async def list_datasources(conn: AsyncConnection, actor: Actor, *, type_ident: str,
                           deps: Deps) -> list[DataSourceItem]:
    return await conn.run_sync(lambda sync: list_datasources_sync(
        sync, actor, type_ident=type_ident, deps=deps))


@writes("/monit/datasource/delete", ALERT_RULE_MANAGE)
async def delete_datasource(conn: AsyncConnection, actor: Actor, *, ds_id: int) -> None:
    row = await repo.get_datasource(conn, actor.account_id, ds_id)
    if row is None:
        raise errors.not_found("datasource", ds_id)
    actor.note_audit_targets(row.id)
    using = [r.name for r in await repo.list_rules(conn, actor.account_id, 0)
             if ds_id in _body_decoder.decode(r.body).ds_ids]
    if using:
        raise errors.ReferenceExist("The data source is used by alert rules: {rules}",
                                    rules=", ".join(using[:10]))
    await repo.delete_datasource(conn, actor.account_id, ds_id)


def matching_datasources(rows: list[Any], body: RuleBody, ds_type: str) -> list[Any]:
    """The enabled data sources of the rule's type named by id or by a name pattern."""
    chosen = []
    for row in rows:
        if not row.enabled or row.type_ident != ds_type:
            continue
        if row.id in body.ds_ids or any(fnmatch.fnmatchcase(row.name, p) for p in body.ds_list):
            chosen.append(row)
    return chosen
