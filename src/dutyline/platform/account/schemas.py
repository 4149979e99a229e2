"""The account's own record (/account/info). Not in the reference: its names follow the
neighbouring records, the account fields an incident record carries (`account_id`,
`account_name`, `account_locale`, `account_time_zone`) and a team record's times."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec


class AccountItem(msgspec.Struct, kw_only=True):
    account_id: int
    account_name: str
    # The account's contact and sign-in domain, as the live service's clients read them;
    # dutyline keeps no account phone or avatar, so those are always "".
    domain: str
    email: str
    phone: str = ""
    country_code: str = ""
    avatar: str = ""
    locale: str
    time_zone: str
    created_at: int  # Unix seconds
    updated_at: int


class AccountChanges(msgspec.Struct, kw_only=True, frozen=True):
    """The account's own settings, as its managers change them (the console's Settings
    page): its name, the time zone its members' times default to, and its language."""

    account_name: Annotated[str, msgspec.Meta(min_length=2, max_length=255)]
    time_zone: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    locale: Literal["en-US", "zh-CN"]
