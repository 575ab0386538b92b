"""The times a question names, as soft windows, and hits re-weighted by them. Pure.

"What did we decide last week about X", "What did Melanie do in October 2023?",
"Melanie在2023年10月13日给Caroline看了哪幅画？", "上周…", "上上周…", "去年腊月二十七…", "中秋…": each time
phrase becomes a ``Window`` (start, end in seconds since the epoch, and a strength), read relative to
a reference time, the asking session's start. Dates without a year, and a month alone, are the most
recent such day or month on or before the reference; so too a lunar day, month or festival without a
year (its Gregorian days from ``lunar``'s table, none outside its years). A question that names a
date reads its "last Friday" from that date, so only the date counts there. "Recently", "lately" and 最近 name
no time: in LoCoMo they are recent to the event talked about, not to the asking, and a weak lean
towards the last weeks before the asking measured a small loss in both languages.

Only phrases that are times whatever the sentence around them says count, so that words which merely
look like times stay words: "May I…", "you may", "march on", "the second time", "a month"
(a length, not a time), "三个月", "以前年轻时".

``reweigh`` then lifts a hit whose message falls inside a window (or near one, less with
distance) by a bounded share of its own score; a question without a time leaves the ranking
exactly as it was. The phrase's words stay keyword terms: dropping them ("3 June, 2023") raised
the keyword shares of such questions and lost LoCoMo's tune half (docs/benchmarks.md, "English
stems and irregular forms").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from datetime import time as clock
from typing import Callable, Sequence

from . import lunar
from .hits import Hit, lifted

DAY = 86400.0
# How surely a kind of phrase points at its window: a named day or month at its full weight; a
# year, a season or "a few weeks ago" is broad or vague.
EXACT, BROAD, VAGUE = 1.0, 0.5, 0.5
# Outside a window its pull fades with distance: slowly after it (a day is talked about in the
# days that follow it), fast before it. Scales in days, or a share of the window's length when
# that is longer.
AFTER_DAYS, AFTER_SHARE = 3.0, 0.5
BEFORE_DAYS, BEFORE_SHARE = 1.0, 0.25


@dataclass(frozen=True)
class Window:
    start: float  # seconds since the epoch, inclusive
    end: float  # exclusive
    strength: float  # 0..1
    phrase: str  # the words it was read from


_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_MONTH = {name: n for n, name in enumerate(_MONTH_NAMES, 1)}
_MONTH.update({name[:3]: n for name, n in _MONTH.items()})
_MONTH["sept"] = 9
# Full names and abbreviations ("Sept."): only next to a day or a year number.
_MON = r"(?P<mon>" + "|".join(sorted(_MONTH, key=len, reverse=True)) + r")\.?"
# A month named alone must be a full name after a word that introduces a time ("in March",
# "since October"); "May" alone only capitalised ("in May", never "you may").
_MON_ALONE = r"(?P<mon>(?i:" + "|".join(n for n in _MONTH_NAMES if n != "may") + r")|May)"
_ALONE_LEAD = r"(?i:in|during|since|until|till|by|before|after|through|throughout|from|of|this|last|early|mid|late)"
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_THEN_YEAR = r"(?:,\s*|\s+)" + _YEAR + r"\b"  # "9 February 2023", "9 February, 2023", "December 1,2023"
_NOT_A_QUANTITY = (r"(?![\d:.,/-]*\d)(?!\s*(?:%|(?:ms|s|secs?|seconds?|bytes?|[kmgt]i?b|px|lines?|rows?|items?|"
                   r"users?|messages?|words?|times?|steps?|tokens?|records?|files?|people|dollars?|euros?)\b))")

_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
                 "few": 3, "several": 4}
_VAGUE_NUMBERS = {"a few", "few", "several"}
_AMOUNT = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + ")"
_CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
# A count of up to three digits or Chinese numerals without a place above ten: the rules that read one
# look behind it for more (1000天前 is no 000天前, 一百二十天前 no 二十天前).
_CN_NUMBER = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3}|几)"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# 周三, 星期天, 礼拜日; not the first of a list or a span of days (周一、三, 周一到周五, 周一至周五).
_CN_WEEKDAY = r"(?:周(?P<d>[一二三四五六日])|(?:星期|礼拜)(?P<dd>[一二三四五六日天]))(?!\s*(?:到|至|、|~|-|—))"
_CN_NUMERALS = "零〇一二两三四五六七八九十百千几"
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3),
            "春": (3, 3), "夏": (6, 3), "秋": (9, 3), "冬": (12, 3)}
# Parts of a year (first month, months long), said after a year or alone: 2024年底, 去年上半年, 年初.
# 年底 is its last month; 暑假 and 寒假 the school holidays, 寒假 from January into February.
_PARTS = {"年初": (1, 2), "年中": (6, 2), "年底": (12, 1), "年末": (12, 1), "上半年": (1, 6), "下半年": (7, 6),
          "暑假": (7, 2), "寒假": (1, 2)}
_PART = r"(?P<part>年初|年中|年底|年末|上半年|下半年|暑假|寒假)"
# 年初 but not of 年初二 (the New Year's second day) or 年初中 (…年 then 初中, junior school).
_YEAR_START = "年初(?![一二三四五六七八九十中次])"
# Characters that end a word with 年 (少年, 多年, 明年) or are a number of years (三年).
_ENDS_A_YEAR_WORD = "一二两三四五六七八九十几百千这那每今去前明后当年少青童成老中晚早近多历往新整半全同长"
_SEASON_CN = r"(?P<s>[春夏秋冬])(?:天|季)"


def _cn_int(text: str) -> int | None:
    """'12', '十二', '两', '二十' as a number; None for anything else (几: a few)."""
    if text.isdigit():
        return int(text)
    if text == "几":
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN_DIGITS.get(tens, 0) if tens else 1) * 10 + (_CN_DIGITS.get(ones, 0) if ones else 0)
    return _CN_DIGITS.get(text) if len(text) == 1 else None


@dataclass(frozen=True)
class _Reader:
    """One question read against one reference day."""

    today: date
    tz: tzinfo | None

    def at(self, day: date) -> float:
        """The start of ``day`` (local time when no zone was given)."""
        return datetime.combine(day, clock.min, tzinfo=self.tz).timestamp()

    def days(self, first: date, after_last: date, strength: float, phrase: str) -> Window:
        return Window(self.at(first), self.at(after_last), strength, phrase)

    def month(self, year: int, month: int, count: int, strength: float, phrase: str) -> Window | None:
        if not (1 <= month <= 12 and 1 <= year <= 9998):
            return None
        end_year, end_month = divmod(month - 1 + count, 12)
        return self.days(date(year, month, 1), date(year + end_year, end_month + 1, 1), strength, phrase)

    def latest_month(self, month: int, phrase: str) -> Window | None:
        """The most recent ``month`` that began on or before today."""
        year = self.today.year if month <= self.today.month else self.today.year - 1
        return self.month(year, month, 1, EXACT, phrase)

    def day(self, year: int | None, month: int, day: int, phrase: str, length: int = 1) -> Window | None:
        """The day (and the ``length`` - 1 days after it) of ``year``; without one, the most recent
        such day on or before today."""
        try:  # year 0 is no year datetime holds, not a date said without one
            found = date(self.today.year if year is None else year, month, day)
            if year is None and found > self.today:
                found = date(self.today.year - 1, month, day)
        except ValueError:  # 31 February, or 29 February in a year without one
            return None
        return self.days(found, found + timedelta(days=length), EXACT, phrase)

    def ago(self, amount: int | None, unit: str, phrase: str) -> Window | None:
        """A day, week, month or year ``amount`` of them before today (None amount: a few)."""
        count = amount if amount is not None else 3
        strength = EXACT if amount is not None else VAGUE
        if unit == "day":
            return self.days(self.today - timedelta(days=count), self.today - timedelta(days=count - 1), strength,
                             phrase)
        if unit == "week":
            centre = self.today - timedelta(days=7 * count)
            return self.days(centre - timedelta(days=3), centre + timedelta(days=4), strength, phrase)
        if unit == "month":
            year, month = divmod(self.today.year * 12 + self.today.month - 1 - count, 12)
            return self.month(year, month + 1, 1, strength, phrase)
        if unit == "year":
            return self.month(self.today.year - count, 1, 12, BROAD if amount != 1 else strength, phrase)
        return None

    def week(self, back: int, phrase: str) -> Window:
        monday = self.today - timedelta(days=self.today.weekday() + 7 * back)
        end = monday + timedelta(days=7) if back else self.today + timedelta(days=1)
        return self.days(monday, end, EXACT, phrase)

    def weekend(self, phrase: str, back: int = 1) -> Window:
        saturday = self.today - timedelta(days=((self.today.weekday() - 5) % 7 or 7) + 7 * (back - 1))
        return self.days(saturday, saturday + timedelta(days=2), EXACT, phrase)

    def weekday(self, index: int, phrase: str) -> Window:
        """The last day ``index`` (0 Monday) before today: asked on a Wednesday, "last Wednesday" and
        "on Wednesday" are a week back, as the day itself would be "today"."""
        back = (self.today.weekday() - index) % 7 or 7
        found = self.today - timedelta(days=back)
        return self.days(found, found + timedelta(days=1), EXACT, phrase)

    def day_of_week(self, weeks_back: int, index: int, phrase: str) -> Window | None:
        """Day ``index`` of the calendar week ``weeks_back`` weeks before this one (上周三, 这周一);
        None for a day of this week still to come."""
        found = self.today - timedelta(days=self.today.weekday() + 7 * weeks_back - index)
        return None if found > self.today else self.days(found, found + timedelta(days=1), EXACT, phrase)

    def lunar(self, year: int | None, number: int, leap: bool, day: int | None, phrase: str, *,
              festival: tuple[int, int] | None = None) -> Window | None:
        """Lunar month ``number`` (the leap one when ``leap``) of lunar ``year``, or its ``day``;
        without a year, the most recent one begun on or before today. A ``festival`` (days before
        the day, days long) named with a year is the one in that Gregorian year: 2025年除夕 is the
        eve of 2025's Spring Festival, the last day of lunar 2024."""
        if year is None:  # after the table's years, which year had the last one is unknown
            years: Sequence[int] = range(self.today.year, lunar.FIRST_YEAR - 1, -1)
            if self.today.year > lunar.LAST_YEAR:
                return None
        else:
            years = (year, year - 1) if festival else (year,)
        for each in years:
            found = _lunar_days(each, number, leap, day)
            if found is None:
                continue
            first, after_last = found
            if festival:
                first -= timedelta(days=festival[0])
                after_last = first + timedelta(days=festival[1])
            if year is None:
                wanted = first <= self.today
            else:
                wanted = not festival or first.year == year
            if wanted:
                return self.days(first, after_last, EXACT, phrase)
        return None

    def season(self, name: str, year: int | None, phrase: str) -> Window | None:
        return self._months(_SEASONS[name], year, phrase)

    def part(self, name: str, year: int | None, phrase: str) -> Window | None:
        return self._months(_PARTS[name], year, phrase)

    def _months(self, months: tuple[int, int], year: int | None, phrase: str) -> Window | None:
        """A season or part of ``year``; without one, this year's, or last year's if it has not
        begun this year."""
        first, count = months
        if year is None:
            year = self.today.year if first <= self.today.month else self.today.year - 1
        return self.month(year, first, count, BROAD, phrase)


