"""error.message follows Accept-Language: zh-CN and en, English by default."""

from __future__ import annotations

import re

import pytest

from dutyline.api.i18n import Translator, negotiate
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

pytestmark = pytest.mark.anyio

HAN = re.compile(r"[\u4e00-\u9fff]")

EN_401 = "Missing or invalid app_key"
ZH_401 = "app_key 缺失或无效"


async def _message(api: Api, method: str, path: str, lang: str | None, *, key: str | None = None,
                   json: object = None) -> tuple[int, str, str]:
    headers = {"Accept-Language": lang} if lang is not None else {}
    params = {"app_key": key} if key else {}
    kwargs = {"json": json if json is not None else {}} if method == "POST" else {}
    response = await api.raw(method, path, params=params, headers=headers, **kwargs)
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


@pytest.mark.parametrize("lang", ["zh-CN", "zh-cn", "zh_CN", "zh", "zh-Hans-CN", "zh-CN,en;q=0.5"])
async def test_chinese_messages(api: Api, owner: Person, lang: str) -> None:
    status, code, message = await _message(api, "POST", "/team/list", lang)
    assert (status, code, message) == (401, "Unauthorized", ZH_401)

    status, code, message = await _message(api, "POST", "/team/list", lang, key=owner.key,
                                           json={"p": 0})
    assert (status, code) == (400, "InvalidParameter")
    assert HAN.search(message), message
    assert "p" in message

    status, code, message = await _message(api, "POST", "/team/upsert", lang, key=owner.key)
    assert (status, code) == (400, "InvalidParameter")
    assert message == "参数 team_name 无效\uff1a为必填项"

    status, code, message = await _message(api, "POST", "/no/where", lang)
    assert (status, code, message) == (404, "RouteNotFound", "路径 /no/where 不存在")

    status, code, message = await _message(api, "GET", "/team/upsert", lang, key=owner.key)
    assert (status, code) == (405, "MethodNotAllowed")
    assert HAN.search(message), message


@pytest.mark.parametrize("lang", [None, "", "en", "en-US", "en-GB,zh-CN;q=0.1", "fr-FR",
                                  "xx-YY", "de,ja;q=0.9", "*", "!!invalid!!", "zh-CN;q=0"])
async def test_english_messages_by_default_and_on_fallback(api: Api, owner: Person,
                                                           lang: str | None) -> None:
    status, code, message = await _message(api, "POST", "/team/list", lang)
    assert (status, code, message) == (401, "Unauthorized", EN_401)
    status, code, message = await _message(api, "POST", "/team/upsert", lang, key=owner.key)
    assert (status, code, message) == (400, "InvalidParameter",
                                       "Invalid parameter team_name: is required")
    status, code, message = await _message(api, "POST", "/no/where", lang)
    assert (status, code, message) == (404, "RouteNotFound", "No route for /no/where")


@pytest.mark.parametrize(("header", "expected"), [
    ("en;q=0.4,zh-CN;q=0.9", ZH_401),
    ("zh-CN;q=0.4,en;q=0.9", EN_401),
    ("fr;q=1.0,zh-CN;q=0.8,en;q=0.7", ZH_401),
    ("fr,en;q=0.1,zh;q=0.2", ZH_401),
    ("zh-CN;q=0.5,en;q=0.5", ZH_401),  # a tie keeps the client's order
    ("en;q=0.5,zh-CN;q=0.5", EN_401),
    ("zh-CN;q=abc,en", EN_401),  # an unreadable q-value counts as 0
])
async def test_q_values_are_honoured(api: Api, header: str, expected: str) -> None:
    _, _, message = await _message(api, "POST", "/team/list", header)
    assert message == expected


def test_negotiate_caps_work_on_hostile_headers() -> None:
    assert negotiate("x-" * 10_000) == "en"
    assert negotiate(",".join(["fr"] * 1000 + ["zh-CN"])) == "en"  # only the first 20 count
    assert negotiate("zh-TW") == "zh_CN"  # the only Chinese catalog we have


def test_every_catalog_entry_keeps_its_placeholders() -> None:
    """A translation that drops or renames a {placeholder} would fall back at runtime; keep
    the catalog honest instead."""
    translator = Translator()
    assert "zh_CN" in translator.languages
    from babel.messages.pofile import read_po

    from dutyline.api.i18n import LOCALES_DIR

    entries = []
    for po_file in sorted((LOCALES_DIR / "zh_CN" / "LC_MESSAGES").glob("*.po")):
        with po_file.open("rb") as fh:
            entries += list(read_po(fh))
    placeholder = re.compile(r"\{(\w+)\}")
    checked = 0
    for entry in entries:
        if not entry.id or not entry.string:
            continue
        assert sorted(placeholder.findall(str(entry.id))) == sorted(
            placeholder.findall(str(entry.string))), entry.id
        checked += 1
    assert checked >= 10
