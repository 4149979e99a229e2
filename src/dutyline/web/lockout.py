"""Back-off after failed sign-ins: per account (the e-mail address typed, or the person
whose code is asked), per client address, and per known device.

A browser where the account signed in before (web/devices.py) counts its failures on its
own subject only: a flood against the account, or from its client address, elsewhere never
locks it, and its own mistakes back it off briefly. Any other browser's failure counts
against both the account and the client address, and a lock of either refuses it. Past a
few free failures a subject is locked for a time that doubles with every further failure, up
to a bound; while locked, the password is not even checked. A failure long after the
previous one starts the count again. Unknown addresses are counted like known ones, so a
lock says nothing about which addresses exist. A success clears the account's and the
device's counts, not the client's (an attacker with an account of their own must not be able
to wipe their count between guesses at others').

Password-reset requests count per address asked for (so one mailbox cannot be flooded) and
per client address, or on the known device alone; never against the account's sign-in.
The client address is the proxy's forwarded one only from DUTYLINE_TRUSTED_PROXIES (app.py):
otherwise everyone behind one proxy would be one client."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from dutyline.web import repository as repo


@dataclass(frozen=True, slots=True)
class Rule:
    free: int  # failures before the first lock
    base_s: int  # the first lock
    max_s: int  # no lock is longer


EMAIL_RULE = Rule(free=5, base_s=30, max_s=15 * 60)
CLIENT_RULE = Rule(free=20, base_s=30, max_s=15 * 60)
# A known device's own mistakes: a short pause, never a long lock of its owner.
DEVICE_RULE = Rule(free=5, base_s=5, max_s=5 * 60)
# Reset mails asked for one address: a few, then spaced out.
RESET_RULE = Rule(free=3, base_s=60, max_s=15 * 60)
FORGET_S = 3600


def email_subject(email: str) -> str:
    return "email:" + email.strip().lower()[:300]


def client_subject(ip: str) -> str:
    return "ip:" + ip[:64]


def person_subject(person_id: int) -> str:
    """Second-factor codes count against the person whose password was right."""
    return f"person:{person_id}"


def reset_subject(email: str) -> str:
    return "reset:" + email.strip().lower()[:300]


def subjects(account: str, client_ip: str, device: str | None) -> list[str]:
    """What a try counts against: the known device alone, else the account and the client."""
    return [device] if device else [account, client_subject(client_ip)]


_RULES = {"ip": CLIENT_RULE, "device": DEVICE_RULE, "reset": RESET_RULE}


def _rule(subject: str) -> Rule:
    return _RULES.get(subject.partition(":")[0], EMAIL_RULE)


def lock_seconds(rule: Rule, failures: int) -> int:
    if failures < rule.free:
        return 0
    return min(rule.max_s, rule.base_s << min(failures - rule.free, 20))


async def locked_for(conn: AsyncConnection, subjects: list[str], now_s: int) -> int:
    """Seconds until every subject may try again (0: now)."""
    rows = await repo.failures(conn, subjects)
    waits: list[int] = [int(r.locked_until) - now_s for r in rows.values()]
    return int(max([0, *waits]))


async def note_failure(conn: AsyncConnection, subjects: list[str], now_s: int) -> None:
    rows = await repo.failures(conn, subjects)
    for subject in subjects:
        row = rows.get(subject)
        fresh = row is None or now_s - int(row.last_failure_at) > FORGET_S
        failures = 1 if fresh or row is None else int(row.failures) + 1
        lock = lock_seconds(_rule(subject), failures)
        await repo.save_failure(conn, subject=subject, failures=failures,
                                last_failure_at=now_s,
                                locked_until=now_s + lock if lock else 0)


async def note_success(conn: AsyncConnection, subjects: list[str]) -> None:
    """Clear the counts of these subjects (never a client's: see above)."""
    await repo.clear_failures(conn, [s for s in subjects if not s.startswith("ip:")])
