"""The on-call reports' requests and answers (decisions §10: `ts` and every count a plain
JSON integer)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id

Step = Literal["day", "week", "month"]
Seconds = Annotated[int, msgspec.Meta(ge=0, le=10**11)]


class ChangeReportRequest(msgspec.Struct, kw_only=True):
    start_time: Seconds
    end_time: Seconds
    step: Step = "day"
    # IANA name; empty: the account's time zone.
    time_zone: Annotated[str, msgspec.Meta(max_length=64)] = ""


class NotificationReportRequest(ChangeReportRequest, kw_only=True):
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list)


class NotificationReportItem(msgspec.Struct, kw_only=True):
    ts: int  # the bucket's start (local midnight of its day, Monday or first of the month)
    sms_cnt: int
    voice_cnt: int
    email_cnt: int


class NotificationReportResponse(msgspec.Struct, kw_only=True):
    items: list[NotificationReportItem]


class ChangeReportItem(msgspec.Struct, kw_only=True):
    ts: int
    change_cnt: int  # changes that started in the bucket
    change_event_cnt: int  # change events (pushes) received in the bucket


class ChangeReportResponse(msgspec.Struct, kw_only=True):
    items: list[ChangeReportItem]
