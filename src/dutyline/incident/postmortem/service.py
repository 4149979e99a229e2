"""Post-mortems: the report written after one or more CLOSED incidents of a channel.

Creating one drafts it at once from the incidents' data (material.py, template.py). With an
LLM configured (DUTYLINE_LLM_BASE_URL and _MODEL), a durable job `DRAFT_JOB` is queued in
the same transaction; the AI-SRE domain handles it (aisre/postmortem), asks the model for the
summary, impact and contributing factors over the same material, and hands them back through
`record_model_draft`, which writes them only if nobody edited the report meanwhile.

Reads need what incident reads need (`channel_view` or `incident_manage`); writes need
`incident_manage`. A report is as visible as its channel's incidents: a private channel's
reports are hidden from members who cannot see the channel."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from sqlalchemy import Connection
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api import errors
from dutyline.api.access import reads, reads_sync, writes
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.api.permissions import INCIDENT_MANAGE
from dutyline.channel import service as channels
from dutyline.incident import visibility
from dutyline.incident.postmortem import material as materials
from dutyline.incident.postmortem import repository as repo
from dutyline.incident.postmortem import template
from dutyline.incident.postmortem.schemas import (
    ListPostMortemsResponse,
    PostMortemBasics,
    PostMortemContent,
    PostMortemDrafting,
    PostMortemItem,
    PostMortemMeta,
    PostMortemResponder,
)
from dutyline.incident.query.schemas import IncidentInfo
from dutyline.incident.query.service import VIEW_PERMISSIONS
from dutyline.kit.vocabulary import CLOSED, worst_severity
from dutyline.work.queue import enqueue

DRAFT_JOB = "incident.post_mortem.draft"
DRAFTING, PUBLISHED = "drafting", "published"
# The model's draft: none (no LLM), pending (queued), done, failed, skipped (edited first).
MODEL_NONE, MODEL_PENDING, MODEL_DONE, MODEL_FAILED, MODEL_SKIPPED = (
    "none", "pending", "done", "failed", "skipped")
EDITED_FIRST = "the report was edited before the model's draft arrived; it was not applied"

_ids = msgspec.json.Decoder(list[Any])
_basics = msgspec.json.Decoder(PostMortemBasics)
_encode = msgspec.json.encode


def post_mortem_id_of(account_id: int, incident_ids: Sequence[str]) -> str:
    """The reference's deterministic id: the account and the set of incidents."""
    key = f"{account_id}:" + ",".join(sorted({i.lower() for i in incident_ids}))
    return hashlib.md5(key.encode(), usedforsecurity=False).hexdigest()


def model_configured(deps: Deps) -> bool:
    return bool(deps.settings.llm_base_url and deps.settings.llm_model)


@writes("/incident/post-mortem/create", INCIDENT_MANAGE,
        targets=lambda item: [item.meta.post_mortem_id, *item.meta.incident_ids])
async def create_post_mortem(conn: AsyncConnection, actor: Actor, *, incident_ids: Sequence[str],
                             title: str = "", deps: Deps) -> PostMortemItem:
    ids = sorted({i.lower() for i in incident_ids})
    if not ids:
        raise errors.invalid("incident_ids", "is required")
    found = await materials.gather(conn, actor, incident_ids=ids, deps=deps)
    still_open = [i.incident_id for i in found.incidents if i.progress != CLOSED]
    if still_open:
        raise errors.BadRequest(
            "A post-mortem is written for closed incidents; close {ids} first",
            ids=", ".join(still_open))
    channel_ids = {i.channel_id for i in found.incidents}
    if len(channel_ids) > 1:
        raise errors.invalid("incident_ids", "must all belong to one channel")
    post_mortem_id = post_mortem_id_of(actor.account_id, ids)
    if await repo.exists(conn, post_mortem_id):
        raise _exists(post_mortem_id)
    channel_id = channel_ids.pop()
    team_id, is_private = await _channel_facts(conn, actor, channel_id)
    asks_model = model_configured(deps)
    now = actor.now_s
    values = {
        "post_mortem_id": post_mortem_id, "account_id": actor.account_id,
        "title": title.strip() or f"Post-mortem: {found.incidents[0].title}"[:255],
        "status": DRAFTING, "template_id": template.TEMPLATE_ID,
        "incident_ids": _encode(ids).decode(),
        "author_ids": _encode([actor.person_id] if actor.person_id else []).decode(),
        "team_id": team_id, "channel_id": channel_id, "is_private": is_private,
        "basics": _encode(basics_of(found.incidents)).decode(),
        "content": template.render(found), "follow_ups": "", "media_count": 0,
        "drafted_by": "template", "model_draft": MODEL_PENDING if asks_model else MODEL_NONE,
        "model_name": (deps.settings.llm_model or "") if asks_model else "", "model_error": "",
        "revision": 1, "created_at": now, "updated_at": now, "published_at": 0,
    }
    if not await repo.insert_post_mortem(conn, values):
        raise _exists(post_mortem_id)  # made by a concurrent request since the check
    if asks_model:
        await _queue_draft(conn, actor, post_mortem_id, revision=1)
    names = await channels.channel_names(conn, actor, [channel_id])
    return _item(values, names)


