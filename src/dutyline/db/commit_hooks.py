"""Callbacks that run when a transaction that asked for them commits.

Code inside a transaction cannot know whether it will commit, and what it wants to announce
(a job is due: wake the workers) must not be announced before the rows are there. So it
`mark`s the transaction with a topic, and whoever cares `subscribe`s to the topic: the
subscribers run once per committed transaction that marked it, never for one that rolled
back. Marks live in the connection's `info` and are cleared at the end of every transaction.

A subscriber may be called on any thread (SQLite's writer thread commits the ingest path),
so it must be thread-safe and quick: set a flag, hand a call to an event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, event

_MARKS = "dutyline.commit_marks"
_subscribers: dict[str, list[Callable[[], None]]] = {}
# Callbacks that need the committing connection (to read what else the transaction noted in
# its `info`), by topic: (on commit, on rollback).
_with_connection: dict[str, tuple[Callable[[Any], None], Callable[[Any], None]]] = {}


def mark(conn: Connection, topic: str) -> bool:
    """Ask for `topic`'s subscribers to run when this transaction commits; True the first
    time this transaction marks it."""
    marks: set[str] = conn.info.setdefault(_MARKS, set())
    if topic in marks:
        return False
    marks.add(topic)
    return True


def subscribe(topic: str, callback: Callable[[], None]) -> Callable[[], None]:
    """Run `callback` after every committed transaction that marked `topic`; returns the
    function that unsubscribes it."""
    _subscribers.setdefault(topic, []).append(callback)

    def unsubscribe() -> None:
        callbacks = _subscribers.get(topic, [])
        if callback in callbacks:
            callbacks.remove(callback)

    return unsubscribe


def subscribe_with_connection(
    topic: str, on_commit: Callable[[Any], None], on_rollback: Callable[[Any], None]
) -> None:
    """Like `subscribe`, but the callback receives the connection; `on_rollback` runs for
    every rollback (whether or not the transaction marked the topic), to clear what it kept
    in the connection's `info`."""
    _with_connection[topic] = (on_commit, on_rollback)


def install(engine: Engine) -> None:
    """Watch `engine`'s transactions (each engine of a Database, once)."""
    event.listen(engine, "commit", _on_commit)
    event.listen(engine, "rollback", _on_rollback)


def _on_commit(conn: Any) -> None:
    # "commit" is dispatched just before the driver commits. On SQLite the committing writer
    # still holds the process's writer lock, so a woken claimer of this process waits for the
    # commit to land; PostgreSQL's other processes learn of it through NOTIFY, delivered only
    # after the commit (work/wakeup.py).
    marks: set[str] | None = conn.info.pop(_MARKS, None)
    for topic in marks or ():
        pair = _with_connection.get(topic)
        if pair is not None:
            pair[0](conn)
        for callback in list(_subscribers.get(topic, ())):
            callback()


def _on_rollback(conn: Any) -> None:
    if conn.invalidated:
        # A statement was interrupted (a cancelled task): the connection is being discarded
        # and `info` would raise instead of answering. A mark left on its pool record can at
        # worst ring once more after a later commit, which costs an idle worker one look.
        return
    conn.info.pop(_MARKS, None)
    for _, on_rollback in _with_connection.values():
        on_rollback(conn)
