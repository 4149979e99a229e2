"""Keep the garbage collector off what a server process keeps for its whole life.

Everything imported and built at start (modules, SQLAlchemy's tables and compiled
statements, routes, msgspec types) lives until exit, yet every full (generation 2) collection
walks all of it again: about 110 ms a time in a serving process, which alone set the p99 of
alert ingestion (bench/README.md). `gc.freeze()` moves the objects alive now to the permanent
generation, so later collections only walk what requests create (about 2 ms).

Only for process entry points (`dutyline serve`, `dutyline worker`): frozen objects are never
collected, so a test process that builds many apps must not call it.
"""

from __future__ import annotations

import gc


def settle() -> None:
    gc.collect()  # what is garbage now is not frozen with the rest
    gc.freeze()
