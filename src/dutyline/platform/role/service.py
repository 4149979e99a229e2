"""Rules of roles: built-ins are fixed, names unique per account (any case), permission ids
come from the catalog, and a role still held by members cannot be deleted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors, permissions
from dutyline.api.access import require, writes
from dutyline.api.actor import Actor
from dutyline.api.permissions import ACCOUNT_MANAGE
from dutyline.kit.ids import numeric_id
from dutyline.platform.role import repository as repo
from dutyline.platform.role.schemas import PermissionItem, RoleItem

# The records a role's changes are checked against (the console decodes its forms into them).
from dutyline.platform.role.schemas import RoleGrantRequest as RoleGrantRequest
from dutyline.platform.role.schemas import RoleUpsertRequest as RoleUpsertRequest

# Owners and admins hold every permission whatever their rows say (platform/auth.py), so
# their records show the whole catalog too.
_ALL_PERMISSION_BUILTINS = frozenset({"owner", "admin"})


def list_roles_sync(conn: Connection, actor: Actor, *, orderby: str = "created_at",
                    asc: bool = False) -> list[RoleItem]:
    """Every role of the account, built-in ones included."""
    rows = repo.list_all_sync(conn, actor.account_id, orderby=orderby, asc=asc)
    return _items_sync(conn, rows)


def role_info_sync(conn: Connection, actor: Actor, *, role_id: int) -> RoleItem:
    row = _require_sync(conn, actor, role_id)
    return _items_sync(conn, [row])[0]


@writes("/role/upsert", ACCOUNT_MANAGE)
async def upsert_role(
    conn: AsyncConnection, actor: Actor, *, role_name: str, role_id: int = 0,
    description: str | None = None, permission_ids: Sequence[int] | None = None,
) -> int:
    """Create a custom role (no role_id) or update one; `permission_ids` replaces its set
    (None leaves it). Returns the role's id."""
    account_id = actor.account_id
    name = role_name.strip()
    if not name:
        raise errors.invalid("role_name", "is required")
    existing = None
    if role_id:
        existing = await _require_custom(conn, actor, role_id)
        # Its holders' rights change with it: only someone holding all it grants edits it.
        await _require_held_role(conn, actor, existing)
    same_name = await repo.find_by_name(conn, account_id, name)
    if same_name is not None and (existing is None or same_name.role_id != existing.role_id):
        raise errors.invalid("role_name", "already exists")
    wanted = None
    if permission_ids is not None:
        wanted = sorted(set(permission_ids))
        if unknown := [p for p in wanted if p not in permissions.BY_ID]:
            raise errors.InvalidParameter(
                "Invalid parameter {field}: unknown permission ids {ids}",
                field="permission_ids", ids=unknown,
            )
        # Editing a role one holds must not be a way to rise above one's own rights.
        _require_held(actor, role_name=name, permission_ids=wanted)
    now = actor.now_s
    values: dict[str, Any] = {"role_name": name, "updated_at": now}
    if description is not None:
        values["description"] = description
    try:
        if existing is None:
            role_id = numeric_id()
            await repo.insert_role(
                conn,
                {**values, "role_id": role_id, "account_id": account_id, "status": "enabled",
                 "builtin": "", "created_at": now},
            )
            wanted = wanted or []
        else:
            role_id = existing.role_id
            await repo.update_role(conn, role_id, values)
    except IntegrityError:
        # Lost a race with a concurrent upsert of the same name.
        raise errors.invalid("role_name", "already exists") from None
    if wanted is not None:
        await repo.replace_permissions(conn, role_id, wanted)
    return int(role_id)


@writes("/role/enable", ACCOUNT_MANAGE)
async def enable_role(conn: AsyncConnection, actor: Actor, *, role_id: int) -> None:
    """Its holders get its permissions again."""
    await _set_status(conn, actor, role_id, "enabled")


@writes("/role/disable", ACCOUNT_MANAGE)
async def disable_role(conn: AsyncConnection, actor: Actor, *, role_id: int) -> None:
    """It stays assigned but grants nothing."""
    await _set_status(conn, actor, role_id, "disabled")


async def _set_status(conn: AsyncConnection, actor: Actor, role_id: int, status: str) -> None:
    row = await _require_custom(conn, actor, role_id)
    actor.note_audit_targets(row.role_id)
    # Enabling hands its permissions back to its holders, disabling takes them away: both
    # are granting or revoking them, so the same rule as for grant and revoke.
    await _require_held_role(conn, actor, row)
    if row.status != status:
        await repo.update_role(conn, row.role_id, {"status": status, "updated_at": actor.now_s})


