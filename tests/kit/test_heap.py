"""kit.heap.settle: a server process's start-up objects leave the garbage collector's walks.

Run in a child interpreter: frozen objects are never collected, so the test process itself
must not freeze."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import gc
from dutyline.app import create_app
from dutyline.config import Settings
from dutyline.kit import heap
before = gc.get_freeze_count()
app = create_app(Settings(database_url="sqlite+aiosqlite:///unused.db"))
heap.settle()
print(before, gc.get_freeze_count(), len(gc.get_objects(generation=2)))
"""


def test_settle_freezes_what_the_process_built_at_start(tmp_path: object) -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         check=True, cwd=str(tmp_path), timeout=120)
    before, frozen, left_in_oldest = map(int, out.stdout.split())
    assert before == 0
    assert frozen > 50_000  # the app's modules, tables, statements and routes
    assert left_in_oldest < frozen // 100  # the full collections no longer walk them
