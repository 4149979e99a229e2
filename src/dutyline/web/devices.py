"""Known devices: a browser in which a person has signed in (password, and code when they
enrolled one) keeps a signed cookie with a random device id and a digest of each sign-in
subject it proved (the e-mail address, the person) there.

The lock-out (web/lockout.py) counts the failures of such a browser, for those subjects, on
the device alone: a flood of failures against the same account, or from the same client
address, elsewhere does not lock its owner out; their own mistakes back it off. The cookie is
HMAC-signed under a key derived from the server secret, so it can neither be forged nor
extended to another account, and it holds no token: a stolen one only moves its thief into
the device's own back-off."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from dutyline.web import security

COOKIE = "dutyline_device"
KEEP_S = 365 * 86_400
# Subjects a device remembers (the most recent first): a shared computer of a few people.
MAX_KNOWN = 8


@dataclass(frozen=True, slots=True)
class Device:
    device_id: str
    known: tuple[str, ...]  # digests of the subjects signed in here


def _digest(key: bytes, subject: str) -> str:
    return hmac.new(key, subject.encode("utf-8", "surrogatepass"),
                    hashlib.sha256).hexdigest()[:24]


def read(key: bytes, raw: str) -> Device | None:
    value = security.unsign(key, raw) if raw else None
    if not value:
        return None
    device_id, _, rest = value.partition(":")
    if not device_id:
        return None
    return Device(device_id, tuple(d for d in rest.split(",") if d)[:MAX_KNOWN])


def lock_subject(key: bytes, device: Device | None, subject: str) -> str | None:
    """The lock-out subject of this device when it knows `subject`, else None."""
    if device is None or _digest(key, subject) not in device.known:
        return None
    return "device:" + device.device_id


def remember(key: bytes, device: Device | None, subjects: list[str]) -> tuple[Device, str]:
    """The device (a new one if the browser had none) knowing `subjects` too, and its
    cookie's value."""
    device_id = device.device_id if device else secrets.token_urlsafe(16)
    added = [_digest(key, s) for s in subjects]
    kept = [d for d in (device.known if device else ()) if d not in added]
    known = tuple([*added, *kept][:MAX_KNOWN])
    value = f"{device_id}:{','.join(known)}"
    return Device(device_id, known), security.sign(key, value)