async def _queue_draft(conn: AsyncConnection, actor: Actor, post_mortem_id: str, *,
                       revision: int) -> None:
    await enqueue(conn, DRAFT_JOB, {"post_mortem_id": post_mortem_id,
                                    "account_id": actor.account_id, "revision": revision},
                  now_ms=int(actor.clock.now() * 1000), max_attempts=3,
                  dedupe_key=f"post_mortem_draft:{post_mortem_id}:{revision}")


def _exists(post_mortem_id: str) -> errors.ApiError:
    return errors.BadRequest("A post-mortem of these incidents already exists: {id}",
                             id=post_mortem_id)


async def _channel_facts(conn: AsyncConnection, actor: Actor, channel_id: int) -> tuple[int, bool]:
    """The owning team and privacy of the incidents' channel ((0, False) without one)."""
    if not channel_id:
        return 0, False
    try:
        row = await channels.require_visible(conn, actor, channel_id)
    except errors.ResourceNotFound:
        return 0, False  # deleted since: the report belongs to the account
    return int(row.team_id), bool(row.is_private)


def basics_of(incidents: list[IncidentInfo]) -> PostMortemBasics:
    responders: dict[int, PostMortemResponder] = {}
    for inc in incidents:
        for r in inc.responders:
            seen = responders.get(r.person_id)
            # Across incidents: the first assignment and the first acknowledgement.
            acks = [a for a in (r.acknowledged_at, seen.acknowledged_at if seen else 0) if a]
            responders[r.person_id] = PostMortemResponder(
                person_id=r.person_id,
                assigned_at=min(r.assigned_at, seen.assigned_at) if seen else r.assigned_at,
                acknowledged_at=min(acks, default=0), person_name=r.person_name,
                email=r.email)
    return PostMortemBasics(
        incidents_highest_severity=worst_severity(i.incident_severity for i in incidents) or "",
        incidents_earliest_start_seconds=min((i.start_time for i in incidents), default=0),
        incidents_latest_close_seconds=max((i.close_time for i in incidents), default=0),
        incidents_total_duration_seconds=sum(max(0, i.close_time - i.start_time)
                                             for i in incidents),
        responders=sorted(responders.values(), key=lambda r: (r.assigned_at, r.person_id)),
    )


def _item(row: Row[Any] | dict[str, Any], names: dict[int, tuple[str, str]]) -> PostMortemItem:
    v = row if isinstance(row, dict) else row._mapping
    return PostMortemItem(
        meta=_meta(v, names),
        basics=_basics.decode(v["basics"]),
        content=PostMortemContent(content=v["content"]),
        follow_ups=v["follow_ups"],
        drafting=PostMortemDrafting(drafted_by=v["drafted_by"], model_draft=v["model_draft"],
                                    model=v["model_name"], error=v["model_error"]),
    )


def _meta(v: Any, names: dict[int, tuple[str, str]]) -> PostMortemMeta:
    return PostMortemMeta(
        account_id=v["account_id"], title=v["title"], status=v["status"],
        post_mortem_id=v["post_mortem_id"], template_id=v["template_id"],
        incident_ids=[str(i) for i in _ids.decode(v["incident_ids"])],
        media_count=v["media_count"],
        author_ids=[int(i) for i in _ids.decode(v["author_ids"])], team_id=v["team_id"],
        channel_id=v["channel_id"], is_private=bool(v["is_private"]),
        channel_name=names.get(v["channel_id"], ("", ""))[0],
        created_at_seconds=v["created_at"], updated_at_seconds=v["updated_at"],
    )


def _visible_sync(conn: Connection, actor: Actor, post_mortem_id: str) -> Row[Any]:
    row = repo.find_sync(conn, visibility.scope_sync(conn, actor), post_mortem_id.lower())
    if row is None:
        raise errors.not_found("post-mortem", post_mortem_id)
    return row


async def _visible(conn: AsyncConnection, actor: Actor, post_mortem_id: str) -> Row[Any]:
    return await conn.run_sync(_visible_sync, actor, post_mortem_id)