@writes("/role/delete", ACCOUNT_MANAGE, dangerous=True)
async def delete_role(conn: AsyncConnection, actor: Actor, *, role_id: int) -> None:
    row = await _require_custom(conn, actor, role_id)
    actor.note_audit_targets(row.role_id)
    await _require_held_role(conn, actor, row)
    if await repo.holder_count(conn, row.role_id):
        raise errors.ReferenceExist(
            "Role {id} is still held by members; revoke it from them first", id=row.role_id
        )
    await repo.delete_role(conn, row.role_id)


def list_permissions_sync(
    conn: Connection, actor: Actor, *, role_ids: Sequence[int] | None = None,
    with_all: bool = False,
) -> list[PermissionItem]:
    """The permission catalog, or the permissions these roles grant (`with_all`: the whole
    catalog, each marked granted or not)."""
    granted: set[int] | None = None
    if role_ids is not None:
        rows = require_roles_sync(conn, actor, role_ids=role_ids)
        granted = set()
        for ids in _permission_ids_sync(conn, rows).values():
            granted.update(ids)
    items = []
    for p in permissions.CATALOG:
        is_granted = granted is not None and p.id in granted
        if granted is not None and not with_all and not is_granted:
            continue
        items.append(PermissionItem(
            id=p.id, permission_name=p.name, permission_type=p.permission_type,
            description=p.description, permission_class=p.permission_class, scope=p.scope,
            status="enabled", is_granted=is_granted if with_all else None,
        ))
    return items


# --- the console's default role for invitations ------------------------------------------


def responder_role_id_sync(conn: Connection, actor: Actor) -> int | None:
    """The account's Responder role (api/permissions.py RESPONDER_NAME, any case), if it has
    one yet."""
    row = repo.find_by_name_sync(conn, actor.account_id, permissions.RESPONDER_NAME)
    return None if row is None else int(row.role_id)


async def responder_role(conn: AsyncConnection, actor: Actor) -> int:
    """The account's Responder role, made now if it has none: a custom role that works
    incidents (RESPONDER_DEFAULT), made through `upsert_role`, so its permission, the rule
    that nobody gives what they do not hold, and its audit entry apply. An account that
    changed its Responder role keeps it as it is."""
    require(actor, ACCOUNT_MANAGE)
    found = await conn.run_sync(responder_role_id_sync, actor)
    if found is not None:
        return found
    return await upsert_role(conn, actor, role_name=permissions.RESPONDER_NAME,
                             description=permissions.RESPONDER_DESCRIPTION,
                             permission_ids=sorted(permissions.RESPONDER_DEFAULT))


# --- used by the member service ---------------------------------------------------------


def require_roles_sync(conn: Connection, actor: Actor, *,
                       role_ids: Sequence[int]) -> list[Any]:
    """The actor's account's roles with these ids; any other id is refused by name, so a
    role of another account is indistinguishable from one that never existed."""
    wanted = list(dict.fromkeys(role_ids))
    rows = repo.find_many_sync(conn, actor.account_id, set(wanted))
    found = {r.role_id for r in rows}
    if missing := [r for r in wanted if r not in found]:
        raise errors.not_found("role", missing[0])
    return rows


async def require_roles(conn: AsyncConnection, actor: Actor, *,
                        role_ids: Sequence[int]) -> list[Any]:
    """The actor's account's roles with these ids (`require_roles_sync`)."""
    return await conn.run_sync(lambda sync: require_roles_sync(sync, actor, role_ids=role_ids))


def builtin_role_id_sync(conn: Connection, actor: Actor, *, builtin: str) -> int:
    row = repo.find_builtin_sync(conn, actor.account_id, builtin)
    if row is None:  # every account is created with its built-in roles
        raise errors.InternalError()
    return int(row.role_id)


async def builtin_role_id(conn: AsyncConnection, actor: Actor, *, builtin: str) -> int:
    return await conn.run_sync(lambda sync: builtin_role_id_sync(sync, actor, builtin=builtin))


async def member_permissions(conn: AsyncConnection, actor: Actor, *,
                             member_id: int) -> frozenset[str]:
    """The permission names a member of the actor's account holds now, as their app keys
    would (platform/auth.py); none for a member deleted or disabled. For work done later on a
    member's authority (an automation run), so a role change applies to the next run."""
    ids: set[int] = set()
    for row in await repo.member_grants(conn, actor.account_id, member_id):
        if row.builtin in _ALL_PERMISSION_BUILTINS:
            ids |= permissions.ALL_IDS
        elif row.permission_id is not None:
            ids.add(row.permission_id)
    return permissions.expand(ids)


