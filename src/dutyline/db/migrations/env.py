"""Alembic environment: async engines on both databases, batch mode for SQLite."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy import pool, text
from sqlalchemy.ext.asyncio import create_async_engine

from dutyline.config import Settings
from dutyline.db.tables import metadata
from dutyline.db.tables.meta import include_name

# Any constant works; it only has to be the same in every dutyline process.
MIGRATION_LOCK_ID = 0x6475747931

config = context.config
url: str = (
    config.attributes.get("database_url")
    or config.get_main_option("sqlalchemy.url")
    or Settings.load().database_url
)


def _run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        compare_type=True,
        include_name=include_name,  # the hand-made FTS tables and trigram index
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_async_engine(url, poolclass=pool.NullPool)
    try:
        async with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(text(f"SELECT pg_advisory_lock({MIGRATION_LOCK_ID})"))
                await conn.commit()
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=url, target_metadata=metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_async())