@reads_sync(*VIEW_PERMISSIONS)
def post_mortem_info_sync(conn: Connection, actor: Actor, *,
                          post_mortem_id: str) -> PostMortemItem:
    row = _visible_sync(conn, actor, post_mortem_id)
    return _item(row, channels.channel_names_sync(conn, actor, [row.channel_id]))


@dataclass(frozen=True)
class ListQuery:
    status: str = PUBLISHED
    team_ids: Sequence[int] = ()
    channel_ids: Sequence[int] = ()
    created_at_start_seconds: int = 0
    created_at_end_seconds: int = 0
    order_by: str = "created_at_seconds"
    asc: bool = False
    p: int = 1
    limit: int = 20
    search_after_ctx: str = ""


@reads_sync(*VIEW_PERMISSIONS)
def list_post_mortems_sync(conn: Connection, actor: Actor, *,
                           query: ListQuery) -> ListPostMortemsResponse:
    """One page, by page number or, when `search_after_ctx` is given, after the row it
    names (then `p` is not read); `search_after_ctx` of the answer names the next page."""
    q = query
    start, end = q.created_at_start_seconds, q.created_at_end_seconds
    if start and end and start > end:
        raise errors.invalid("created_at_end_seconds", "must not be before the start")
    if q.order_by not in repo.ORDER_COLUMNS:
        raise errors.invalid("order_by")
    limit = q.limit or 20
    after = _read_cursor(q.search_after_ctx, q.order_by, q.asc) if q.search_after_ctx else None
    offset = 0 if after is not None else (max(q.p, 1) - 1) * limit
    scope = visibility.scope_sync(conn, actor)
    f = repo.ListFilter(status=q.status, team_ids=list(q.team_ids),
                        channel_ids=list(q.channel_ids), created_from=start, created_to=end)
    rows = repo.page_sync(conn, scope, f, order_by=q.order_by, asc=q.asc, offset=offset,
                          limit=limit + 1, after=after)
    total = repo.count_sync(conn, scope, f)
    has_next = len(rows) > limit
    rows = rows[:limit]
    names = channels.channel_names_sync(conn, actor, [r.channel_id for r in rows])
    items = [_meta(r._mapping, names) for r in rows]
    cursor = _write_cursor(rows[-1], q.order_by, q.asc) if has_next else ""
    return ListPostMortemsResponse(items=items, total=total, has_next_page=has_next,
                                   search_after_ctx=cursor)


