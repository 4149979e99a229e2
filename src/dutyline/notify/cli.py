"""`dutyline notify-test` (cli.py): the test notification from the server's shell, for an
operator checking the delivery settings (SMTP, Twilio, the chat apps) before anyone is paged.

It goes through the service the API's /member/notify/test and the console's buttons call
(trial.test_member), in a unit of work of the command's own (api/unit.py): audited as the
server's (credential "system"), and under the per-channel cooldown, which the server's
processes and the command share through Redis when rate limits are shared that way (without
Redis, a command's cooldown is its own process's)."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from dutyline.api.ratelimit import RateLimiter
from dutyline.api.unit import Ground, system_actor, unit
from dutyline.config import Settings


async def _account_and_member(conn: Any, member_id: int, email: str) -> tuple[int, int]:
    from dutyline.platform.app_key import service as app_keys
    from dutyline.platform.member import service as members

    if member_id:
        return await app_keys.account_of_member(conn, person_id=member_id), member_id
    found = await members.operator_find_by_email(conn, email=email)
    if not found:
        raise click.ClickException(f"no member has the e-mail address {email}")
    if len(found) > 1:
        ids = ", ".join(str(m) for _, m in found)
        raise click.ClickException(f"several members have {email} ({ids}): use --member-id")
    return found[0]


async def run(ground: Ground, settings: Settings, member_id: int, email: str,
              channels: list[str], *, cooldown: RateLimiter | None = None) -> dict[str, Any]:
    """Test the member (by id, or by their e-mail address) as the server itself; the
    answer as the API gives it. A refusal (ApiError) ends the command with its message.
    `cooldown`: the record of recent tests (by default the server's: trial.py)."""
    from dutyline.api.errors import ApiError
    from dutyline.kit.secretbox import SecretBox
    from dutyline.notify.delivery import trial
    from dutyline.notify.delivery.adapters import needs
    from dutyline.notify.delivery.adapters.base import SendEnv

    env = SendEnv(settings=settings, policy=needs.policy_of(settings),
                  secrets=SecretBox(settings.resolved_secret_key), clock=ground.clock)
    own = cooldown is None
    cooldown = cooldown or trial.cooldown_limiter(settings, ground.clock)
    try:
        # A read unit, as the API's outbound operation: nothing is held while the channels
        # are tried, and the audit row is written once they answered.
        async with unit(ground, None, write=False) as work:
            account_id, member_id = await _account_and_member(work.conn, member_id, email)
            answer = await trial.test_member(
                work.conn, system_actor(account_id, ground.clock), env=env, cooldown=cooldown,
                member_id=member_id, channels=channels or None)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if own:
            await cooldown.close()
    return {"member_id": answer.member_id, "results": msgspec.to_builtins(answer.results)}