def _cn_weekday(m: re.Match[str]) -> int:
    """The day a ``_CN_WEEKDAY`` match names, 0 for Monday."""
    return "一二三四五六日".index((m["d"] or m["dd"]).replace("天", "日"))


def _unit(word: str) -> str:
    word = word.lower()
    for unit, spellings in (("day", ("day", "天", "日")), ("week", ("week", "周", "星期", "礼拜")),
                            ("month", ("month", "月")), ("year", ("year", "年"))):
        if any(s in word for s in spellings):
            return unit
    return ""


def _english_amount(text: str) -> int | None:
    text = " ".join(text.lower().split())
    if text.isdigit():
        return int(text)
    return None if text in _VAGUE_NUMBERS else _NUMBER_WORDS.get(text)


def _lunar_days(year: int, number: int, leap: bool, day: int | None) -> tuple[date, date] | None:
    """The first day of a lunar month (``day`` None) or a lunar day, and the day after its last."""
    month = lunar.month(year, number, leap)
    if month is None:
        return None
    first, length = month
    if day is None:
        return first, first + timedelta(days=length)
    if (number, leap, day) == (12, False, 30):  # 腊月三十 is New Year's Eve: the 29th in a 腊月 of 29 days
        day = length
    found = lunar.day(year, number, day, leap)
    return None if found is None else (found, found + timedelta(days=1))


