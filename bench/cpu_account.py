"""Where a benchmark's CPU went: CPU seconds per group of processes over a run.

A thread reads /proc every half second: each process's user + system time (all its
threads), grouped by a caller's function of its command line, and the machine's busy and
system shares from /proc/stat. A process that ends mid-run keeps what it had used at the
last read before it ended (a PostgreSQL backend of a closed connection), so the figures
are a lower bound by at most half a second of such processes' time."""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: str) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _machine() -> tuple[int, int, int]:
    """(busy, system, total) ticks of all CPUs."""
    parts = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = parts[3] + parts[4]
    system = parts[2] + parts[5] + parts[6]  # system, irq, softirq
    return sum(parts) - idle, system, sum(parts)


class CpuAccount:
    """`with CpuAccount(group) as acct: ...`, then `acct.report()`. `group(pid, cmdline)`
    names a process's group, or None to leave it out."""

    def __init__(self, group: Callable[[int, str], str | None], interval_s: float = 0.5):
        self._group = group
        self._interval = interval_s
        self._first: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._names: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._machine0 = self._machine1 = (0, 0, 0)

    def _sample(self, first: bool) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            if pid not in self._names:
                self._names[pid] = self._group(int(pid), _cmdline(pid))
            if self._names[pid] is None:
                continue
            ticks = _cpu_ticks(pid)
            if ticks is None:
                continue
            # A process born after the start counts from zero.
            self._first.setdefault(pid, ticks if first else 0)
            self._last[pid] = ticks

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample(first=False)

    def __enter__(self) -> CpuAccount:
        self._machine0 = _machine()
        self._sample(first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(first=False)
        self._machine1 = _machine()

    def seconds(self) -> dict[str, float]:
        used: dict[str, float] = defaultdict(float)
        for pid, last in self._last.items():
            name = self._names[pid]
            if name is not None:
                used[name] += (last - self._first[pid]) / _TICK
        return dict(used)

    def report(self, per: int = 0, unit: str = "") -> str:
        """One line: seconds per group (and milliseconds per `unit` when `per` is given),
        and how busy the machine's CPUs were, with the system (kernel) share."""
        busy = self._machine1[0] - self._machine0[0]
        system = self._machine1[1] - self._machine0[1]
        total = self._machine1[2] - self._machine0[2] or 1
        parts = []
        for name, secs in sorted(self.seconds().items()):
            each = f" ({secs * 1000 / per:.2f} ms/{unit})" if per else ""
            parts.append(f"{name} {secs:.1f} s{each}")
        return (f"CPU: {', '.join(parts)}; machine busy {busy / total:.0%} "
                f"(kernel {system / total:.0%})")
