"""SQLite's writer queue: one writer at a time, across this process's tasks and across the
processes that share the file, each woken the moment the one before it is done.

SQLite lets one transaction write at a time. A writer that finds the file locked sleeps in
SQLite's busy handler, naps of 1 to 100 ms, and tries again; with several processes on one
file (a `serve` and `dutyline worker`s) the lock sat free while its next writers slept (the
escalation timing bench at 10,000 incidents a minute: pages 40-58 s late with the machine
46 % idle). So writers first wait their turn on an asyncio lock inside the process, then on
an exclusive `flock` of a file beside the database across processes: the kernel wakes the
next waiter as soon as the lock is given back, and gives it back itself when its holder dies
(SIGKILL included).

The queue orders writers; it does not make writing safe. SQLite's own lock (`BEGIN
IMMEDIATE`) still guards every write, so a writer that bypasses the queue (another program,
a migration) or a queue disturbed by a cancelled wait costs only a nap, never a lost or torn
write."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path
from typing import Any


class WriterQueue:
    """An asyncio-lock-shaped queue (`acquire`, `release`, `async with`); with `lock_path`
    also across processes (None: a database without a file, one process)."""

    def __init__(self, lock_path: Path | None = None) -> None:
        self._local = asyncio.Lock()
        self._path = lock_path
        self._fd: int | None = None

    def locked(self) -> bool:
        return self._local.locked()

    def _file(self) -> int:
        if self._fd is None:
            assert self._path is not None
            # Not inherited by child processes: a child would share the lock.
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    async def acquire(self) -> bool:
        await self._local.acquire()
        if self._path is None:
            return True
        try:
            fd = self._file()
            # Blocks a thread of the default executor, one per process at most: the other
            # writers of this process wait on the asyncio lock above.
            taking = asyncio.get_running_loop().run_in_executor(
                None, fcntl.flock, fd, fcntl.LOCK_EX)
            try:
                await asyncio.shield(taking)
            except asyncio.CancelledError:
                # The thread takes the lock all the same: give it back once it has.
                taking.add_done_callback(self._give_back)
                raise
        except BaseException:
            self._local.release()
            raise
        return True

    def _give_back(self, taking: asyncio.Future[Any]) -> None:
        if not taking.cancelled() and taking.exception() is None and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def release(self) -> None:
        try:
            if self._path is not None and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._local.release()

    async def __aenter__(self) -> WriterQueue:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
