"""Team requests and records (reference: TeamItem, TeamListRequest, TeamUpsertRequest...)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dutyline.api.types import Id, NonNegInt64, PageRequest

TeamName = Annotated[str, msgspec.Meta(min_length=1, max_length=39)]


SearchQuery = Annotated[str, msgspec.Meta(max_length=255)]


class TeamSearch(msgspec.Struct, kw_only=True):
    """The free text a team list is searched by, as the list reads it (the console's
    search box decodes into it; TeamListRequest names it with the same type)."""

    query: SearchQuery = ""


class TeamListRequest(PageRequest, kw_only=True):
    orderby: Literal["created_at", "updated_at", "team_name"] = "created_at"
    asc: bool = False
    person_id: Id | None = None
    query: SearchQuery = ""


class TeamItem(msgspec.Struct, kw_only=True):
    account_id: int
    team_id: int
    team_name: str
    description: str
    status: str
    creator_id: int
    creator_name: str
    created_at: int
    updated_at: int
    updated_by: int
    updated_by_name: str
    person_ids: list[int]
    ref_id: str


class TeamListResponse(msgspec.Struct, kw_only=True):
    p: int
    limit: int
    total: int
    items: list[TeamItem]


class TeamLookup(msgspec.Struct, kw_only=True):
    """Identify a team by one of id, name or external ref (TeamInfoRequest/TeamDeleteRequest)."""

    team_id: NonNegInt64 = 0
    team_name: Annotated[str, msgspec.Meta(max_length=39)] = ""
    ref_id: Annotated[str, msgspec.Meta(max_length=128)] = ""


class TeamInfosRequest(msgspec.Struct, kw_only=True):
    team_ids: Annotated[list[Id], msgspec.Meta(max_length=100)]


class TeamBriefItem(msgspec.Struct, kw_only=True):
    team_id: int
    team_name: str
    person_ids: list[int]


class TeamInfosResponse(msgspec.Struct, kw_only=True):
    items: list[TeamBriefItem]


class TeamChanges(msgspec.Struct, kw_only=True, frozen=True):
    """A team to create (no team_id) or update, as the team service takes it. None leaves a
    field (or the member list) unchanged."""

    team_name: TeamName
    team_id: NonNegInt64 = 0
    description: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    person_ids: Annotated[list[Id], msgspec.Meta(max_length=1000)] | None = None
    emails: Annotated[list[Annotated[str, msgspec.Meta(max_length=255)]],
                      msgspec.Meta(max_length=1000)] | None = None
    phones: Annotated[list[Annotated[str, msgspec.Meta(max_length=32)]],
                      msgspec.Meta(max_length=1000)] | None = None
    ref_id: Annotated[str, msgspec.Meta(max_length=128)] | None = None
    # Creating a team whose name exists updates that team instead of refusing.
    reset_if_name_exist: bool = False


class TeamUpsertRequest(TeamChanges, kw_only=True, frozen=True):
    countryCode: Annotated[str, msgspec.Meta(max_length=8)] = ""


class TeamUpsertResponse(msgspec.Struct, kw_only=True):
    team_id: int
    team_name: str
