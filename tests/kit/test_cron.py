"""The strict validator of the contract's cron forms, and next fire times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dutyline.kit.cron import CronInvalid, check_timezone, next_after, normalize_fixed_minute


@pytest.mark.parametrize(("given", "normalized"), [
    ("9 * * 1-5", "0 9 * * 1-5"),  # 4 fields: minute 0 filled in
    ("30 9 * * 1-5", "30 9 * * 1-5"),
    ("  05   */2 1,15 JAN-MAR mon ", "5 */2 1,15 JAN-MAR mon"),
    ("0 0 * * 7", "0 0 * * 7"),
    ("59 23 31 12 0", "59 23 31 12 0"),
])
def test_accepted_forms_are_normalised(given: str, normalized: str) -> None:
    assert normalize_fixed_minute(given) == normalized


@pytest.mark.parametrize(("given", "why"), [
    ("", "required"),
    ("@daily", "macros"),
    ("@hourly", "macros"),
    ("0 0 9 * * 1", "6-field"),
    ("* * *", "4 or 5"),
    ("* 9 * * *", "fixed integer"),
    ("*/5 9 * * *", "fixed integer"),
    ("0-30 9 * * *", "fixed integer"),
    ("0,30 9 * * *", "fixed integer"),
    ("60 9 * * *", "fixed integer"),
    ("0 24 * * *", "hour"),
    ("0 9 0 * *", "day"),
    ("0 9 L * *", "day"),
    ("0 9 * 13 *", "month"),
    ("0 9 * * 8", "weekday"),
    ("0 9 * * 1#2", "weekday"),
    ("0 9 ? * *", "day"),
    ("0 9 5-1 * *", "backwards"),
    ("0 0 30 2 *", "never"),
])
def test_other_forms_are_refused(given: str, why: str) -> None:
    with pytest.raises(CronInvalid, match=why):
        normalize_fixed_minute(given)


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_next_time_is_strictly_after_and_in_the_zone() -> None:
    assert next_after("0 9 * * *", "UTC", _ms("2026-01-01T09:00:00")) == _ms("2026-01-02T09:00:00")
    assert next_after("0 9 * * *", "Asia/Shanghai", _ms("2026-01-01T00:00:00")) == \
        _ms("2026-01-01T01:00:00")
    # Weekday 0 and 7 are Sunday (2026-01-04 is a Sunday).
    assert next_after("0 0 * * 0", "UTC", _ms("2026-01-01T00:00:00")) == _ms("2026-01-04T00:00:00")
    assert next_after("0 0 * * 7", "UTC", _ms("2026-01-01T00:00:00")) == _ms("2026-01-04T00:00:00")


def test_dst_gap_and_overlap() -> None:
    # Europe/Berlin 2026-03-29: 02:00-03:00 does not exist; 2026-10-25: 02:00-03:00 twice.
    spring = next_after("30 2 * * *", "Europe/Berlin", _ms("2026-03-28T12:00:00"))
    assert spring > _ms("2026-03-28T12:00:00")
    autumn = next_after("30 2 * * *", "Europe/Berlin", _ms("2026-10-24T12:00:00"))
    after = next_after("30 2 * * *", "Europe/Berlin", autumn)
    assert after - autumn >= 23 * 3_600_000  # once that night, not twice an hour apart


def test_time_zones() -> None:
    assert check_timezone("") == "UTC"
    assert check_timezone("Europe/Paris") == "Europe/Paris"
    with pytest.raises(CronInvalid, match="unknown time zone"):
        check_timezone("Mars/Olympus")
