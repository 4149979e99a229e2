"""Every runner query: worknodes, runner keys and runner tasks. Each read that answers a
caller is scoped by account_id: a worknode of another account behaves as not found."""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

from sqlalchemy import Select, and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.like import any_contains_bound, contains_pattern
from dutyline.db.paging import counted_page_sync
from dutyline.db.tables.runner import runner_key, runner_task, runner_worknode

# --- worknodes ------------------------------------------------------------------------------


async def insert_worknode(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(runner_worknode).values(**values))


_WORKNODE = select(runner_worknode).where(
    runner_worknode.c.account_id == bindparam("account_id"),
    runner_worknode.c.worknode_id == bindparam("worknode_id"),
)


def get_worknode_sync(conn: Connection, account_id: int, worknode_id: str) -> Row[Any] | None:
    return conn.execute(_WORKNODE, {"account_id": account_id,
                                    "worknode_id": worknode_id}).first()


async def get_worknode(conn: AsyncConnection, account_id: int, worknode_id: str) -> Row[Any] | None:
    return await conn.run_sync(get_worknode_sync, account_id, worknode_id)


async def update_worknode(
    conn: AsyncConnection, worknode_id: str, values: dict[str, Any], *, holder: str | None = None
) -> int:
    """Update a worknode; with `holder`, only while that process still holds its socket (a
    runner that reconnected to another process is that process's now)."""
    stmt = update(runner_worknode).where(runner_worknode.c.worknode_id == worknode_id)
    if holder is not None:
        stmt = stmt.where(runner_worknode.c.holder == holder)
    return int((await conn.execute(stmt.values(**values))).rowcount or 0)


async def delete_worknode(conn: AsyncConnection, account_id: int, worknode_id: str) -> None:
    await conn.execute(delete(runner_key).where(
        runner_key.c.account_id == account_id, runner_key.c.worknode_id == worknode_id))
    await conn.execute(delete(runner_task).where(
        runner_task.c.account_id == account_id, runner_task.c.worknode_id == worknode_id))
    await conn.execute(delete(runner_worknode).where(
        runner_worknode.c.account_id == account_id,
        runner_worknode.c.worknode_id == worknode_id))


async def name_taken(conn: AsyncConnection, account_id: int, name: str, *,
                     other_than: str = "") -> bool:
    stmt = select(runner_worknode.c.worknode_id).where(
        runner_worknode.c.account_id == account_id,
        func.lower(runner_worknode.c.name) == name.lower(),
        runner_worknode.c.worknode_id != other_than,
    ).limit(1)
    return (await conn.execute(stmt)).first() is not None


@functools.cache
def _worknode_page(by_name: bool, online: bool | None) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conditions = [runner_worknode.c.account_id == bindparam("account_id")]
    if by_name:
        conditions.append(any_contains_bound("name_pattern", runner_worknode.c.name))
    if online is not None:
        is_online = and_(runner_worknode.c.holder != "",
                         runner_worknode.c.last_heartbeat_at >= bindparam("online_since"))
        conditions.append(is_online if online else ~is_online)
    return (select(func.count()).select_from(runner_worknode).where(*conditions),
            select(runner_worknode).where(*conditions)
            .order_by(runner_worknode.c.created_at.desc(), runner_worknode.c.worknode_id))