_YEARS_BACK = {"今年": 0, "去年": 1, "前年": 2, "大前年": 3}


def _read_lunar(r: _Reader, m: re.Match, year: int | None) -> Window | None:
    if m["f"]:
        name = m["f"].removeprefix("大")
        if name.startswith("年初"):  # 大年初六: 正月初六
            return r.lunar(year, 1, False, _cn_int(name[2:]), m[0], festival=(0, 1))
        if name in lunar.SOLAR_FESTIVALS:
            month, first, length = lunar.SOLAR_FESTIVALS[name]
            return r.day(year, month, first, m[0], length)
        number, on, before, length = lunar.FESTIVALS[name]
        return r.lunar(year, number, False, on, m[0], festival=(before, length))
    word = m["m"]
    number = {"正": 1, "冬": 11, "腊": 12}.get(word) or _cn_int(word) or 0
    day = None if m["d"] is None else _cn_int(m["d"].replace("初", "").replace("廿", "二十"))
    return r.lunar(year, number, bool(m["leap"]), day, m[0])


def _read_lunar_back(r: _Reader, m: re.Match, back: int) -> Window | None:
    """A lunar day or month of the year ``back`` years before this one. A festival's year is the
    Gregorian year it falls in (as ``_Reader.lunar`` reads a numbered one); a day's or month's is
    counted in lunar years from the one under way: in January, before 正月初一, that is still last
    year's, and 去年腊月 is the 腊月 of a year ago, not the coming one. None outside the table."""
    if m["f"]:
        return _read_lunar(r, m, r.today.year - back)
    under_way = lunar.year_of(r.today)
    return None if under_way is None else _read_lunar(r, m, under_way - back)


