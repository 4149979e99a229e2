"""Who acts, for services: the one argument every service takes after its connection.

Services have the shape `(conn, actor, *, domain arguments) -> domain values`, so that
endpoints, jobs, the CLI and the console call the same functions. An endpoint builds its
actor from the request (`ctx.actor`); a job or the CLI builds one with `Actor.system(...)`,
and code acting for one person outside a request constructs one with their id (a signed
link: dispatch/system.py; an automation's reads: aisre/automation/tools.py). The clock
travels with the actor, so a service never reads the time any other way (rule 4 of the
house)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from dutyline.kit.clock import Clock

TeamIdsLoader = Callable[[], Awaitable[frozenset[int]]]


async def _no_teams() -> frozenset[int]:
    return frozenset()


@dataclass(slots=True)
class Actor:
    account_id: int
    person_id: int  # 0 for the system (a job, the CLI acting for the account)
    clock: Clock
    is_admin: bool = False  # owners and admins see and manage everything in the account
    permissions: frozenset[str] = frozenset()
    person_name: str = ""
    # The actor's teams, loaded only when a rule asks and then kept for the actor's life.
    _load_team_ids: TeamIdsLoader = field(default=_no_teams, repr=False)
    _team_ids: frozenset[int] | None = field(default=None, repr=False)

    @classmethod
    def system(cls, account_id: int, clock: Clock) -> Actor:
        """The service itself acting inside an account (engines, jobs, the CLI)."""
        return cls(account_id=account_id, person_id=0, clock=clock, is_admin=True)

    async def team_ids(self) -> frozenset[int]:
        if self._team_ids is None:
            self._team_ids = await self._load_team_ids()
        return self._team_ids

    def has(self, permission: str) -> bool:
        return self.is_admin or permission in self.permissions

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def now_s(self) -> int:
        return int(self.clock.now())

    @property
    def now_ms(self) -> int:
        return int(self.clock.now() * 1000)