def list_worknodes_sync(
    conn: Connection, account_id: int, *, query: str, online_since: int | None,
    online: bool | None, offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    params: dict[str, Any] = {"account_id": account_id}
    if query:
        params["name_pattern"] = contains_pattern(query.lower())
    if online is not None and online_since is not None:
        params["online_since"] = online_since
    else:
        online = None
    count, page = _worknode_page(bool(query), online)
    total, rows = counted_page_sync(conn, count, page, offset=offset, limit=limit,
                                    params=params)
    return total, list(rows)


_KEY_COUNTS = select(runner_key.c.worknode_id, func.count()).where(
    runner_key.c.worknode_id.in_(bindparam("worknode_ids", expanding=True)),
    runner_key.c.revoked.is_(False),
).group_by(runner_key.c.worknode_id)


def key_counts_sync(conn: Connection, worknode_ids: Collection[str]) -> dict[str, int]:
    if not worknode_ids:
        return {}
    rows = conn.execute(_KEY_COUNTS, {"worknode_ids": list(worknode_ids)}).all()
    return {r[0]: int(r[1]) for r in rows}


# --- keys -----------------------------------------------------------------------------------


async def insert_key(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(runner_key).values(**values))


async def get_key(conn: AsyncConnection, account_id: int, key_id: str) -> Row[Any] | None:
    stmt = select(runner_key).where(
        runner_key.c.account_id == account_id, runner_key.c.key_id == key_id)
    return (await conn.execute(stmt)).first()


async def key_by_hash(conn: AsyncConnection, key_hash: str) -> Row[Any] | None:
    stmt = select(runner_key).where(runner_key.c.key_hash == key_hash)
    return (await conn.execute(stmt)).first()


async def update_key(conn: AsyncConnection, key_id: str, values: dict[str, Any]) -> None:
    await conn.execute(update(runner_key).where(runner_key.c.key_id == key_id).values(**values))


@functools.cache
def _key_page(by_worknode: bool, include_revoked: bool) -> tuple[Select[Any], Select[Any]]:
    """The (count, ordered page) statements of one combination of filters."""
    conditions = [runner_key.c.account_id == bindparam("account_id")]
    if by_worknode:
        conditions.append(runner_key.c.worknode_id == bindparam("worknode_id"))
    if not include_revoked:
        conditions.append(runner_key.c.revoked.is_(False))
    return (select(func.count()).select_from(runner_key).where(*conditions),
            select(runner_key).where(*conditions)
            .order_by(runner_key.c.created_at.desc(), runner_key.c.key_id))


def list_keys_sync(
    conn: Connection, account_id: int, *, worknode_id: str, include_revoked: bool,
    offset: int, limit: int,
) -> tuple[int, list[Row[Any]]]:
    count, page = _key_page(bool(worknode_id), include_revoked)
    total, rows = counted_page_sync(
        conn, count, page, offset=offset, limit=limit,
        params={"account_id": account_id, "worknode_id": worknode_id})
    return total, list(rows)


# --- tasks ----------------------------------------------------------------------------------


async def insert_task(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(insert(runner_task).values(**values))


async def get_task(conn: AsyncConnection, task_id: str) -> Row[Any] | None:
    return (await conn.execute(
        select(runner_task).where(runner_task.c.task_id == task_id))).first()


async def update_task(
    conn: AsyncConnection, task_id: str, values: dict[str, Any], *,
    only_status: Collection[str] | None = None,
) -> int:
    stmt = update(runner_task).where(runner_task.c.task_id == task_id)
    if only_status is not None:
        stmt = stmt.where(runner_task.c.status.in_(list(only_status)))
    return int((await conn.execute(stmt.values(**values))).rowcount or 0)


async def append_output(conn: AsyncConnection, task_id: str, chunk: str, now_ms: int) -> None:
    await conn.execute(update(runner_task).where(runner_task.c.task_id == task_id).values(
        output=runner_task.c.output + chunk, output_seq=runner_task.c.output_seq + 1,
        updated_at=now_ms))


async def relay_work(conn: AsyncConnection, worknode_ids: Collection[str]) -> list[Row[Any]]:
    """Tasks for these worknodes that another process wrote: new ones to send, and sent ones
    whose requester asks to cancel."""
    if not worknode_ids:
        return []
    stmt = select(runner_task).where(
        runner_task.c.worknode_id.in_(list(worknode_ids)),
        or_(runner_task.c.status == "pending",
            and_(runner_task.c.status == "sent", runner_task.c.cancel_requested.is_(True))),
    ).order_by(runner_task.c.created_at).limit(100)
    return list((await conn.execute(stmt)).all())


async def delete_tasks_before(conn: AsyncConnection, before_ms: int) -> None:
    await conn.execute(delete(runner_task).where(runner_task.c.created_at < before_ms))