# (pattern, reads relative to the asking time, reader). Where patterns overlap the first match
# wins, so longer phrases come first.
_Read = Callable[["_Reader", re.Match], "Window | None"]
_Rule = tuple[re.Pattern, bool, _Read]


def _rules() -> list[_Rule]:
    i = re.IGNORECASE
    cn_not_length = r"(?<![0-9一二两三四五六七八九十几第每个半数])"

    def mon(m: re.Match) -> int:
        return _MONTH[m.group("mon").lower()]

    def year_of(m: re.Match) -> int:
        return int(m.group("year"))

    absolute: list[tuple[str, int, _Read]] = [
        # Lunar days and months, of a numbered year or none: 2025年腊月二十七, 正月初六, 除夕; before the
        # rules that would read 2025年 or 二月 in them.
        (rf"(?<!\d)(?P<year>\d{{4}})\s*年\s*的?{lunar.SAID}", 0, lambda r, m: _read_lunar(r, m, int(m["year"]))),
        (lunar.SAID, 0, lambda r, m: _read_lunar(r, m, None)),
        # Days: 2023-10-13, 2023/10/13, 2023年10月13日, 9 February 2023, February 9th, 2023.
        (r"\b(?P<year>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})\b", 0,
         lambda r, m: r.day(int(m["year"]), int(m["m"]), int(m["d"]), m[0])),
        # A year of more digits is read whole, and names no day: not its last four (12026年6月24日).
        (r"(?<!\d)(?P<year>\d{4,})\s*年\s*(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]", 0,
         lambda r, m: r.day(int(m["year"]), int(m["m"]), int(m["d"]), m[0])),
        (rf"\b(?P<d>\d{{1,2}}){_ORD}(?:\s+of)?\s+{_MON}{_THEN_YEAR}", i,
         lambda r, m: r.day(year_of(m), mon(m), int(m["d"]), m[0])),
        (rf"\b{_MON}\s+(?P<d>\d{{1,2}}){_ORD}{_THEN_YEAR}", i,
         lambda r, m: r.day(year_of(m), mon(m), int(m["d"]), m[0])),
        # Months of a year: May 2022, mid-August 2023, 2023年10月, 2023年10月份.
        (rf"\b{_MON}(?:\s+of)?{_THEN_YEAR}", i, lambda r, m: r.month(year_of(m), mon(m), 1, EXACT, m[0])),
        (r"(?<!\d)(?P<year>\d{4,})\s*年\s*(?P<m>\d{1,2})\s*月", 0,
         lambda r, m: r.month(int(m["year"]), int(m["m"]), 1, EXACT, m[0])),
        # Days without a year: 10月13日, 9 February, the 9th of February, February 9th.
        (r"(?<!\d)(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]", 0,
         lambda r, m: r.day(None, int(m["m"]), int(m["d"]), m[0])),
        (rf"\b(?P<d>\d{{1,2}}){_ORD}(?:\s+of)?\s+{_MON_ALONE}\b", 0,
         lambda r, m: r.day(None, mon(m), int(m["d"]), m[0])),
        (rf"\b{_MON_ALONE}\s+(?P<d>\d{{1,2}}){_ORD}\b(?![\d:.,/]*\d)", 0,
         lambda r, m: r.day(None, mon(m), int(m["d"]), m[0])),
        (rf"\b(?P<s>spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_YEAR}\b", i,
         lambda r, m: r.season(m["s"].lower(), year_of(m), m[0])),
        # A month alone: in October, since March, 三月, 6月, 6月份 (not 一月一次, 五月天).
        (rf"\b{_ALONE_LEAD}[\s-]+(?:the\s+month\s+of\s+)?{_MON_ALONE}\b(?!\s*\d)", 0,
         lambda r, m: r.latest_month(mon(m), m[0])),
        (cn_not_length + r"(?P<m>1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])\s*月(?:份)?"
         r"(?![亮球光饼子台薪票色天])(?![一两二三四五六七八九十几]?[次回趟])", 0,
         lambda r, m: r.latest_month(_cn_int(m["m"]) or 0, m[0])),
        # A year alone: in 2021, during 2023, 2023年.
        (rf"\b(?:in|during|since|until|by|from|of|throughout|through|early|mid|late|year)[\s-]+{_YEAR}\b"
         + _NOT_A_QUANTITY, i, lambda r, m: r.month(year_of(m), 1, 12, BROAD, m[0])),
        # A season or part of a year: 2024年秋天, 2024年的夏季, 2024年底, 2023年上半年; before the year alone.
        (rf"(?<!\d)(?P<year>(?:19|20)\d\d)\s*年\s*的?{_SEASON_CN}", 0,
         lambda r, m: r.season(m["s"], int(m["year"]), m[0])),
        (rf"(?<!\d)(?P<year>(?:19|20)\d\d)\s*(?:年\s*的?{_PART}|(?P<end>年[底末]|{_YEAR_START}))", 0,
         lambda r, m: r.part(m["part"] or m["end"], int(m["year"]), m[0])),
        (r"(?<!\d)(?P<year>(?:19|20)\d\d)\s*年(?![代龄纪级度])", 0,
         lambda r, m: r.month(int(m["year"]), 1, 12, BROAD, m[0])),
    ]
    relative: list[tuple[str, int, _Read]] = [
        # Lunar days and months of a year said relative to this one: 去年腊月二十七, 今年中秋, 前年春节.
        (rf"(?P<yw>大前年|(?<![以之从提当几多])前年|去年|今年)的?{lunar.SAID}", 0,
         lambda r, m: _read_lunar_back(r, m, _YEARS_BACK[m["yw"]])),
        # Seasons: last summer, 今年夏天, 去年冬天.
        (r"\b(?P<which>this|last)\s+(?P<s>spring|summer|autumn|fall|winter)\b", i,
         lambda r, m: r.season(m["s"].lower(), r.today.year - 1 if m["which"].lower() == "last" else None,
                               m[0])),
        (rf"(?P<which>今年|这个|去年|大前年|(?<![以之从提当几多])前年)的?{_SEASON_CN}", 0,
         lambda r, m: r.season(m["s"], None if m["which"] in ("今年", "这个")
                               else r.today.year - _YEARS_BACK[m["which"]], m[0])),
        # Parts of a year said relative to this one: 去年年底, 今年上半年, 前年暑假.
        (rf"(?P<which>今年|去年|大前年|(?<![以之从提当几多])前年)的?{_PART}", 0,
         lambda r, m: r.part(m["part"], r.today.year - _YEARS_BACK[m["which"]], m[0])),
        # Days: the day before yesterday, yesterday, last night, (earlier) today; 大前天, 前天, 昨天, 今天.
        (r"\bthe\s+(?:day\s+before\s+yesterday|night\s+before\s+last)\b", i, lambda r, m: r.ago(2, "day", m[0])),
        (r"\b(?:yesterday|last\s+night)\b", i, lambda r, m: r.ago(1, "day", m[0])),
        (r"\b(?:(?:earlier\s+)?(?:today|this\s+(?:morning|afternoon|evening))|tonight)\b", i,
         lambda r, m: r.ago(0, "day", m[0])),
        (r"大前天", 0, lambda r, m: r.ago(3, "day", m[0])),
        (r"(?<![以之从提当])前天", 0, lambda r, m: r.ago(2, "day", m[0])),
        (r"昨[天日晚]", 0, lambda r, m: r.ago(1, "day", m[0])),
        (r"今[天日晚早]", 0, lambda r, m: r.ago(0, "day", m[0])),
        # N days, weeks, months, years ago; 三天前, 两周前, 3个月前, 几年前.
        (rf"\b{_AMOUNT}\s+(?P<u>days?|weeks?|months?|years?)\s+ago\b", i,
         lambda r, m: r.ago(_english_amount(m["n"]), _unit(m["u"]), m[0])),
        (rf"(?<![\d零〇一二两三四五六七八九十百千万亿])(?P<n>{_CN_NUMBER})\s*(?:个)?\s*(?P<u>天|日|周|星期|礼拜|月|年)(?:之|以)?前", 0,
         lambda r, m: r.ago(_cn_int(m["n"]), _unit(m["u"]), m[0])),
        # The past N days / weeks …: from then until now.
        (rf"\b(?:in|over|during)\s+the\s+(?:past|last)\s+(?:{_AMOUNT}\s+)?(?P<u>days?|weeks?|months?|years?)\b", i,
         lambda r, m: _past(r, _english_amount(m["n"]) if m["n"] else 1, _unit(m["u"]), m[0])),
        # A day of last or this week (上周三, 这周一), before the week it is in; not 上上周三, a week earlier.
        (rf"(?<!上)(?P<which>上|这|本)(?:个)?{_CN_WEEKDAY}", 0,
         lambda r, m: r.day_of_week(int(m["which"] == "上"), _cn_weekday(m), m[0])),
        # Weeks, weekends, months, years: last week, this month, 上周, 上个月, 去年, 前年, 今年.
        # The week, weekend and month before last (上上周, 上上周末, 上上个月), each further 上 one more back:
        # the 上周 inside them is not theirs.
        (r"(?P<up>上{2,})(?:个)?周末", 0, lambda r, m: r.weekend(m[0], len(m["up"]))),
        (r"(?P<up>上{2,})(?:个)?(?:周|星期|礼拜)(?!年)", 0, lambda r, m: r.week(len(m["up"]), m[0])),
        (r"(?P<up>上{2,})(?:个)?月(?!亮|球|光|饼)", 0, lambda r, m: r.ago(len(m["up"]), "month", m[0])),
        (r"\bthe\s+weekend\s+before\s+last\b", i, lambda r, m: r.weekend(m[0], 2)),
        (r"\bthe\s+week\s+before\s+last\b", i, lambda r, m: r.week(2, m[0])),
        (r"\bthe\s+(?P<u>month|year)\s+before\s+last\b", i, lambda r, m: r.ago(2, m["u"].lower(), m[0])),
        (r"\blast\s+weekend\b|上(?:个)?周末", i, lambda r, m: r.weekend(m[0])),
        (r"\blast\s+week\b|上(?:个)?(?:周|星期|礼拜)(?!年)", i, lambda r, m: r.week(1, m[0])),
        (r"\b(?:earlier\s+)?this\s+week\b|(?:这|本)(?:个)?(?:周|星期|礼拜)(?!年|末)", i,
         lambda r, m: r.week(0, m[0])),
        (r"\blast\s+month\b|上(?:个)?月(?!亮|球|光|饼)", i, lambda r, m: r.ago(1, "month", m[0])),
        (r"\b(?:earlier\s+)?this\s+month\b|(?:这|本)(?:个)?月(?!亮|球|光|饼)", i,
         lambda r, m: r.ago(0, "month", m[0])),
        (r"\blast\s+year\b|去年", i, lambda r, m: r.ago(1, "year", m[0])),
        (r"大前年", 0, lambda r, m: r.ago(3, "year", m[0])),  # as 大前天: not the 前年 inside it
        (r"(?<![以之从提当几多])前年(?![轻纪龄级度])", 0, lambda r, m: r.ago(2, "year", m[0])),
        (r"\b(?:earlier\s+)?this\s+year\b|今年", i,
         lambda r, m: r.days(date(r.today.year, 1, 1), r.today + timedelta(days=1), EXACT, m[0])),
        # A day of the week: last Friday, on Friday, Friday, this Monday; 上周三, 这周一, 周五, 星期天. Not a
        # day that recurs (on Fridays, every Friday, Monday to Friday, 每周五, 周一到周五, 周一、三) nor one
        # to come (next Friday, 下周一), nor a deadline (for, by, until or before Friday, due on Friday,
        # 周五之前, 周五前, 周五截止: the day a thing is for, not the day it was talked of), nor 周 after a
        # number (一周一次: once a week). A bare one is the last before today, as "last Friday" is.
        (rf"\bthis\s+(?P<wd>{'|'.join(_WEEKDAYS)})\b", i,
         lambda r, m: r.day_of_week(0, _WEEKDAYS.index(m["wd"].lower()), m[0])),
        (rf"(?<!\bevery\s)(?<!\beach\s)(?<!\bnext\s)(?<!\bcoming\s)(?<!\bfollowing\s)"
         rf"(?<!\bto\s)(?<!\bthrough\s)(?<!\bthru\s)(?<![-–—]\s)(?<![-–—])"
         rf"(?<!\bfor\s)(?<!\bby\s)(?<!\buntil\s)(?<!\btill\s)(?<!\bbefore\s)(?<!\bdue\s)(?<!\bdue\son\s)"
         rf"\b(?:(?:last|on)\s+)?(?P<wd>{'|'.join(_WEEKDAYS)})\b(?!\s*(?:[-–—]|(?:to|through|thru|till|until)\s))", i,
         lambda r, m: r.weekday(_WEEKDAYS.index(m["wd"].lower()), m[0])),
        (rf"(?<![上下这本每个到至{_CN_NUMERALS}])(?<!\d){_CN_WEEKDAY}(?!\s*(?:之前|以前|前|截止))", 0,
         lambda r, m: r.weekday(_cn_weekday(m), m[0])),
        # A part of a year alone: the last one begun (年底 asked in June is last December's), read
        # relative to the asking as 上个月 is, so a date the question names decides. Not a year's
        # part of a year named (2024年底, 明年年底, 当年年底, 明年的暑假), nor the end of a word that ends in 年
        # (青少年中心, 青少年初中生, 多年底蕴); 年中 only after a year, as it is mostly such an end (这一年中).
        (rf"(?<![\d{_ENDS_A_YEAR_WORD}])(?<!年的)(?P<part>年底|年末|{_YEAR_START}|上半年|下半年|暑假|寒假)", 0,
         lambda r, m: r.part(m["part"], None, m[0])),
        (r"\bthe\s+other\s+day\b|前几天|前些日子", i, lambda r, m: r.ago(None, "day", m[0])),
    ]
    # Relative phrases first: "last October" is a month alone, but "3个月前" is not 3月.
    return ([(re.compile(p, f), True, read) for p, f, read in relative]
            + [(re.compile(p, f), False, read) for p, f, read in absolute])


