"""A Context for calling the incident services that still take one (query, lifecycle) from a
job or a signed link: the given connection, and a caller that is either the system or one
person the link was made for.

Why an admin-scoped caller for a person: the signed link itself is the authorization (it
names the person and the incident and was made because they were paged), so the person acts
on that one incident whatever channel visibility their roles would otherwise give."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.api.auth import Caller
from dutyline.api.operation import Context
from dutyline.api.runtime import Runtime
from dutyline.api.transaction import RequestTransaction
from dutyline.kit.ids import request_id


class _Borrowed(RequestTransaction):
    """The transaction of whoever built the context (a job, a link's request)."""

    def __init__(self, conn: AsyncConnection) -> None:
        super().__init__(None, write=True)  # type: ignore[arg-type]
        self._conn = conn


def context(conn: AsyncConnection, runtime: Runtime, account_id: int, *, person_id: int = 0,
            person_name: str = "") -> Context:
    caller = Caller(account_id=account_id, person_id=person_id, person_name=person_name,
                    key_id=0, key_suffix="", permissions=frozenset(), builtin_role="admin")
    return Context(transaction=_Borrowed(conn), caller=caller, runtime=runtime,
                   request_id=request_id(), locale="en")
