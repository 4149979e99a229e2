"""Requests and records of /schedule/* (reference `Schedule*` schemas; times in Unix seconds).

Extensions of the reference: `time_zone` (IANA name) on the upsert request and on the
record, the zone that handoffs, restrictions and day masks are read in (default: the
account's time zone); and on each layer, `cal_id` (a service calendar of the account the
rotation follows, "" for none) and `holiday_mode` (what a day off does: "next" or "off";
"" without a calendar), see timeline.py."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.outbound_secrets import OUTBOUND_SECRET
from dutyline.api.secret import SECRET
from dutyline.api.types import Int64, SaveWarning

# The service checks the value (schedule/definition.py); the enum is for the reference.
RotationUnit = Annotated[str, msgspec.Meta(
    description=("The unit of one turn, `rotation_value` of them long; empty: each turn lasts "
                 "`rotation_duration` seconds."),
    extra_json_schema={"enum": ["hour", "day", "week", "month", ""]})]

# -- pieces shared by requests and records ------------------------------------------------


class ScheduleMember(msgspec.Struct):
    role_id: Int64 = 0
    person_ids: list[Int64] = msgspec.field(default_factory=list)


class ScheduleGroup(msgspec.Struct):
    group_name: str = ""
    name: str = ""
    members: list[ScheduleMember] = msgspec.field(default_factory=list)
    start: Int64 = 0
    end: Int64 = 0


class ScheduleRestrictPeriod(msgspec.Struct):
    restrict_start: Int64 = 0
    restrict_end: Int64 = 0


class ScheduleDayMask(msgspec.Struct):
    repeat: list[Int64] = msgspec.field(default_factory=list)


class ScheduleFixedTimeNotifyInfo(msgspec.Struct):
    cycle: str = ""
    start: str = ""


class ScheduleNotifyBy(msgspec.Struct):
    follow_preference: bool = False
    personal_channels: list[str] = msgspec.field(default_factory=list)


class ScheduleImNotifySettings(msgspec.Struct):
    token: Annotated[str, OUTBOUND_SECRET, SECRET] = ""
    alias: str = ""
    data_source_id: Int64 = 0
    chat_ids: list[str] = msgspec.field(default_factory=list)
    verify_token: Annotated[str, OUTBOUND_SECRET, SECRET] = ""
    sign_secret: Annotated[str, OUTBOUND_SECRET, SECRET] = ""


class ScheduleImNotify(msgspec.Struct):
    type: str = ""
    settings: ScheduleImNotifySettings = msgspec.field(default_factory=ScheduleImNotifySettings)


class ScheduleNotify(msgspec.Struct):
    advance_in_time: Int64 = 0
    fixed_time: ScheduleFixedTimeNotifyInfo = msgspec.field(
        default_factory=ScheduleFixedTimeNotifyInfo)
    by: ScheduleNotifyBy = msgspec.field(default_factory=ScheduleNotifyBy)
    webhooks: list[ScheduleImNotify] = msgspec.field(default_factory=list)


# -- requests -----------------------------------------------------------------------------


class LayerIn(msgspec.Struct):
    """A `ScheduleLayer` as clients send it: every field optional."""

    layer_name: str = ""
    name: str = ""
    mode: Int64 = 0
    weight: Int64 = 0
    hidden: Int64 = 0
    groups: list[ScheduleGroup] | None = None
    rotation_unit: RotationUnit = ""
    rotation_value: Int64 = 0
    rotation_duration: Int64 = 0
    handoff_time: Int64 = 0
    enable_time: Int64 = 0
    layer_start: Int64 | None = None
    expire_time: Int64 = 0
    layer_end: Int64 | None = None
    restrict_mode: Int64 = 0
    restrict_start: Int64 = 0
    restrict_end: Int64 = 0
    restrict_periods: list[ScheduleRestrictPeriod] | None = None
    day_mask: ScheduleDayMask | None = None
    fair_rotation: bool = False
    mask_continuous_enabled: bool = False
    cal_id: str = ""
    holiday_mode: str = ""


class NotifyByIn(msgspec.Struct):
    """`by` as clients send it: the reference's own example sends `personal_channels: null`."""

    follow_preference: bool = False
    personal_channels: list[str] | None = None


class NotifyIn(msgspec.Struct):
    advance_in_time: Int64 = 0
    fixed_time: ScheduleFixedTimeNotifyInfo | None = None
    by: NotifyByIn | None = None
    webhooks: list[ScheduleImNotify] | None = None


