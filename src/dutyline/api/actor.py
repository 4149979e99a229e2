"""Who acts, for services: the one argument every service takes after its connection.

Services have the shape `(conn, actor, *, domain arguments) -> domain values`, so that
endpoints, jobs, the CLI and the console call the same functions. Actors are made by the
door (api/unit.py: `system_actor`, `caller_actor`, `person_actor`), which owns each one made
inside a unit of work and flushes what its services noted; no other module of the package
builds one (tests/arch/test_service_access.py). The clock travels with the actor, so a
service never reads the time any other way (rule 4 of the house).

The actor also carries what its services did, for the audit log: a write service
(api/access.py) checks the actor's permission and notes its entry here, or, when it fails,
the write it attempted; the unit of work it runs in flushes the entries into the log before
committing, or records the failed write with its outcome. `credential` says how the actor
proved who it is, so the log says who and how."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dutyline.kit.clock import Clock

if TYPE_CHECKING:
    from sqlalchemy import Connection

# How an actor proved who it is: an app key (machines), a person's signed-in session (the
# console), a signed link from a notification, or the service itself (jobs, the CLI).
Credential = Literal["app_key", "session", "signed_link", "system"]
CREDENTIALS: tuple[Credential, ...] = ("app_key", "session", "signed_link", "system")


@dataclass(slots=True)
class AuditEntry:
    """One write a service did, waiting for the transaction's runner to log it."""

    operation: str  # the API operation it implements, e.g. "/incident/ack"
    targets: list[Any]
    dangerous: bool = False


TeamIdsLoader = Callable[[], Awaitable[frozenset[int]]]
# The same, inside a sync unit of database work (a sync read service): given its connection.
SyncTeamIdsLoader = Callable[["Connection"], frozenset[int]]


async def _no_teams() -> frozenset[int]:
    return frozenset()


def _no_teams_sync(conn: Connection) -> frozenset[int]:
    return frozenset()


def _async_only(conn: Connection) -> frozenset[int]:
    raise RuntimeError("this actor loads its teams only on the async side: await team_ids() "
                       "before its sync services run")


@dataclass(slots=True)
class Actor:
    account_id: int
    person_id: int  # 0 for the system (a job, the CLI acting for the account)
    clock: Clock
    is_admin: bool = False  # owners and admins see and manage everything in the account
    permissions: frozenset[str] = frozenset()
    person_name: str = ""
    credential: Credential = "system"
    key_suffix: str = ""  # the app key's last characters, for the audit log
    # Writes done through this actor, not yet in the audit log (api/access.py adds them).
    audit_entries: list[AuditEntry] = field(default_factory=list, repr=False)
    # Targets a write service adds while it runs; its entry takes them when it returns.
    audit_targets: list[Any] = field(default_factory=list, repr=False)
    # How deep in write services the actor is: a service called by another is part of the
    # outer one's entry, not an entry of its own.
    write_depth: int = field(default=0, repr=False)
    # The last outermost write service that failed (refused, or raised), for the unit's
    # record of a failed write; None once the unit took it.
    failed_write: AuditEntry | None = field(default=None, repr=False)
    # Made by the door (api/unit.py): such an actor writes only while a unit of work holds
    # it (`units` > 0), so no write's audit entry is noted where nobody will flush it.
    bound: bool = field(default=False, repr=False)
    units: int = field(default=0, repr=False)
    # The actor's teams, loaded only when a rule asks and then kept for the actor's life.
    _load_team_ids: TeamIdsLoader = field(default=_no_teams, repr=False)
    _load_team_ids_sync: SyncTeamIdsLoader | None = field(default=None, repr=False)
    _team_ids: frozenset[int] | None = field(default=None, repr=False)

    @classmethod
    def system(cls, account_id: int, clock: Clock) -> Actor:
        """The service itself acting inside an account; the package's own code gets one
        from the door (api/unit.py `system_actor`), tests build them here."""
        return cls(account_id=account_id, person_id=0, clock=clock, is_admin=True,
                   credential="system")

    def note_audit_targets(self, *targets: Any) -> None:
        """Ids the running write service touched, for its audit entry."""
        self.audit_targets.extend(targets)

    def take_audit_entries(self) -> list[AuditEntry]:
        """The entries not yet logged, handed over once to whoever writes them."""
        entries, self.audit_entries = self.audit_entries, []
        return entries

    async def team_ids(self) -> frozenset[int]:
        if self._team_ids is None:
            self._team_ids = await self._load_team_ids()
        return self._team_ids

    def team_ids_sync(self, conn: Connection) -> frozenset[int]:
        """`team_ids` for a sync read service, read on its unit's connection."""
        if self._team_ids is None:
            load = self._load_team_ids_sync or (
                _no_teams_sync if self._load_team_ids is _no_teams else _async_only)
            self._team_ids = load(conn)
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
