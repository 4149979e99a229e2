"""The process's shared services, built once by create_app and passed to every request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dutyline.api.deps import Deps
from dutyline.api.i18n import Translator
from dutyline.api.observe import Metrics
from dutyline.api.priority import Priority
from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.db.signals import ChangeSignals
from dutyline.kit.clock import Clock
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.outbound_aio import KeptSessions
from dutyline.kit.secretbox import SecretBox

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from dutyline.api.actor import Actor, AuditEntry
    from dutyline.api.auth import Authenticator, Caller
    from dutyline.api.ratelimit import RateLimiter


class AuditSink(Protocol):
    """Where audited writes go (the platform domain writes them): the operation layer's
    calls (`record`), the entries an actor's services noted (`flush`) and a failed write
    (`failed`), both called by the unit of work (api/unit.py)."""

    async def record(
        self,
        conn: AsyncConnection,
        *,
        caller: Caller,
        operation: str,
        request_id: str,
        client_ip: str,
        body: bytes,
        request_type: Any,  # its fields marked secret (api/secret.py) never reach the log
        targets: list[Any],
        outcome: str,
        is_write: bool,
        is_dangerous: bool,
        entries: list[AuditEntry] | None = None,
    ) -> None: ...

    async def flush(self, conn: AsyncConnection, actor: Actor, *, request_id: str = "",
                    client_ip: str = "", body: str = "") -> int: ...

    async def failed(self, conn: AsyncConnection, actor: Actor, *, entry: AuditEntry,
                     outcome: str, request_id: str = "", client_ip: str = "",
                     body: str = "") -> None: ...


# (ASGI scope, send) -> whether it answered (Runtime.front_answers).
FrontAnswer = Callable[[MutableMapping[str, Any],
                        Callable[[MutableMapping[str, Any]], Awaitable[None]]], Awaitable[bool]]


def _reachable(_channel: str) -> str | None:
    return None


class ServedOperation(Protocol):
    """What the process knows of each operation it serves (an api/operation.Operation,
    which itself refers to the runtime, so this module names only what it reads)."""

    @property
    def path(self) -> str: ...
    @property
    def write(self) -> bool: ...
    @property
    def operation_name(self) -> str: ...
    @property
    def audited(self) -> bool: ...
    @property
    def summary(self) -> str: ...


@dataclass
class Runtime:
    settings: Settings
    db: Database
    clock: Clock
    translator: Translator
    limiter: RateLimiter
    authenticator: Authenticator
    audit: AuditSink
    metrics: Metrics
    # Seals third-party secrets (MCP headers, A2A auth) at rest with the server key.
    secrets: SecretBox
    # Test notifications already sent, per member and channel (notify/delivery/trial.py):
    # the API and the console refuse another within the cooldown alike.
    notify_test_cooldown: RateLimiter
    # Every operation the process serves, from the composition root (domains.py).
    operations: tuple[ServedOperation, ...] = ()
    # The process's BYOC runner sockets (aisre/runner/hub.py), made on first use.
    runner_hub: Any = None
    # Versions that tell this process's caches a write elsewhere made them stale; followed
    # by a background task of the app (db/signals.py).
    signals: ChangeSignals = field(default_factory=ChangeSignals)
    # Which requests go first when the process is saturated (api/priority.py): the public
    # pages wait for the API and the console.
    priority: Priority = field(default_factory=Priority)
    # Outbound clients kept for connection reuse (deliveries), closed with the runtime.
    kept_sessions: KeptSessions = field(default_factory=KeptSessions)
    # Why a person cannot be paged by a channel with this server's settings, or None: the
    # notify domain answers (declared in domains.py, set when app.py builds the runtime), so
    # a domain it depends on (a member's contacts, in platform) can warn about a contact
    # nothing will use.
    reach_gap: Callable[[str], str | None] = _reachable
    # Answers tried before routing and the middleware stack (app.py), for what a process
    # serves from memory under a flood (status_page/public/routes.py `KeptViews`): each sends
    # a whole answer and says True, or sends nothing and says False. None may raise.
    front_answers: list[FrontAnswer] = field(default_factory=list)
    _deps: Deps | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def deps(self) -> Deps:
        """What services need from the process (api/deps.py), built once for the settings
        (again only if the settings are replaced, as a test closing the guard does)."""
        if self._deps is None or self._deps.settings is not self.settings:
            self._deps = Deps(settings=self.settings, box=self.secrets,
                              policy=self.outbound_policy())
        return self._deps

    def outbound_policy(self) -> OutboundPolicy:
        """Who outbound calls may reach (the operator's private-network switch), with the
        default retries, each counted in the metrics."""
        return OutboundPolicy(
            allow_private=self.settings.allow_private_network,
            # `host:port` pairs let through whatever they resolve to: set only in code
            # (settings.extra), for a test's loopback receivers under a closed guard.
            allow_hosts=frozenset(self.settings.extra.get("outbound_allow_hosts", ())),
            on_retry=self.metrics.count_outbound_retry,
        )