class ScheduleSpec(msgspec.Struct):
    """A schedule as the schedule service's create and update take it (their keyword
    arguments, checked on entry; the service checks names, zones and layers further)."""

    schedule_name: str | None = None
    description: str | None = None
    team_id: Int64 | None = None
    time_zone: str | None = None
    layers: list[LayerIn] | None = None
    notify: NotifyIn | None = None


class ScheduleUpsertRequest(ScheduleSpec):
    schedule_id: Int64 = 0
    name: str | None = None
    start: Int64 = 0  # preview window
    end: Int64 = 0


class ScheduleIDsBodyRequest(msgspec.Struct):
    schedule_ids: list[Int64]


class ScheduleInfoRequest(msgspec.Struct):
    schedule_id: Int64
    start: Int64 = 0
    end: Int64 = 0


class ScheduleListRequest(msgspec.Struct):
    query: str = ""
    p: Int64 = 1
    limit: Int64 = 10
    is_my_team: bool = False
    is_my_manage: bool = False
    team_ids: list[Int64] | None = None
    start: Int64 = 0
    end: Int64 = 0


class ScheduleSelfRequest(msgspec.Struct):
    start: Int64 = 0
    end: Int64 = 0


# -- records ------------------------------------------------------------------------------


class ScheduleLayer(msgspec.Struct):
    """The stored and returned layer (reference `ScheduleLayer`), normalized."""

    account_id: Int64
    name: str
    schedule_id: Int64
    hidden: Int64
    mode: Int64
    weight: Int64
    groups: list[ScheduleGroup]
    rotation_duration: Int64
    handoff_time: Int64
    enable_time: Int64
    expire_time: Int64
    restrict_mode: Int64
    restrict_start: Int64
    restrict_end: Int64
    restrict_periods: list[ScheduleRestrictPeriod]
    day_mask: ScheduleDayMask
    create_at: Int64
    create_by: Int64
    update_at: Int64
    update_by: Int64
    layer_name: str
    fair_rotation: bool
    layer_start: Int64
    layer_end: Int64 | None
    rotation_unit: RotationUnit
    rotation_value: Int64
    mask_continuous_enabled: bool
    # Our extension (absent from layers stored before it): the calendar the rotation follows.
    cal_id: str = ""
    holiday_mode: str = ""


class ScheduleCalculatedSchedule(msgspec.Struct):
    start: Int64
    end: Int64
    group: ScheduleGroup
    index: Int64


class ScheduleCalculatedLayer(msgspec.Struct):
    layer_name: str
    name: str
    mode: Int64
    schedules: list[ScheduleCalculatedSchedule]


class ScheduleOncallGroup(msgspec.Struct):
    start: Int64
    end: Int64
    group: ScheduleGroup
    update_at: Int64
    weight: Int64
    index: Int64


class ScheduleItem(msgspec.Struct):
    """One record for every read: info, infos, list, self and preview (where the stored
    identity fields are null, as the reference says)."""

    id: Int64 | None
    name: str | None
    account_id: Int64
    group_id: Int64 | None
    disabled: Int64 | None
    create_at: Int64
    create_by: Int64
    update_at: Int64
    update_by: Int64
    layers: list[ScheduleLayer]
    schedule_layers: list[ScheduleCalculatedLayer]
    final_schedule: ScheduleCalculatedLayer
    start: Int64
    end: Int64
    notify: ScheduleNotify
    schedule_id: Int64
    schedule_name: str | None
    team_id: Int64 | None
    description: str | None
    layer_schedules: list[ScheduleCalculatedLayer]
    status: Int64 | None
    # The reference describes these as null when nobody is (or will be) on call.
    cur_oncall: ScheduleOncallGroup | None
    next_oncall: ScheduleOncallGroup | None
    time_zone: str


class ScheduleIDResponse(msgspec.Struct, omit_defaults=True):
    schedule_id: Int64
    # What the notifications ask for that the server's settings cannot send (none: left out).
    warnings: list[SaveWarning] = msgspec.field(default_factory=list)


class ScheduleListResponse(msgspec.Struct):
    items: list[ScheduleItem]
    total: Int64


class ScheduleSelfResponse(msgspec.Struct):
    items: list[ScheduleItem]


# -- calendar feed (our own operations) ---------------------------------------------------


class FeedCreateResponse(msgspec.Struct):
    """The caller's calendar feed URL; the secret in it is shown only here."""

    feed_url: str
    created_at: Int64


class FeedInfoResponse(msgspec.Struct):
    enabled: bool
    created_at: Int64
