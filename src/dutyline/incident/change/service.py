"""Change events: what changed (a deployment, a configuration change, a feature flag), pushed
by the tool that made it through a channel's change integration, and shown where it helps,
on the incidents of the same channel that open soon after it ("what changed before this
broke").

- A push (`push_sync`) is authenticated by its integration key, like an alert push: the key
  must be a live change integration's (any other key is as unknown as a wrong one: 401) of an
  enabled channel (400). Pushes with the same `change_key` through the same integration update
  one change; each accepted push is also one change event (the on-call report counts both).
- Times: `start_time` is the push's own, or when the change was first pushed; `end_time` the
  push's own, or when a push first reports it Done or Canceled (0 while it runs).
- An incident shows the changes of its channel that started at most RECENT_WINDOW_S before
  it opened, or started earlier (within LOOKBACK_S) and were still running then.
- Reads see what the caller may see of incidents: the account's changes, less those of
  private channels the caller cannot see (incident/visibility.py)."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import CHANNEL_VIEW, INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.channel.integration.service import CHANGE as CHANGE_INTEGRATION
from dutyline.channel.integration.service import lookup_key_sync
from dutyline.incident import visibility
from dutyline.incident.analytics.schemas import Grid
from dutyline.incident.change import repository as repo
from dutyline.incident.change.schemas import (
    FINISHED,
    ChangeItem,
    ChangePushRequest,
    ChangePushResponse,
)
from dutyline.kit.ids import numeric_id

BAD_KEY = "Missing or invalid integration_key"
CHANNEL_OFF = "Channel {channel_id} is {status} and does not accept change events"
RECENT_WINDOW_S = 2 * 3600  # a change this close before an incident is shown on it
LOOKBACK_S = 24 * 3600  # a change still running is shown if it started at most this early
MAX_RECENT = 20  # changes shown on one incident
VIEW_PERMISSIONS = (CHANNEL_VIEW, INCIDENT_MANAGE)  # those of the incident reads

_labels = msgspec.json.Decoder(dict[str, str])


# --- the push ----------------------------------------------------------------------------

def check_key_sync(conn: Connection, key_hash: str) -> tuple[int, int, int]:
    """(integration_id, account_id, channel_id) of a live change integration's key of an
    enabled channel: 401 for any other key, 400 for a disabled channel."""
    found = lookup_key_sync(conn, key_hash)
    if found is None or found.integration.integration_type != CHANGE_INTEGRATION:
        raise errors.Unauthorized(BAD_KEY)
    integration = found.integration
    if integration.channel_status != "enabled":
        raise errors.BadRequest(CHANNEL_OFF, channel_id=integration.channel_id,
                                status=integration.channel_status)
    return integration.integration_id, integration.account_id, integration.channel_id


def push_sync(conn: Connection, key_hash: str, req: ChangePushRequest, *,
              now_s: int) -> ChangePushResponse:
    """Store one change event in the caller's transaction; the key is checked in it, so a
    key deleted a moment ago stores nothing."""
    integration_id, account_id, channel_id = check_key_sync(conn, key_hash)
    title = req.title.strip()
    if not title:
        raise errors.invalid("title", "must not be blank")
    if req.end_time and req.start_time and req.end_time < req.start_time:
        raise errors.invalid("end_time", "must not be before start_time")
    fields: dict[str, Any] = {
        "title": title, "description": req.description, "type": req.type,
        "status": req.change_status, "link": req.link,
        "labels": msgspec.json.encode(req.labels).decode(), "updated_at": now_s,
    }
    for _ in range(2):  # a concurrent first push of the same key: the second round updates
        row = repo.find_by_key_sync(conn, integration_id, req.change_key)
        if row is not None:
            change_id = int(row.change_id)
            start, end = _times(req, int(row.start_time), int(row.end_time), now_s)
            repo.update_sync(conn, change_id, {**fields, "start_time": start, "end_time": end})
            break
        change_id = numeric_id()
        start, end = _times(req, now_s, 0, now_s)
        if repo.insert_sync(conn, {
            **fields, "change_id": change_id, "account_id": account_id,
            "channel_id": channel_id, "integration_id": integration_id,
            "change_key": req.change_key, "creator_id": 0, "start_time": start,
            "end_time": end, "event_cnt": 1, "created_at": now_s,
        }):
            break
    else:
        raise RuntimeError("change key neither found nor inserted")
    repo.add_event_sync(conn, {"account_id": account_id, "change_id": change_id,
                               "channel_id": channel_id, "status": req.change_status,
                               "created_at": now_s})
    return ChangePushResponse(change_id=str(change_id), change_key=req.change_key)


def _times(req: ChangePushRequest, known_start: int, known_end: int,
           now_s: int) -> tuple[int, int]:
    """(start_time, end_time) after a push: the push's own times win; otherwise the start
    stays what it was (the first push's time) and the end is when a push first reported the
    change finished (0 while it runs, or runs again). An end never precedes the start: the
    times the push states are kept and the other one follows them."""
    start = req.start_time or known_start
    if req.end_time:
        end = req.end_time
    elif req.change_status in FINISHED:
        end = known_end or now_s
    else:
        end = 0
    if end and end < start:
        if req.start_time:
            end = start  # a finished change scheduled later than it was reported done
        else:
            start = end
    return start, end


# --- reads -------------------------------------------------------------------------------

def _items(conn: Connection, actor: Actor, rows: list[Any]) -> list[ChangeItem]:
    names = channels.channel_names_sync(conn, actor, [r.channel_id for r in rows])
    return [_item(r, names.get(r.channel_id, ("", ""))[0]) for r in rows]


def _item(r: Any, channel_name: str) -> ChangeItem:
    return ChangeItem(
        change_id=str(r.change_id), title=r.title, description=r.description, type=r.type,
        status=r.status, channel_id=r.channel_id, creator_id=r.creator_id,
        start_time=r.start_time, end_time=r.end_time, labels=_labels.decode(r.labels),
        change_key=r.change_key, link=r.link, integration_id=r.integration_id,
        event_cnt=r.event_cnt, created_at=r.created_at, updated_at=r.updated_at,
        change_status=r.status, channel_name=channel_name,
    )


@reads_sync(*VIEW_PERMISSIONS)
def list_changes_sync(conn: Connection, actor: Actor, *, change_ids: list[str],
                      channel_ids: list[int], start_time: int, end_time: int, type_: str,
                      offset: int, limit: int) -> tuple[int, list[ChangeItem]]:
    """(total, one page) of the changes the actor sees, latest start first. A change id that
    is not a number names no change."""
    ids = [int(i) for i in dict.fromkeys(change_ids) if i.isascii() and i.isdigit()
           and 0 < int(i) < 2**63]
    if change_ids and not ids:
        return 0, []
    if start_time and end_time and end_time < start_time:
        raise errors.invalid("end_time", "must not be before start_time")
    total, rows = repo.page_sync(
        conn, visibility.scope_sync(conn, actor), offset=offset, limit=limit, change_ids=ids,
        channel_ids=list(dict.fromkeys(channel_ids)), start_time=start_time,
        end_time=end_time, type_=type_)
    return total, _items(conn, actor, rows)


def recent_change_items_sync(conn: Connection, actor: Actor, *, channel_id: int,
                             at: int) -> list[ChangeItem]:
    """The changes shown on an incident of `channel_id` opened at `at`, latest first. For the
    incident reads, which have checked that the actor sees the incident (and so its
    channel)."""
    if not channel_id:
        return []
    rows = repo.before_full_sync(conn, actor.account_id, channel_id, at,
                                 window_s=RECENT_WINDOW_S, lookback_s=LOOKBACK_S,
                                 limit=MAX_RECENT)
    return _items(conn, actor, rows)


def recent_changes_sync(conn: Connection, *, account_id: int, channel_id: int,
                        at: int) -> list[dict[str, Any]]:
    """The same changes, short, for the incident's `i_new` feed entry when it opens."""
    rows = repo.before_sync(conn, account_id, channel_id, at, window_s=RECENT_WINDOW_S,
                            lookback_s=LOOKBACK_S, limit=MAX_RECENT)
    return [{"change_id": str(r.change_id), "title": r.title, "type": r.type,
             "status": r.status, "start_time": r.start_time, "end_time": r.end_time}
            for r in rows]


def change_totals_sync(conn: Connection, actor: Actor, *, start_time: int,
                       end_time: int, grid: Grid) -> tuple[dict[int, int], dict[int, int]]:
    """({bucket: changes started}, {bucket: change events received}) in [start_time,
    end_time) of what the actor sees. For the on-call report, whose service checks the
    permission."""
    changes, events = repo.change_totals_sync(conn, visibility.scope_sync(conn, actor),
                                              start_time=start_time, end_time=end_time,
                                              grid=grid)
    return ({int(r.bucket): int(r.n) for r in changes},
            {int(r.bucket): int(r.n) for r in events})
