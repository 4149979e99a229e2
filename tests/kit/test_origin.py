"""kit/origin: when a stored secret may follow a changed URL."""

from __future__ import annotations

import pytest

from dutyline.kit.origin import origin_of, same_origin


@pytest.mark.parametrize(("old", "new"), [
    ("https://a.example/mcp", "https://a.example/other/path?x=1"),
    ("https://A.Example/", "https://a.example:443/"),
    ("http://a.example/", "http://a.example:80/x"),
    ("https://a.example./", "https://a.example/"),
    ("https://user:pw@a.example/", "https://a.example/"),
])
def test_same_origin(old: str, new: str) -> None:
    assert same_origin(old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("https://a.example/", "http://a.example/"),          # scheme
    ("https://a.example/", "https://b.example/"),         # host
    ("https://a.example/", "https://a.example.evil.io/"),
    ("https://a.example/", "https://a.example:8443/"),    # port
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8001/"),
    ("https://a.example/", ""),                           # not comparable: fail closed
    ("", ""),
    ("https://a.example/", "a.example/mcp"),
    ("https://a.example/", "https://a.example:99999/"),
])
def test_different_origin(old: str, new: str) -> None:
    assert not same_origin(old, new)


def test_origin_of_fills_default_ports() -> None:
    assert origin_of("HTTPS://Host.Example/x") == ("https", "host.example", 443)
    assert origin_of("not a url") is None
