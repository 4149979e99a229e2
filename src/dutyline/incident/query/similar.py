"""/incident/past/list: earlier incidents of the same channel that look like this one.

The candidates are chosen by SQL and bounded (repository.past_candidates: the channel's most
recent incidents before this one, plus the most recent of its own grouping key), then scored
here by title and labels:

- title: the mean of two Jaccard similarities, over word tokens and over character
  trigrams (so "disk full on db-7" and "Disk full on db-12" are close);
- labels: Jaccard similarity over `key=value` pairs;
- score = 0.7 × title + 0.3 × labels when the incident has labels, else the title alone.

Scores lie in [0, 1]; below MIN_SCORE a candidate is not similar at all. Best first, the more
recent first among equal scores."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.deps import Deps
from dutyline.incident import visibility
from dutyline.incident.query import repository as repo
from dutyline.incident.query.schemas import PastIncidentItem
from dutyline.incident.query.service import VIEW_PERMISSIONS, records_sync

DEFAULT_LIMIT = 5
MIN_SCORE = 0.1
TITLE_WEIGHT = 0.7

_WORD = re.compile(r"[^\W_]+")
_labels = msgspec.json.Decoder(dict[str, Any])


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _words(title: str) -> set[str]:
    return set(_WORD.findall(title.lower()))


def _trigrams(title: str) -> set[str]:
    text = f"  {' '.join(_WORD.findall(title.lower()))} "
    return {text[i:i + 3] for i in range(len(text) - 2)}


def _pairs(raw: str) -> set[str]:
    try:
        labels = _labels.decode(raw or "{}")
    except msgspec.DecodeError:
        return set()
    return {f"{k}={v}" for k, v in labels.items()}


class _Reference:
    def __init__(self, title: str, labels: str) -> None:
        self.words, self.trigrams, self.pairs = _words(title), _trigrams(title), _pairs(labels)

    def score(self, title: str, labels: str) -> float:
        title_score = (_jaccard(self.words, _words(title))
                       + _jaccard(self.trigrams, _trigrams(title))) / 2
        if not self.pairs:
            return round(title_score, 4)
        labels_score = _jaccard(self.pairs, _pairs(labels))
        return round(TITLE_WEIGHT * title_score + (1 - TITLE_WEIGHT) * labels_score, 4)


@reads_sync(*VIEW_PERMISSIONS)
def past_incidents_sync(
    conn: Connection, actor: Actor, *, incident_id: str, limit: int = DEFAULT_LIMIT,
    offset: int = 0, deps: Deps,
) -> tuple[int, list[PastIncidentItem]]:
    """(how many earlier incidents of the incident's channel are similar enough, the `limit`
    (0: the default) of them from `offset`, most similar first), as whole records (the
    server's base URL for their links) with their score."""
    scope = visibility.scope_sync(conn, actor)
    ref = repo.find_sync(conn, scope, incident_id.lower())
    if ref is None:
        raise errors.not_found("incident", incident_id)
    reference = _Reference(ref.title, ref.labels)
    scored = sorted(
        ((reference.score(c.title, c.labels), c.start_time, c.incident_id)
         for c in repo.past_candidates_sync(conn, scope, ref)),
        reverse=True,
    )
    similar = [(score, found) for score, _, found in scored if score >= MIN_SCORE]
    best = similar[offset:offset + (limit or DEFAULT_LIMIT)]
    if not best:
        return len(similar), []
    rows = repo.find_many_sync(conn, scope, [i for _, i in best])
    infos = {info.incident_id: info
             for info in records_sync(conn, actor, rows, deps=deps)}
    return len(similar), [PastIncidentItem(**msgspec.structs.asdict(infos[i]), score=score)
                          for score, i in best if i in infos]
