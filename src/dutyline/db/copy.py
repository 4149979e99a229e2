"""Copy every table of one database into another, empty one at the same revision: how a
deployment moves from SQLite to PostgreSQL (`dutyline copy-to postgresql://...`), or back.

Tables are copied parents first (the foreign keys' order), rows read in one snapshot of the
source and written in batches inside ONE transaction of the target, so a copy that fails
leaves the target as empty as it found it. PostgreSQL's sequences then continue after the
highest id copied. The servers must be stopped meanwhile: writes made after the snapshot
would not be copied."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Integer, NullPool, Table, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from dutyline.db.tables import metadata

BATCH_ROWS = 1000


def target_url(url: str) -> str | None:
    """A database URL as operators write it (`postgresql://`, `postgres://`, `sqlite:///`)
    with the driver the server uses; None when it names neither database."""
    for prefix, driver in (("postgresql://", "postgresql+asyncpg"),
                           ("postgres://", "postgresql+asyncpg"),
                           ("postgresql+asyncpg://", "postgresql+asyncpg"),
                           ("sqlite:///", "sqlite+aiosqlite"),
                           ("sqlite+aiosqlite:///", "sqlite+aiosqlite")):
        if url.startswith(prefix):
            return f"{driver}://{url.partition('://')[2]}"
    return None


async def copy_tables(source_url: str, dest_url: str, *, batch: int = BATCH_ROWS,
                      progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """{table: rows copied}; the target must be migrated to the source's revision and hold
    no rows (the caller checks both)."""
    source = create_async_engine(source_url, poolclass=NullPool)
    dest = create_async_engine(dest_url, poolclass=NullPool)
    counts: dict[str, int] = {}
    try:
        async with source.connect() as src, dest.begin() as dst:
            await src.begin()  # one read transaction: one snapshot of every table
            for table in metadata.sorted_tables:
                counts[table.name] = await _copy(src, dst, table, batch)
                if progress is not None:
                    progress(table.name, counts[table.name])
            if dst.dialect.name == "postgresql":
                for table in metadata.sorted_tables:
                    await _continue_sequence(dst, table)
    finally:
        await source.dispose()
        await dest.dispose()
    return counts


async def _copy(src: AsyncConnection, dst: AsyncConnection, table: Table, batch: int) -> int:
    copied = 0
    order = list(table.primary_key.columns) or list(table.columns)
    result = await src.stream(select(table).order_by(*order))
    async for rows in result.mappings().partitions(batch):
        chunk: list[dict[str, Any]] = [dict(r) for r in rows]
        await dst.execute(table.insert(), chunk)
        copied += len(chunk)
    return copied


async def _continue_sequence(conn: AsyncConnection, table: Table) -> None:
    """Point the sequence of an integer primary key (if it has one) past the copied ids."""
    key = list(table.primary_key.columns)
    if len(key) != 1 or not isinstance(key[0].type, Integer):
        return
    column = key[0]
    highest = (await conn.execute(select(func.max(column)))).scalar()
    if highest is None:
        return
    await conn.execute(
        text("SELECT setval(pg_get_serial_sequence(:t, :c), :v)"),
        {"t": table.name, "c": column.name, "v": int(highest)})
