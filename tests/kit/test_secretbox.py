"""Secrets at rest: authenticated encryption keyed by the server secret."""

from __future__ import annotations

import pytest

from dutyline.kit.secretbox import SecretBox, SecretBoxError


def test_round_trip() -> None:
    box = SecretBox("server-key")
    for text in ["", "Bearer abc", "ünïcødé ✓", "x" * 10_000]:
        token = box.seal(text)
        assert text not in token or text == ""
        assert box.open(token) == text


def test_each_seal_differs_but_opens_the_same() -> None:
    box = SecretBox("server-key")
    assert box.seal("same") != box.seal("same")


def test_tampered_token_is_refused() -> None:
    box = SecretBox("server-key")
    token = box.seal("Bearer abc")
    flipped = token[:20] + ("A" if token[20] != "A" else "B") + token[21:]
    with pytest.raises(SecretBoxError, match="altered"):
        box.open(flipped)
    with pytest.raises(SecretBoxError):
        box.open("not a token")
    with pytest.raises(SecretBoxError):
        box.open("ünïcødé")


def test_another_key_cannot_open() -> None:
    token = SecretBox("key-one").seal("Bearer abc")
    with pytest.raises(SecretBoxError, match="DUTYLINE_SECRET_KEY"):
        SecretBox("key-two").open(token)
    assert SecretBox("key-one").open(token) == "Bearer abc"


def test_deferred_key_is_resolved_on_first_use_only() -> None:
    calls: list[int] = []

    def key() -> str:
        calls.append(1)
        return "late-key"

    box = SecretBox(key)
    assert calls == []
    token = box.seal("v")
    assert box.open(token) == "v" and calls == [1]
    assert SecretBox("late-key").open(token) == "v"


def test_empty_key_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        SecretBox("")
