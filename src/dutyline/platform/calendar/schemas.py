"""Service calendar requests and records (reference: CalendarCreateRequest, CalendarItem,
CalEventUpsertRequest, CalEventItem...)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import NonNegInt64

CalendarName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
Description = Annotated[str, msgspec.Meta(max_length=499)]
Weekday = Annotated[int, msgspec.Meta(ge=0, le=6)]
Weekdays = Annotated[list[Weekday], msgspec.Meta(max_length=7)]
CalendarId = Annotated[str, msgspec.Meta(max_length=64)]
ExtraCalendarIds = Annotated[list[Annotated[str, msgspec.Meta(max_length=64)]],
                             msgspec.Meta(max_length=20)]
TimeZoneName = Annotated[str, msgspec.Meta(max_length=64)]
EventSummary = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]
EventDate = Annotated[str, msgspec.Meta(max_length=10)]

KINDS = ("region.official.holiday", "religion.holiday", "personal")
Kind = Literal["region.official.holiday", "religion.holiday", "personal"]


class CalendarCreateRequest(msgspec.Struct, kw_only=True):
    cal_name: CalendarName
    description: Description = ""
    # The reference's default when empty.
    timezone: TimeZoneName = ""
    team_id: NonNegInt64 = 0
    workdays: Weekdays | None = None
    extra_cal_ids: ExtraCalendarIds | None = None


class CalendarCreateResponse(msgspec.Struct, kw_only=True):
    cal_id: str
    cal_name: str


class CalendarUpdateRequest(msgspec.Struct, kw_only=True):
    """Only the fields given (not null) change."""

    cal_id: CalendarId
    cal_name: CalendarName | None = None
    description: Description | None = None
    timezone: TimeZoneName | None = None
    team_id: NonNegInt64 | None = None
    workdays: Weekdays | None = None
    extra_cal_ids: ExtraCalendarIds | None = None


class CalendarIDRequest(msgspec.Struct, kw_only=True):
    cal_id: CalendarId


class CalendarItem(msgspec.Struct, kw_only=True):
    account_id: int
    team_id: int
    cal_id: str
    cal_name: str
    description: str
    timezone: str
    kind: Kind
    workdays: list[int]
    extra_cal_ids: list[str]
    created_at: int
    updated_at: int
    creator_id: int
    updated_by: int
    status: Literal["enabled", "deleted"]


class CalendarListRequest(msgspec.Struct, kw_only=True):
    # The reference's request enum: "" (unset) is its default, personal.
    kind: Literal["region.official.holiday", "personal", ""] = ""
    no_locale: bool = False


class CalendarListResponse(msgspec.Struct, kw_only=True):
    items: list[CalendarItem]
    total: int


class CalEventUpsertRequest(msgspec.Struct, kw_only=True):
    cal_id: CalendarId
    event_id: Annotated[str, msgspec.Meta(max_length=63)] = ""
    summary: EventSummary
    description: Description = ""
    start_at: EventDate
    end_at: EventDate
    is_off: bool


class CalEventUpsertResponse(msgspec.Struct, kw_only=True):
    cal_id: str
    event_id: str
    summary: str


class CalEventIDRequest(msgspec.Struct, kw_only=True):
    cal_id: CalendarId
    event_id: Annotated[str, msgspec.Meta(max_length=63)]


class CalEventListRequest(msgspec.Struct, kw_only=True):
    cal_id: CalendarId
    # 0 (absent): the current year in the calendar's time zone.
    year: Annotated[int, msgspec.Meta(ge=0, le=2100)] = 0
    month: Annotated[int, msgspec.Meta(ge=0, le=12)] = 0
    day: Annotated[int, msgspec.Meta(ge=0, le=31)] = 0


class CalEventItem(msgspec.Struct, kw_only=True):
    account_id: int
    creator_id: int
    cal_id: str
    event_id: str
    summary: str
    description: str
    start_at: str
    end_at: str
    is_off: bool
    created_at: int
    updated_at: int


class CalEventListResponse(msgspec.Struct, kw_only=True):
    items: list[CalEventItem]
    total: int
