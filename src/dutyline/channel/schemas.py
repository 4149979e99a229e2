"""Channel requests and records (reference: CreateChannelRequest, UpdateChannelRequest,
ChannelItem, ChannelShort, Group, Flapping, ListChannelsRequest...)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from dutyline.api.secret import SECRET
from dutyline.api.types import Id, NonNegInt64, PageNumber, PageSize

ChannelName = Annotated[str, msgspec.Meta(min_length=1, max_length=59)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
# A label key or alert field path used for grouping (`labels.host`, `title`...).
GroupKey = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
ManagingTeamIds = Annotated[list[Id], msgspec.Meta(max_length=3)]
AutoResolveTimeout = Annotated[int, msgspec.Meta(ge=0, le=2_592_000)]
AutoResolveMode = Literal["trigger", "update"]

# Grouping windows are minutes on the wire (reference Group.time_window); 24 h at most.
MAX_TIME_WINDOW_MINS = 1440


class Group(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How alerts of a channel join incidents: `i` intelligent, `p` by pattern (`equals`),
    `n` none."""

    method: Literal["i", "p", "n"]
    equals: Annotated[list[Annotated[list[GroupKey], msgspec.Meta(max_length=10)]],
                      msgspec.Meta(max_length=5)] = []
    cases: Annotated[list[dict[str, Any]], msgspec.Meta(max_length=100)] = []
    all_equals_required: bool = False
    time_window: Annotated[int, msgspec.Meta(ge=0, le=MAX_TIME_WINDOW_MINS)] = 0
    window_type: Literal["tumbling", "sliding"] = "tumbling"
    storm_threshold: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 0
    storm_thresholds: Annotated[list[Annotated[int, msgspec.Meta(ge=0, le=10_000)]],
                                msgspec.Meta(max_length=5)] = []
    i_keys: Annotated[list[GroupKey], msgspec.Meta(max_length=10)] = []
    i_score_threshold: Annotated[float, msgspec.Meta(ge=0.5, le=1)] | None = None


class Flapping(msgspec.Struct, kw_only=True):
    """Flapping detection. Off unless a channel turns it on, so no alert is muted by a
    setting nobody chose; the numbers are what turning it on starts from."""

    is_disabled: bool = True
    max_changes: Annotated[int, msgspec.Meta(ge=2, le=100)] = 4
    in_mins: Annotated[int, msgspec.Meta(ge=1, le=1440)] = 60
    mute_mins: Annotated[int, msgspec.Meta(ge=0, le=1440)] = 120


DEFAULT_GROUP = Group(method="n")
DEFAULT_FLAPPING = Flapping()


# An inbound credential: masked in the audit log, kept as a hash.
ReportToken = Annotated[str, msgspec.Meta(min_length=16, max_length=128, pattern=r"^[!-~]+$"),
                        SECRET]


class CreateChannelRequest(msgspec.Struct, kw_only=True):
    channel_name: ChannelName
    # 0: no owning team (the channel belongs to the account as a whole).
    team_id: NonNegInt64 = 0
    managing_team_ids: ManagingTeamIds = []
    description: Description = ""
    group: Group | None = None
    flapping: Flapping | None = None
    auto_resolve_timeout: AutoResolveTimeout = 0
    auto_resolve_mode: AutoResolveMode = "trigger"
    is_private: bool = False
    disable_outlier_detection: bool = False
    disable_auto_close: bool = False
    is_external_report_enabled: bool = False
    # The token to give external reporters (a channel moved from another server keeps its
    # own); without it, enabling external reports makes one.
    external_report_token: ReportToken | None = None


class ChannelCreateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    channel_id: int
    channel_name: str
    # Only when external reports are enabled: shown in this answer only.
    external_report_token: str = ""


class ChannelChanges(msgspec.Struct, kw_only=True):
    """A channel's settings to create it with or to change, as the channel service takes
    them. None leaves a field unchanged (on create: the field's default)."""

    team_id: NonNegInt64 | None = None  # 0: no owning team (the account's channel)
    managing_team_ids: ManagingTeamIds | None = None
    channel_name: ChannelName | None = None
    description: Description | None = None
    auto_resolve_timeout: AutoResolveTimeout | None = None
    auto_resolve_mode: AutoResolveMode | None = None
    is_private: bool | None = None
    group: Group | None = None
    flapping: Flapping | None = None
    disable_outlier_detection: bool | None = None
    disable_auto_close: bool | None = None
    is_external_report_enabled: bool | None = None
    external_report_token: ReportToken | None = None


class UpdateChannelRequest(ChannelChanges, kw_only=True):
    """Only the fields given change."""

    channel_id: Id


class UpdateChannelResponse(msgspec.Struct, kw_only=True):
    # The token set by this update (turning external reports on, or the one given); ""
    # otherwise. Shown in this answer only: only its hash is kept.
    external_report_token: str = ""


class ChannelIDRequest(msgspec.Struct, kw_only=True):
    channel_id: Id


class ChannelInfosRequest(msgspec.Struct, kw_only=True):
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=1000)]


class ChannelShort(msgspec.Struct, kw_only=True):
    channel_id: int
    channel_name: str
    status: str
    # Read by clients of the live service beside the reference's fields.
    team_id: int = 0
    creator_id: int = 0


class ChannelInfosResponse(msgspec.Struct, kw_only=True):
    items: list[ChannelShort]


ChannelSearchText = Annotated[str, msgspec.Meta(max_length=255)]


class ChannelSearch(msgspec.Struct, kw_only=True):
    """The free text a channel list is searched by, as the list reads it (the console's
    search box decodes into it; ListChannelsRequest names it with the same type)."""

    query: ChannelSearchText = ""


class ListChannelsRequest(msgspec.Struct, kw_only=True):
    p: PageNumber = 1
    limit: PageSize = 100  # the reference's default for this list
    orderby: Literal["ranking", "created_at", "updated_at", "channel_name",
                     "last_incident_at"] = "ranking"
    asc: bool = False
    is_my_managed: bool = False
    is_my_starred: bool = False
    is_brief: bool = False
    is_my_team: bool = False
    team_ids: Annotated[list[Id], msgspec.Meta(max_length=100)] = []
    query: ChannelSearchText = ""
    channel_ids: Annotated[list[Id], msgspec.Meta(max_length=1000)] = []
    channel_name: Annotated[str, msgspec.Meta(max_length=59)] = ""

    def __post_init__(self) -> None:
        if self.p * self.limit > 10_000:
            raise ValueError("p × limit must not exceed 10000")


class ChannelItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A channel; brief listings fill only id, name, description and status."""

    channel_id: int
    channel_name: str
    description: str
    status: str
    account_id: int | None = None
    team_id: int | None = None
    managing_team_ids: list[int] | None = None
    creator_id: int | None = None
    deleted_at: int | None = None
    created_at: int | None = None
    updated_at: int | None = None
    auto_resolve_timeout: int | None = None
    auto_resolve_mode: str | None = None
    is_private: bool | None = None
    disable_outlier_detection: bool | None = None
    disable_auto_close: bool | None = None
    is_external_report_enabled: bool | None = None
    group: Group | None = None
    flapping: Flapping | None = None
    is_starred: bool | None = None
    last_incident_at: int | None = None
    # /channel/list only (docs/compatibility.md): the names of the team and of the creator.
    team_name: str | None = None
    creator_name: str | None = None


class ListChannelsResponse(msgspec.Struct, kw_only=True):
    items: list[ChannelItem]
    total: int
    has_next_page: bool
