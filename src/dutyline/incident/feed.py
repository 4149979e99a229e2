"""The incident feed: who did what to an incident, and when (reference FeedDetail* types)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection, insert
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.db.tables.incident import incident_feed

# Feed entry types used by this service (reference IncidentFeedType).
NEW = "i_new"
ACK = "i_ack"
UNACK = "i_unack"
RESOLVE = "i_rslv"
REOPEN = "i_reopen"
SNOOZE = "i_snooze"
WAKE = "i_wake"
COMMENT = "i_comm"
ASSIGN = "i_assign"
MERGE = "i_merge"
RESET_FIELD = "i_r_field"
RESET_TITLE = "i_r_title"
RESET_DESCRIPTION = "i_r_desc"
RESET_SEVERITY = "i_r_severity"
RESET_IMPACT = "i_r_impact"
RESET_ROOT_CAUSE = "i_r_rc"
RESET_RESOLUTION = "i_r_rsltn"


def add_sync(
    conn: Connection,
    *,
    incident_id: str,
    account_id: int,
    feed_type: str,
    creator_id: int,
    detail: dict[str, Any] | None = None,
    now_s: int,
) -> None:
    conn.execute(
        insert(incident_feed).values(
            incident_id=incident_id,
            account_id=account_id,
            type=feed_type,
            creator_id=creator_id,
            detail=msgspec.json.encode(detail or {}).decode(),
            created_at=now_s,
        )
    )


async def add(
    conn: AsyncConnection,
    *,
    incident_id: str,
    account_id: int,
    feed_type: str,
    creator_id: int,
    detail: dict[str, Any] | None = None,
    now_s: int,
) -> None:
    await conn.run_sync(
        add_sync, incident_id=incident_id, account_id=account_id, feed_type=feed_type,
        creator_id=creator_id, detail=detail, now_s=now_s,
    )
