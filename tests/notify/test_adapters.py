"""The delivery tables are read from kit/channels.py's KINDS, and complete: every kind is
sendable to a person and to a group target exactly as its `person` and `group` say, what
it needs of the settings is known for each, and no means of delivery, adapter module or
`send` function is left outside the tables."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from dutyline.config import Settings
from dutyline.kit import channels
from dutyline.notify.delivery import adapters
from dutyline.notify.delivery.adapters import needs

KIND_NAMES = {k.name for k in channels.KINDS}
REACHES_NOONE = {k.name for k in channels.KINDS if not (k.person or k.group)}
# Modules of the package that are not a means of delivery.
HELPERS = {"base", "needs", "app_tokens"}


def test_every_kind_that_reaches_a_person_has_its_means() -> None:
    personal = {k.name for k in channels.KINDS if k.person}
    assert set(adapters.PERSONAL) == personal | REACHES_NOONE
    assert set(needs.PERSONAL) == personal
    for name in personal:
        assert channels.personal_refusal(name) is None
        assert adapters.adapter(name, personal=True) is adapters.PERSONAL[name]


def test_every_group_target_type_has_its_means() -> None:
    group = {k.name for k in channels.KINDS if k.group}
    assert set(adapters.GROUP) == group | REACHES_NOONE | {adapters.GROUP_EMAIL}
    assert set(channels.GROUP_CHANNELS) == group
    for name in channels.WEBHOOK_TYPES:
        assert channels.group_refusal(name) is None
        assert adapters.adapter(channels.GROUP_ALIASES.get(name, name)) is not None
    # The apps' group chats need the server's app; a robot carries its own URL and token.
    assert {n for n in needs.GROUP if n in group} == set(channels.APP_TYPES)


def test_a_kind_that_reaches_no_one_fails_with_why_whatever_the_settings() -> None:
    assert sorted(REACHES_NOONE) == ["teams_app"]
    every = Settings.from_env({name: "x1" for need in needs.CONFIGURABLE
                               for name in need.variables} | {"DUTYLINE_WECOM_AGENT_ID": "7"})
    for name in REACHES_NOONE:
        assert channels.personal_refusal(name) and channels.group_refusal(name)
        assert adapters.PERSONAL[name] is adapters.GROUP[name] is adapters.UNREACHABLE[name]
        assert needs.gap(every, name, personal=False) == needs.UNREACHABLE[name].unsupported


def test_the_means_by_address_agree_with_what_they_need() -> None:
    addresses = {k.person for k in channels.KINDS if k.person}
    assert set(needs.BY_ADDRESS) == addresses
    assert set(adapters.TO_PERSON) == addresses - {"phone"}
    assert set(adapters.BY_PHONE) == {k.name for k in channels.KINDS if k.person == "phone"}


def test_no_means_is_left_unused() -> None:
    assert set(adapters.ROBOTS) == {k.name for k in channels.KINDS if k.group == "url"}
    assert set(adapters.TO_GROUP_CHATS) == {k.person for k in channels.KINDS
                                            if k.group == "chat_ids"}
    assert set(adapters.UNREACHABLE) == REACHES_NOONE
    assert set(needs.UNREACHABLE) == REACHES_NOONE


def test_every_adapter_module_sends_through_a_table() -> None:
    """A module with a `send` function that no table names would be a channel nobody can
    use: every public coroutine function taking (env, out) is in a table."""
    used = {id(send) for table in (adapters.PERSONAL, adapters.GROUP) for send in table.values()}
    unused = []
    for info in pkgutil.iter_modules(adapters.__path__):
        if info.name in HELPERS:
            continue
        module = importlib.import_module(f"{adapters.__name__}.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.iscoroutinefunction):
            params = list(inspect.signature(fn).parameters)
            if (fn.__module__ == module.__name__ and name.startswith("send")
                    and params[:2] == ["env", "out"] and id(fn) not in used):
                unused.append(f"{info.name}.{name}")
    assert unused == []


def test_the_tables_name_only_kinds() -> None:
    assert set(adapters.PERSONAL) <= KIND_NAMES
    assert set(adapters.GROUP) <= KIND_NAMES
    assert set(needs.GROUP) <= KIND_NAMES
