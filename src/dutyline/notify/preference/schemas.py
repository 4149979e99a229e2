"""/member/notify/info|reset: a member's contact methods and notification preferences.

Field names come from the reference: the per-severity channel lists are those of an
escalation target's `by` (`critical`, `warning`, `info`), the chat handles the `im` map
(IM type -> handle) of a schedule's notification settings."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.types import NonNegInt64

ChannelName = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
Channels = Annotated[list[ChannelName], msgspec.Meta(max_length=8)]
Handles = Annotated[dict[str, Annotated[str, msgspec.Meta(max_length=128)]],
                    msgspec.Meta(max_length=16)]


class MemberNotifyInfoRequest(msgspec.Struct, kw_only=True):
    # 0 or left out: the caller.
    member_id: NonNegInt64 = 0


class NotifyChanges(msgspec.Struct, kw_only=True):
    """A member's chat handles and channels per severity, as the preference service's reset
    takes them (its keyword arguments, checked on entry with these limits; each handle's
    platform and length the service checks itself, naming it `im.<platform>`). None leaves
    a field unchanged; an empty list means "the default" (e-mail)."""

    member_id: NonNegInt64 = 0
    im: Annotated[dict[str, str], msgspec.Meta(max_length=16)] | None = None
    critical: Channels | None = None
    warning: Channels | None = None
    info: Channels | None = None


class MemberNotifyResetRequest(NotifyChanges, kw_only=True):
    """A field left out is left unchanged; an empty list means "the default" (e-mail)."""

    im: Handles | None = None


class MemberNotifyItem(msgspec.Struct, kw_only=True):
    account_id: int
    member_id: int
    member_name: str
    email: str
    phone: str  # masked, as on member records
    country_code: str
    im: dict[str, str]
    # The channels that `follow_preference` uses, per incident severity (the default filled in).
    critical: list[str]
    warning: list[str]
    info: list[str]
    updated_at: int
