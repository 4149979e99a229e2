"""`dutyline notify-test`: the test notification from the server's shell, for an operator
checking the delivery settings (SMTP, Twilio, the chat apps) before anyone is paged."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import click
import msgspec

from dutyline import command_settings
from dutyline.config import Settings


@click.command("notify-test")
@click.option("--member-id", type=int, default=0, help="The member to test.")
@click.option("--email", default="", help="Or the member's e-mail address.")
@click.option("--channel", "channels", multiple=True,
              help="A channel to test (repeatable); default: every channel of the member.")
def notify_test(member_id: int, email: str, channels: tuple[str, ...]) -> None:
    """Send a test notification to a member through each of their channels and print what
    happened at each (sent, failed or skipped, with the reason) as JSON. Exits 1 when
    nothing was sent."""
    from dutyline.api.observe import configure_logging
    from dutyline.db.migrate import upgrade

    if bool(member_id) == bool(email):
        raise click.UsageError("give one of --member-id or --email")
    settings = command_settings.settings()
    # Logs go to stderr, so stdout is the answer alone.
    configure_logging(settings.log_level, settings.log_json)
    upgrade(settings.database_url)
    answer = asyncio.run(_run(settings, member_id, email, list(channels)))
    click.echo(json.dumps(answer, indent=2))
    if not any(r["status"] == "sent" for r in answer["results"]):
        sys.exit(1)


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


async def _run(settings: Settings, member_id: int, email: str,
               channels: list[str]) -> dict[str, Any]:
    from dutyline.api.actor import Actor
    from dutyline.api.errors import ApiError
    from dutyline.db.engine import Database
    from dutyline.kit.clock import SystemClock
    from dutyline.kit.secretbox import SecretBox
    from dutyline.notify.delivery import trial
    from dutyline.notify.delivery.adapters import needs
    from dutyline.notify.delivery.adapters.base import SendEnv

    clock = SystemClock()
    db = Database(settings.database_url)
    try:
        async with db.transaction(write=False) as conn:
            account_id, member_id = await _account_and_member(conn, member_id, email)
            plan = await trial.plan(conn, Actor.system(account_id, clock),
                                    member_id=member_id, channels=channels or None)
    except ApiError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        await db.dispose()
    env = SendEnv(settings=settings, policy=needs.policy_of(settings),
                  secrets=SecretBox(settings.resolved_secret_key), clock=clock)
    results = await trial.send(env, plan)
    return {"member_id": member_id, "results": msgspec.to_builtins(results)}
