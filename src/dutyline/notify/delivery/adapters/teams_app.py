"""Microsoft Teams through an app (a bot), for a person or a `teams_app` target: not built.

Why: a bot can only message a person or a channel proactively with a conversation reference
(service URL, conversation id, tenant) that Teams hands it when the app is installed there,
through the Bot Framework's messaging endpoint, and an Azure AD app registration to sign in
with. dutyline has no such endpoint or store yet, so every such delivery is recorded failed
at once with the reason; a Teams channel is reached by its incoming webhook (`teams`)."""

from __future__ import annotations

from dutyline.notify.delivery.adapters.base import Attempt, Outgoing, SendEnv

REASON = ("teams_app needs a Bot Framework bot (an Azure app registration and the "
          "conversation Teams gives the bot on install), which dutyline does not support: "
          "use a Teams incoming webhook target (type teams) instead")


async def send(env: SendEnv, out: Outgoing) -> Attempt:
    return Attempt(ok=False, retryable=False, error=REASON, endpoint="teams_app")
