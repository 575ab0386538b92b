"""Lunar months and days as Gregorian days, spot-checked against lunar-python's astronomical
computation (every day of 1979-2056 was checked against it and lunardate when the table was made)."""

from __future__ import annotations

import re
from datetime import date

import pytest

from project_history_recall import lunar


def test_new_years_across_the_table():
    for year, new_year in ((1979, date(1979, 1, 28)), (2000, date(2000, 2, 5)), (2023, date(2023, 1, 22)),
                           (2030, date(2030, 2, 3)), (2056, date(2056, 2, 15))):
        assert lunar.day(year, 1, 1) == new_year


def test_leap_months_come_after_the_month_they_repeat():
    assert lunar.month(2023, 2, leap=True) == (date(2023, 3, 22), 29)
    assert lunar.month(2023, 3) == (date(2023, 4, 20), 29)
    assert lunar.month(2025, 6, leap=True) == (date(2025, 7, 25), 29)
    assert lunar.month(2024, 6, leap=True) is None  # 2024 has no leap month


def test_the_last_days_of_the_table():
    assert lunar.month(2056, 12) == (date(2057, 1, 5), 30)
    assert lunar.day(2056, 12, 29) == date(2057, 2, 2)


def test_days_and_years_it_does_not_hold():
    assert lunar.day(2024, 12, 30) is None  # lunar 2024's 腊月 has 29 days
    assert lunar.day(2023, 1, 0) is None
    assert lunar.day(1978, 1, 1) is None and lunar.month(2057, 1) is None


@pytest.mark.parametrize("phrase", [*lunar.FESTIVALS, *lunar.SOLAR_FESTIVALS, "大年初六", "大年三十", "腊月二十七",
                                    "正月", "农历三月", "阴历8月15日", "闰二月初五", "五月初五", "冬月廿三"])
def test_every_lunar_day_said_holds_a_word_its_readers_look_for_first(phrase):
    found = re.search(lunar.SAID, f"我们{phrase}见")
    assert found, phrase
    assert any(word in found[0] for word in lunar.IN_EVERY_SAID), found[0]


def test_the_lunar_year_a_day_falls_in():
    assert lunar.year_of(date(2026, 1, 3)) == 2025 and lunar.year_of(date(2026, 2, 17)) == 2026
    assert lunar.year_of(date(1979, 1, 28)) == 1979 and lunar.year_of(date(1979, 1, 27)) is None
    assert lunar.year_of(date(2057, 2, 3)) == 2056 and lunar.year_of(date(2057, 2, 4)) is None