def _write_cursor(row: Row[Any], order_by: str, asc: bool) -> str:
    value = row.created_at if order_by == "created_at_seconds" else row.updated_at
    raw = _encode([order_by, asc, value, row.post_mortem_id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str, order_by: str, asc: bool) -> tuple[int, str]:
    """The (order value, id) a cursor names. It only says where a page starts within what
    the caller may see anyway, so it needs no signature; one of another order is refused."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        written_order, written_asc, value, last_id = msgspec.json.decode(raw)
        if (written_order, written_asc) != (order_by, asc):
            raise errors.invalid("search_after_ctx", "was made for another order")
        if not isinstance(value, int) or not isinstance(last_id, str):
            raise ValueError
        return value, last_id
    except (binascii.Error, ValueError, TypeError, msgspec.DecodeError):
        raise errors.invalid("search_after_ctx") from None


@writes("/incident/post-mortem/update", INCIDENT_MANAGE,
        targets=lambda item: [item.meta.post_mortem_id])
async def update_post_mortem(
    conn: AsyncConnection, actor: Actor, *, post_mortem_id: str, title: str | None = None,
    content: str | None = None, follow_ups: str | None = None, status: str | None = None,
) -> PostMortemItem:
    """Edit a report; fields left None stay. `status` publishes it (or takes it back to
    drafting). Whoever edits it joins its authors."""
    row = await _visible(conn, actor, post_mortem_id)
    changes: dict[str, Any] = {}
    if title is not None:
        if not title.strip():
            raise errors.invalid("title", "must not be empty")
        changes["title"] = title.strip()
    if content is not None:
        changes["content"] = content
    if follow_ups is not None:
        changes["follow_ups"] = follow_ups
    if status is not None:
        if status not in (DRAFTING, PUBLISHED):
            raise errors.invalid("status")
        changes["status"] = status
        if status == PUBLISHED and row.status != PUBLISHED:
            changes["published_at"] = actor.now_s
    if changes:
        authors = [int(i) for i in _ids.decode(row.author_ids)]
        if actor.person_id and actor.person_id not in authors:
            authors.append(actor.person_id)
        changes |= {"author_ids": _encode(authors).decode(), "revision": row.revision + 1,
                    "updated_at": actor.now_s}
        await repo.update_post_mortem(conn, row.post_mortem_id, changes)
    values = {**row._mapping, **changes}
    return _item(values, await channels.channel_names(conn, actor, [row.channel_id]))


@writes("/incident/post-mortem/delete", INCIDENT_MANAGE)
async def delete_post_mortem(conn: AsyncConnection, actor: Actor, *,
                             post_mortem_id: str) -> str:
    row = await _visible(conn, actor, post_mortem_id)
    await repo.delete_post_mortem(conn, row.post_mortem_id)
    return str(row.post_mortem_id)


# --- the model's draft (the AI-SRE domain's job) ------------------------------------------


NO_LLM = ("No LLM is configured: set DUTYLINE_LLM_BASE_URL and DUTYLINE_LLM_MODEL (and "
          "DUTYLINE_LLM_API_KEY if the endpoint needs one)")


@writes("/incident/post-mortem/redraft", INCIDENT_MANAGE,
        targets=lambda item: [item.meta.post_mortem_id])
async def redraft_post_mortem(conn: AsyncConnection, actor: Actor, *, post_mortem_id: str,
                              deps: Deps) -> PostMortemItem:
    """Ask the model again for the summary, impact and contributing factors of a report in
    drafting (after a failed or skipped draft, or to redo it over the current body)."""
    row = await _visible(conn, actor, post_mortem_id)
    if not model_configured(deps):
        raise errors.BadRequest(NO_LLM)
    if row.status != DRAFTING:
        raise errors.BadRequest("A published post-mortem is not redrafted; set its status "
                                "back to drafting first")
    if row.model_draft == MODEL_PENDING:
        raise errors.BadRequest("The model is already drafting this post-mortem")
    changes = {"model_draft": MODEL_PENDING, "model_error": "",
               "model_name": deps.settings.llm_model or ""}
    await repo.update_post_mortem(conn, row.post_mortem_id, changes)
    await _queue_draft(conn, actor, row.post_mortem_id, revision=row.revision)
    return _item({**row._mapping, **changes},
                 await channels.channel_names(conn, actor, [row.channel_id]))



@dataclass(frozen=True)
class DraftAsk:
    """What the drafting job needs: the report's identity and scope, and its material."""

    post_mortem_id: str
    account_id: int
    revision: int
    author_id: int  # the first author: the model's incident tools read as them
    team_id: int
    title: str
    material: str  # materials.as_prompt


@reads(INCIDENT_MANAGE)
async def model_draft_ask(conn: AsyncConnection, actor: Actor, *, post_mortem_id: str,
                          revision: int, deps: Deps) -> DraftAsk | None:
    """None when there is nothing to draft any more (deleted, edited, drafted)."""
    row = await repo.find(conn, await visibility.scope(actor), post_mortem_id)
    if row is None or row.model_draft != MODEL_PENDING or row.revision != revision:
        return None
    found = await materials.gather(conn, actor, incident_ids=[
        str(i) for i in _ids.decode(row.incident_ids)], deps=deps)
    authors = [int(i) for i in _ids.decode(row.author_ids)]
    return DraftAsk(post_mortem_id=row.post_mortem_id, account_id=row.account_id,
                    revision=row.revision, author_id=authors[0] if authors else 0,
                    team_id=row.team_id, title=row.title,
                    material=materials.as_prompt(found))


@writes("/incident/post-mortem/draft", INCIDENT_MANAGE)
async def record_model_draft(
    conn: AsyncConnection, actor: Actor, *, post_mortem_id: str, revision: int,
    sections: dict[str, str] | None, model: str, error: str = "",
) -> str:
    """The model's summary, impact and contributing factors (`sections`, by heading), or
    None and why not (`error`). Written only at the revision the job was asked for: an edit
    made meanwhile wins, and the draft is recorded as skipped (whatever the model said)."""
    row = await repo.find(conn, await visibility.scope(actor), post_mortem_id)
    if row is None or row.model_draft != MODEL_PENDING:
        return post_mortem_id
    if row.revision != revision:
        await repo.update_post_mortem(conn, post_mortem_id, {
            "model_draft": MODEL_SKIPPED, "model_error": EDITED_FIRST, "model_name": model})
    elif sections is None:
        await repo.update_post_mortem(conn, post_mortem_id, {
            "model_draft": MODEL_FAILED, "model_error": error[:2000], "model_name": model})
    else:
        mark = f"_Drafted by the model {model}: review before publishing._"
        content = template.replace_sections(row.content, {
            name: f"{mark}\n\n{sections[name].strip()}" for name in template.MODEL_SECTIONS})
        await repo.update_post_mortem(conn, post_mortem_id, {
            "content": content, "drafted_by": "model", "model_draft": MODEL_DONE,
            "model_name": model, "model_error": "", "revision": row.revision + 1,
            "updated_at": actor.now_s}, revision=revision)
    return post_mortem_id
