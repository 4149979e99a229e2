"""`dutyline serve` with the database pool changed from outside, for what-if runs only.

    DUTYLINE_BENCH_POOL_SIZE=40 python -m bench.serve_tuned serve --host ... --port ...

Wraps create_async_engine as dutyline.db.engine sees it, so the src tree stays as it is:
DUTYLINE_BENCH_POOL_SIZE sets pool_size (and max_overflow=0, so connections are kept instead
of opened and closed per burst), DUTYLINE_BENCH_PRE_PING=0 turns pool_pre_ping off. With
--workers 1 uvicorn builds the app in this process, so the patch applies to it.
"""

from __future__ import annotations

import os
from typing import Any


def _patch() -> None:
    from dutyline.db import engine as engine_module

    original = engine_module.create_async_engine
    pool_size = int(os.environ.get("DUTYLINE_BENCH_POOL_SIZE", "0"))
    pre_ping = os.environ.get("DUTYLINE_BENCH_PRE_PING")

    def create(url: Any, **kwargs: Any) -> Any:
        if pool_size > 0:
            kwargs["pool_size"] = pool_size
            kwargs["max_overflow"] = 0
        if pre_ping is not None and "pool_pre_ping" in kwargs:
            kwargs["pool_pre_ping"] = pre_ping == "1"
        return original(url, **kwargs)

    engine_module.create_async_engine = create  # type: ignore[assignment]


if __name__ == "__main__":
    _patch()
    from dutyline.cli import main

    main()