def _past(r: _Reader, amount: int | None, unit: str, phrase: str) -> Window | None:
    """From ``amount`` units back (a few when None) until today's end."""
    count = amount if amount is not None else 3
    step = {"day": 1, "week": 7}.get(unit)
    first = r.today - timedelta(days=step * count) if step else None
    if first is None:
        back = r.ago(count, unit, phrase)
        if back is None:
            return None
        return Window(back.start, r.at(r.today + timedelta(days=1)), back.strength, phrase)
    return r.days(first, r.today + timedelta(days=1), EXACT if amount is not None else VAGUE, phrase)


_RULES = _rules()


def find(question: str, reference: float, tz: tzinfo | None = None) -> list[Window]:
    """The time windows ``question`` names, in the order they appear; ``reference``, the
    asking time (seconds since the epoch); ``tz``, the zone dates are read in (local when None)."""
    if not question or not math.isfinite(reference):
        return []
    try:
        now = datetime.fromtimestamp(reference, tz)
    except (OverflowError, OSError, ValueError):
        return []
    reader = _Reader(now.date(), tz)
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, bool, Window]] = []
    for pattern, relative, read in _RULES:
        for m in pattern.finditer(question):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            try:
                window = read(reader, m)
            except (ValueError, OverflowError, OSError):  # a year datetime cannot place
                window = None
            taken.append((m.start(), m.end()))
            if window is not None:
                found.append((m.start(), relative, window))
    # A question that names a date reads its "last Friday" from that date, not
    # from the asking time: the date alone says when.
    if not all(relative for _, relative, _ in found):
        found = [entry for entry in found if not entry[1]]
    return [w for _, _, w in sorted(found, key=lambda entry: entry[0])]


def closeness(ts: float | None, windows: Sequence[Window]) -> float:
    """0..1: how well a message at ``ts`` fits the best of ``windows`` (strength × nearness)."""
    if not ts or not windows:
        return 0.0
    best = 0.0
    for w in windows:
        length = max(w.end - w.start, 0.0)
        if ts < w.start:
            near = math.exp(-(w.start - ts) / max(BEFORE_DAYS * DAY, BEFORE_SHARE * length))
        elif ts >= w.end:
            near = math.exp(-(ts - w.end) / max(AFTER_DAYS * DAY, AFTER_SHARE * length))
        else:
            near = 1.0
        best = max(best, w.strength * near)
    return best


def reweigh(hits: list[Hit], windows: Sequence[Window], weight: float) -> list[Hit]:
    """``hits`` (best first) re-ordered by ``score × (1 + weight × closeness)``: at most
    ``weight`` of its own score more for a hit in the right time. Without windows (or with
    weight 0) the very same list; ties keep their order."""
    if not windows or weight <= 0 or not hits:
        return hits
    return lifted(hits, lambda h: weight * closeness(h.timestamp, windows))
