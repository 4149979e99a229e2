"""What services need from the process, as one argument.

A service stays `(conn, actor, *, args)`: the process's secret box, outbound policy and
public base URL travel together as `deps=runtime.deps`, whoever calls (an endpoint, a job,
the CLI, an engine), instead of one keyword each. It is not on the Actor: who acts and what
the process offers are different questions, and a signed link or a job builds its own actor
over the same process."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dutyline.config import Settings
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox


@dataclass(frozen=True)
class Deps:
    # The operator's settings: which delivery channels are configured (save warnings) and
    # the public base URL that links are built on.
    settings: Settings
    # Seals third-party secrets (MCP headers, A2A auth, webhook keys) at rest with the
    # server key.
    box: SecretBox
    # Who outbound calls may reach and how failed ones are retried.
    policy: OutboundPolicy

    @property
    def base_url(self) -> str:
        """Where this server is reached from outside (links in records and messages)."""
        return self.settings.base_url

    @cached_property
    def secret_key(self) -> str:
        """The server's secret key, resolved once per process: on SQLite it is read from a
        file beside the database, which must not happen on every request."""
        return self.settings.resolved_secret_key()
