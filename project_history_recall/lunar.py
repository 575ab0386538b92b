"""Days of the Chinese lunar calendar: how chat names them, and which Gregorian days they are, for
the lunar years 1979-2056. Pure.

A table, not a package: the one pure-Python converter on PyPI (lunardate) is GPL-3.0, which this
MIT plugin does not take on, and the few days a question names need only each year's months. The
months are those of the Hong Kong Observatory's Gregorian-lunar conversion tables (1901-2100), as
lunar-python's astronomical computation (MIT) gives them; the range is the span around today in
which that computation and lunardate's table (drawn from the same tables) agree day for day: they
differ on a month's length in 1978 and 2057. A year outside it has no lunar days here.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import date, timedelta
from functools import lru_cache
from itertools import accumulate

FIRST_YEAR, LAST_YEAR = 1979, 2056
_FIRST_NEW_YEAR = date(1979, 1, 28)  # 正月初一 of lunar 1979
# One number per lunar year from FIRST_YEAR: its leap month (0 for none) in bits 13-16, and its
# months in order (the leap month after the month it repeats), the first in bit 12, a bit set for
# a month of 30 days (29 otherwise); a year of 12 months leaves bit 0 clear.
_YEARS = (
    0x0d2da, 0x012b6, 0x00936, 0x09497, 0x01496, 0x1564b, 0x00d4a, 0x00da8,
    0x0d5b4, 0x0156c, 0x012ae, 0x0a92f, 0x0092e, 0x00c96, 0x06d4a, 0x01d4a,
    0x10d65, 0x00b58, 0x0156c, 0x0b26d, 0x0125c, 0x0192c, 0x09a95, 0x01a94,
    0x01b4a, 0x04b55, 0x00ad4, 0x0f55b, 0x004ba, 0x0125a, 0x0b92b, 0x0152a,
    0x01694, 0x096aa, 0x015aa, 0x12ab5, 0x00974, 0x014b6, 0x0ca57, 0x00a56,
    0x01526, 0x08e95, 0x00d54, 0x015aa, 0x049b5, 0x0096c, 0x0d4ae, 0x0149c,
    0x01a4c, 0x0bd26, 0x01aa6, 0x00b54, 0x06d6a, 0x012da, 0x1695d, 0x0095a,
    0x0149a, 0x0da4b, 0x01a4a, 0x01aa4, 0x0bb54, 0x016b4, 0x00ada, 0x0495b,
    0x00936, 0x0f497, 0x01496, 0x0154a, 0x0b6a5, 0x00da4, 0x015b4, 0x06ab6,
    0x0126e, 0x1092f, 0x0092e, 0x00c96, 0x0cd4a, 0x01d4a,
)


def _lengths(year: int) -> list[int]:
    """The lengths of lunar ``year``'s months, in order."""
    code = _YEARS[year - FIRST_YEAR]
    return [30 if code >> (12 - n) & 1 else 29 for n in range(13 if code >> 13 else 12)]


_NEW_YEARS = list(accumulate((sum(_lengths(year)) for year in range(FIRST_YEAR, LAST_YEAR)),
                             lambda day, length: day + timedelta(days=length), initial=_FIRST_NEW_YEAR))


@lru_cache(maxsize=None)
def _months(year: int) -> dict[tuple[int, bool], tuple[date, int]]:
    """Each month of lunar ``year`` by (number, leap): its first day and its length."""
    first = _NEW_YEARS[year - FIRST_YEAR]
    leap = _YEARS[year - FIRST_YEAR] >> 13
    order = [(n, False) for n in range(1, 13)]
    if leap:
        order.insert(leap, (leap, True))
    months = {}
    for key, length in zip(order, _lengths(year), strict=True):
        months[key] = (first, length)
        first += timedelta(days=length)
    return months


def month(year: int, number: int, leap: bool = False) -> tuple[date, int] | None:
    """The first Gregorian day of lunar month ``number`` (the leap one when ``leap``) of lunar
    ``year``, and its length in days; None if the table has no such month."""
    if not FIRST_YEAR <= year <= LAST_YEAR:
        return None
    return _months(year).get((number, leap))


def year_of(today: date) -> int | None:
    """The lunar year ``today`` falls in; None outside the table's years."""
    at = bisect_right(_NEW_YEARS, today) - 1
    if at < 0 or today >= _NEW_YEARS[-1] + timedelta(days=sum(_lengths(LAST_YEAR))):
        return None
    return FIRST_YEAR + at


def day(year: int, number: int, day_of_month: int, leap: bool = False) -> date | None:
    """The Gregorian day of a lunar day; None if the table has no such day (day 30 of a month of 29)."""
    found = month(year, number, leap)
    if found is None or not 1 <= day_of_month <= found[1]:
        return None
    return found[0] + timedelta(days=day_of_month - 1)


