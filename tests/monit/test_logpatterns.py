"""The log pattern miner on its own: what is masked, how lines merge, the order of patterns,
and the work bound that keeps lines with nothing in common from costing minutes."""

from __future__ import annotations

import random
import string

from dutyline.monit import logpatterns


def test_variable_parts_are_masked() -> None:
    assert logpatterns.mask(
        "2026-11-27T13:41:01.123Z req 3f2a9c1e-0b1d-4c6e-9f00-123456789abc from 10.1.2.3:443 "
        "took 12ms span=deadbeef42 ptr 0x7f3a user42 ok") == [
        "<TS>", "req", "<UUID>", "from", "<IP>", "took", "<NUM>", "span=<HEX>", "ptr", "<HEX>",
        "<ID>", "ok"]
    assert logpatterns.mask("GET /api/v1/items/8812 200") == ["GET", "/api/v1/items/<NUM>",
                                                             "<NUM>"]
    long = logpatterns.mask(" ".join(["w"] * 100))
    assert len(long) == logpatterns.MAX_TOKENS and long[-1] == logpatterns.WILDCARD


def test_similar_lines_merge_and_differences_become_wildcards() -> None:
    mined = logpatterns.mine([
        (30.0, "user alice logged in"), (10.0, "user bob logged in"),
        (20.0, "user carol logged out"), (40.0, "disk full on /var"),
        (50.0, "user dave logged in"),
    ])
    assert mined.complete and mined.lines == 5
    assert [(p.signature, p.count, p.first_seen, p.sample) for p in mined.patterns] == [
        ("user <*> logged <*>", 4, 10.0, "user alice logged in"),
        ("disk full on /var", 1, 40.0, "disk full on /var"),
    ]


def test_the_work_is_bounded() -> None:
    # Every line shares only its first word: each is compared with every pattern of the group.
    words = random.Random(7)
    lines = [(float(n), "error " + " ".join(
        "".join(words.choices(string.ascii_lowercase, k=6)) for _ in range(10)))
        for n in range(2000)]
    mined = logpatterns.mine(lines, max_work=100_000)
    assert len(mined.patterns) == logpatterns.MAX_PATTERNS_PER_GROUP
    # Each line past the 32nd costs 32 patterns × 11 tokens: the budget ends it early.
    assert not mined.complete and 250 < mined.lines < 320
    assert sum(p.count for p in mined.patterns) == mined.lines
