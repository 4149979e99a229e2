"""The operation list of docs/api.md names every operation the app serves, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from dutyline.domains import all_routers

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def _listed() -> set[str]:
    text = API_DOC.read_text()
    table = text.split("## Operations", 1)[1].split("\n## ", 1)[0]
    paths: set[str] = set()
    for cell in re.findall(r"`(/[^`?]+)(?:\?[^`]*)?`", table):
        # `/a/b\|c\|d/e` names /a/b and /a/c and /a/d/e: alternatives of the last segment.
        head, _, tail = cell.partition("\\|")
        paths.add(head)
        base = head.rsplit("/", 1)[0]
        for alternative in tail.split("\\|") if tail else []:
            paths.add(f"{base}/{alternative}")
    return paths


def test_the_api_page_lists_every_served_operation() -> None:
    served = {op.path for r in all_routers() for op in r.operations}
    # Routes outside the operation layer (ingestion, trigger fires, the runners' WebSocket)
    # are named in the table too.
    listed = {p for p in _listed()
              if not p.startswith("/event/push/") and "{" not in p and not p.endswith("/ws")}
    assert sorted(served - listed) == []
    assert sorted(listed - served) == []
