"""The process's shared services, built once by create_app and passed to every request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dutyline.api.i18n import Translator
from dutyline.api.observe import Metrics
from dutyline.config import Settings
from dutyline.db.engine import Database
from dutyline.kit.clock import Clock
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.outbound_aio import KeptSessions
from dutyline.kit.secretbox import SecretBox

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from dutyline.api.auth import Authenticator, Caller
    from dutyline.api.operation import Operation
    from dutyline.api.ratelimit import RateLimiter


class AuditSink(Protocol):
    """Where the operation layer reports audited calls (the platform domain writes them)."""

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
    ) -> None: ...


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
    # Every operation the process serves, from the composition root (domains.py).
    operations: tuple[Operation, ...] = ()
    # The process's BYOC runner sockets (aisre/runner/hub.py), made on first use.
    runner_hub: Any = None
    # Outbound clients kept for connection reuse (deliveries), closed with the runtime.
    kept_sessions: KeptSessions = field(default_factory=KeptSessions)

    def outbound_policy(self) -> OutboundPolicy:
        """Who outbound calls may reach (the operator's private-network switch), with the
        default retries, each counted in the metrics."""
        return OutboundPolicy(
            allow_private=self.settings.allow_private_network,
            on_retry=self.metrics.count_outbound_retry,
        )