# How a lunar day is named (``SAID``, read by ``timewords`` for a time asked about and by the keyword
# side's ``answerkind`` for a time told). A month and day are lunar when marked by 农历 or 阴历 before
# them, by 闰 (a leap month), by 正月, 冬月 or 腊月, or by a day of 初 or 廿 (五月初五, not 五月二十,
# which may be May's; nor 三月初一起, early March together). The month alone only when so marked
# (正月, 腊月, 农历三月). Its groups: ``nl`` the mark, ``leap``, ``m`` the month and ``d`` the day as
# said; ``f`` a festival's name.
_ORDINAL = "一二三四五六七八九"
_MONTH = rf"十[一二]?|[{_ORDINAL}]"
_MONTH_NAME = rf"正|冬|腊|{_MONTH}"
_DAY = rf"初十|初[{_ORDINAL}]|二十[{_ORDINAL}]?|廿[{_ORDINAL}]|三十|十[{_ORDINAL}]?"
_MARK = (rf"(?=农历|阴历|闰|(?<![真修纠改公更校反端立])[正冬腊]月|(?:{_MONTH})月"
         rf"(?:初(?!一起)[{_ORDINAL}十]|廿[{_ORDINAL}]))")
_DATE = (_MARK + rf"(?P<nl>农历|阴历)?的?(?P<leap>闰)?(?P<m>{_MONTH_NAME}|1[0-2]|[1-9])月(?:份)?"
         rf"(?:(?P<d>{_DAY}|[12]\d|30|[1-9])(?!\d)[日号]?|(?![亮球光饼子台薪票色天度报费]))")
# Festivals by their lunar day (month, day), the days before it and the days long they name: 春节 is
# the holiday from 除夕 to 初七; 小年 is 腊月二十三 in the north and 二十四 in the south.
FESTIVALS = {"除夕": (12, 30, 0, 1), "年三十": (12, 30, 0, 1), "春节": (1, 1, 1, 8), "元宵节": (1, 15, 0, 1),
             "端午": (5, 5, 0, 1), "七夕": (7, 7, 0, 1), "中秋": (8, 15, 0, 1), "重阳节": (9, 9, 0, 1),
             "腊八": (12, 8, 0, 1), "小年": (12, 23, 0, 2)}
# Days of the solar year, each of its names: (month, first day, days long). 清明 is 4 or 5 April in
# every year of the table, and the three days' holiday around it; 国庆 and 五一 name their holidays
# (1-7 October, 1-5 May); 双十一 and 双十二 are the shopping days.
SOLAR_FESTIVALS = {"清明": (4, 4, 3), "元旦": (1, 1, 1), "情人节": (2, 14, 1), "妇女节": (3, 8, 1),
                   "三八节": (3, 8, 1), "五一": (5, 1, 5), "劳动节": (5, 1, 5), "儿童节": (6, 1, 1),
                   "教师节": (9, 10, 1), "国庆": (10, 1, 7), "双十一": (11, 11, 1), "双11": (11, 11, 1),
                   "双十二": (12, 12, 1), "双12": (12, 12, 1), "平安夜": (12, 24, 1), "圣诞": (12, 25, 1)}
# 年三十 after a number is an age (2025年三十岁); 腊八粥 is a dish; 元宵 without 节 a dumpling; 小年轻 are
# the young, 小小年纪 and 最小年龄 an age, and 大小年 a fruit tree's good and poor years; 清明 is also
# clear-headed (头脑清明, 意识清明, 眼神清明), and 清明上河图 a painting. 五一 inside a number (五一二,
# 二十五一) or a name (五一路, 五一广场, 五一班) is none, 国庆 after a common surname is a man's name
# (张国庆), 七夕情人节 and 中国情人节 are 七夕, and 圣诞老人 is Father Christmas.
_CN_NUMERAL = "零〇一二两三四五六七八九十百千万几"
_SURNAME = "张王李刘陈杨赵黄周吴徐孙胡朱高林何郭马罗梁宋郑谢韩唐冯于董曹袁邓许沈曾彭吕苏卢蒋蔡贾丁魏薛叶余潘杜戴夏钟汪田任姜范方石姚谭廖邹熊金陆郝孔白崔康毛邱秦江史顾侯邵孟龙万段钱汤尹黎易常武乔贺赖龚文"
_FESTIVAL = (r"(?P<f>除夕|大?(?<![\d零〇一二两三四五六七八九十百千几])年三十(?!岁)|大年初(?:十|[一二三四五六七八九])"
             r"|春节|元宵节|端午|七夕|中秋|重阳节|腊八(?!节?[粥蒜])|(?<!大)小年(?![轻糕级纪龄])"
             r"|(?<![治志脑神识])清明(?!上河)|元旦|(?<!七夕)(?<!中国)情人节|妇女节|三八节|劳动节"
             rf"|(?<![\d{_CN_NUMERAL}第])五一(?![\d{_CN_NUMERAL}路街村班广])|儿童节|教师节"
             rf"|(?<![{_SURNAME}])国庆|双十[一二]|双1[12](?!\d)|平安夜|圣诞(?!老人))")
SAID = rf"(?:{_DATE}|{_FESTIVAL})"
# Every text ``SAID`` matches in holds one of these (a date its 月, 大年初六 its 大年初, a festival its
# name): a reader of many texts looks for them first, as substring searches are many times faster
# than the pattern's lookaheads at every character.
IN_EVERY_SAID = ("月", "大年初", *FESTIVALS, *SOLAR_FESTIVALS)