async def require_within_rights(conn: AsyncConnection, actor: Actor, *,
                                rows: Sequence[Any]) -> None:
    """Refuse (403 AccessDenied) handing out or taking away a role that grants what the
    actor does not hold: managing members is not a way to rise above one's own rights. The
    built-in Owner and Admin roles hold every permission, those the catalog gains later
    included, so only an owner or an admin may move them."""
    if actor.is_admin:
        return
    for row in rows:
        if row.builtin in _ALL_PERMISSION_BUILTINS:
            raise errors.AccessDenied(
                "Only an owner or an admin may grant or revoke the role {name}",
                name=row.role_name)
    granted = await _permission_ids(conn, list(rows))
    for row in rows:
        _require_held(actor, role_name=row.role_name, permission_ids=granted[row.role_id])


async def require_over(conn: AsyncConnection, actor: Actor, *,
                       member_ids: Sequence[int]) -> None:
    """Refuse (403 AccessDenied) acting on other members (`require_over_sync`)."""
    await conn.run_sync(lambda sync: require_over_sync(sync, actor, member_ids=member_ids))


def require_over_sync(conn: Connection, actor: Actor, *, member_ids: Sequence[int]) -> None:
    """Nobody acts above their own rights: an operation on another member (their keys,
    contacts, profile, roles, invitation, removal) needs every permission that member holds,
    disabled roles included (enabling one again would hand them back); an Admin holds all.
    Only the Owner acts on the Owner. Acting on oneself is always allowed, and so is the
    server itself (jobs, the operator's shell). Ids that are no live member of the account
    pass: the caller answers them as not found."""
    others = sorted({m for m in member_ids if m and m != actor.person_id})
    if not others or actor.credential == "system":
        return
    rows = repo.held_grants_sync(conn, actor.account_id, [*others, actor.person_id])
    owners = {r.member_id for r in rows if r.builtin == "owner"}
    if actor.person_id in owners:
        return
    if owners.intersection(others):
        raise errors.AccessDenied("Only the Owner may act on the Owner")
    if actor.is_admin:
        return
    held: dict[int, set[int]] = {}
    for r in rows:
        ids = held.setdefault(r.member_id, set())
        if r.builtin in _ALL_PERMISSION_BUILTINS:
            ids |= permissions.ALL_IDS
        elif r.permission_id is not None:
            ids.add(r.permission_id)
    for member_id in others:
        beyond = sorted(n for n in permissions.expand(held.get(member_id, set()))
                        if not actor.has(n))
        if beyond:
            raise errors.AccessDenied(
                "Member {id} holds permissions you do not hold: {names}",
                id=member_id, names=", ".join(beyond))


async def _require_held_role(conn: AsyncConnection, actor: Actor, row: Any) -> None:
    granted = await _permission_ids(conn, [row])
    _require_held(actor, role_name=row.role_name, permission_ids=granted[row.role_id])


def _require_held(actor: Actor, *, role_name: str, permission_ids: Sequence[int]) -> None:
    beyond = sorted(n for n in permissions.expand(set(permission_ids)) if not actor.has(n))
    if beyond:
        raise errors.AccessDenied(
            "The role {name} grants permissions you do not hold: {names}",
            name=role_name, names=", ".join(beyond))


# --- helpers ---------------------------------------------------------------------------


def _require_sync(conn: Connection, actor: Actor, role_id: int) -> Any:
    row = repo.find_sync(conn, actor.account_id, role_id)
    if row is None:
        raise errors.not_found("role", role_id)
    return row


async def _require(conn: AsyncConnection, actor: Actor, role_id: int) -> Any:
    return await conn.run_sync(_require_sync, actor, role_id)


async def _require_custom(conn: AsyncConnection, actor: Actor, role_id: int) -> Any:
    row = await _require(conn, actor, role_id)
    if row.builtin:
        raise errors.BadRequest("The built-in role cannot be changed")
    return row


def _permission_ids_sync(conn: Connection, rows: list[Any]) -> dict[int, list[int]]:
    stored = repo.permission_ids_by_role_sync(conn, [r.role_id for r in rows])
    every = sorted(permissions.ALL_IDS)
    return {
        r.role_id: every if r.builtin in _ALL_PERMISSION_BUILTINS else stored[r.role_id]
        for r in rows
    }


async def _permission_ids(conn: AsyncConnection, rows: list[Any]) -> dict[int, list[int]]:
    return await conn.run_sync(_permission_ids_sync, rows)


def _items_sync(conn: Connection, rows: list[Any]) -> list[RoleItem]:
    granted = _permission_ids_sync(conn, rows)
    return [
        RoleItem(
            role_id=r.role_id, role_name=r.role_name, description=r.description,
            status=r.status, permission_ids=granted[r.role_id], editable=not r.builtin,
            created_at=r.created_at, updated_at=r.updated_at,
        )
        for r in rows
    ]
