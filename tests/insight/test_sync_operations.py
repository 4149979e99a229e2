"""The alert, change, field, post-mortem, insight and on-call report reads are sync read
operations (api/operation.py): their database work, the caller's scope included, runs as one
unit. Their answers are those their own tests check."""

from __future__ import annotations

import pytest

from dutyline.api.operation import Operation
from dutyline.domains import all_routers

SYNC_READS = (
    "/alert/list", "/alert/info", "/alert/event/list", "/alert/list-by-ids", "/alert/feed",
    "/alert-event/list", "/change/list", "/field/info", "/field/list",
    "/incident/post-mortem/info", "/incident/post-mortem/list",
    "/insight/account", "/insight/channel", "/insight/team", "/insight/responder",
    "/insight/incident/list", "/insight/alert/topk-by-label",
    "/report/oncall/notifications", "/report/oncall/changes",
)


def _operations() -> dict[str, Operation]:
    return {op.path: op for router in all_routers() for op in router.operations}


@pytest.mark.parametrize("path", SYNC_READS)
def test_the_read_is_a_sync_operation(path: str) -> None:
    op = _operations()[path]
    assert op.sync and not op.write
