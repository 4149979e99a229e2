"""Reads in one unit: every operation that only reads the database is a sync read operation
(api/operation.py), so that the caller's authentication and the operation's queries run as
one unit of database work. An operation that reads and also waits on something else (a data
source, a remote server, a template rendered off the event loop) stays async: each is named
here with what it waits on."""

from __future__ import annotations

from dutyline.api.operation import Operation
from dutyline.domains import all_routers

AWAITS_MORE_THAN_THE_DATABASE: dict[str, str] = {
    "/template/preview": "renders the caller's template off the event loop, under its limits",
    "/incident/war-room/detail": "asks the chat provider about the room",
    "/safari/mcp/server/get": "asks the MCP server for its tools",
    "/monit/datasource/query": "queries the data source",
    "/monit/tools/catalog": "asks the data sources what they hold",
    "/monit/tools/invoke": "queries the data source",
    "/monit/query/rows": "queries the data source",
    "/monit/query/diagnose": "queries the data source",
}


def _plain_reads() -> list[Operation]:
    """Operations that neither write, audit, call out first, answer a file nor take a raw
    body: what a sync handler may be."""
    return [op for router in all_routers() for op in router.operations
            if not (op.write or op.audited or op.outbound or op.download or op.raw_body)]


def test_every_plain_read_runs_as_one_unit_of_database_work() -> None:
    async_reads = {op.path for op in _plain_reads() if not op.sync}
    assert sorted(async_reads - AWAITS_MORE_THAN_THE_DATABASE.keys()) == []


def test_every_named_exception_is_still_an_async_read() -> None:
    """A stale entry would let a new async read hide under an old name."""
    async_reads = {op.path for op in _plain_reads() if not op.sync}
    assert sorted(AWAITS_MORE_THAN_THE_DATABASE.keys() - async_reads) == []
