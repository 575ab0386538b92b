"""The times a question names, read against a fixed asking time, and hits re-weighted by them."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from project_history_recall import timewords
from project_history_recall.hits import KEYWORD, Hit
from project_history_recall.timewords import Window

UTC = timezone.utc
# Asked on Wednesday 25 October 2023 at noon.
ASKED = datetime(2023, 10, 25, 12, 0, tzinfo=UTC).timestamp()


def days_of(question: str, asked: float = ASKED) -> list[tuple[date, date]]:
    """Each window as (first day, day after the last)."""
    return [(datetime.fromtimestamp(w.start, UTC).date(), datetime.fromtimestamp(w.end, UTC).date())
            for w in timewords.find(question, asked, UTC)]


def one_day(y: int, m: int, d: int) -> list[tuple[date, date]]:
    return [(date(y, m, d), date(y, m, d) + timedelta(days=1))]


def month(y: int, m: int) -> list[tuple[date, date]]:
    return [(date(y, m, 1), date(y + m // 12, m % 12 + 1, 1))]


def year(y: int) -> list[tuple[date, date]]:
    return [(date(y, 1, 1), date(y + 1, 1, 1))]


@pytest.mark.parametrize("question, expected", [
    # Days, English, as LoCoMo and people write them.
    ("What did Jolene gain after her mini retreat on 9 February, 2023?", one_day(2023, 2, 9)),
    ("What exciting news did Maria share on 16 June, 2023?", one_day(2023, 6, 16)),
    ("What did Audrey set up in the backyard for their dogs on June 26, 2023?", one_day(2023, 6, 26)),
    ("what happened on september 8, 2023", one_day(2023, 9, 8)),
    ("What did Calvin book a flight ticket for on 1st September 2023?", one_day(2023, 9, 1)),
    ("the deploy on Sept. 3rd 2023", one_day(2023, 9, 3)),
    ("Where was the forest picture shared by John on December 1,2023 taken?", one_day(2023, 12, 1)),
    ("the outage of 2023-10-13", one_day(2023, 10, 13)),
    ("the outage of 2023/10/13", one_day(2023, 10, 13)),
    ("the 9th of February", one_day(2023, 2, 9)),
    ("what did we say on 3 November", one_day(2022, 11, 3)),  # no year: the last 3 November before asking
    ("the call on October 20th", one_day(2023, 10, 20)),
    ("What did Joanna just finish last Friday on 23 January, 2022?", one_day(2022, 1, 23)),  # the date says when
    ("What milestone did Jolene achieve recently on 4 February, 2023?", one_day(2023, 2, 4)),
    # Days, Chinese.
    ("Melanie在2023年10月13日给Caroline看了哪幅画？", one_day(2023, 10, 13)),
    ("Gina在2023年2月1日为她的服装店找到了什么？", one_day(2023, 2, 1)),
    ("10月13号那次讨论", one_day(2023, 10, 13)),
    ("１２月３日的会议", one_day(2022, 12, 3)),  # full-width digits, read as the query is (NFKC)
    # Months and years.
    ("What did Melanie do in October 2023?", month(2023, 10)),
    ("Who was the new addition to Nate's family in May 2022?", month(2022, 5)),
    ("Which classes did Evan join in mid-August 2023?", month(2023, 8)),
    ("the plan for Dec 2022", month(2022, 12)),
    ("Mel和她的孩子们在2023年7月最新的项目中画了什么？", month(2023, 7)),
    ("2023年10月份的预算", month(2023, 10)),
    ("What painting did Evan share with Sam in October?", month(2023, 10)),
    ("When did Caroline attend a pride parade in August?", month(2023, 8)),
    ("what did we change in November", month(2022, 11)),  # the last November before asking
    ("What did Dave open in May?", month(2023, 5)),
    ("Melanie在6月什么时候去露营的？", month(2023, 6)),
    ("三月的发布", month(2023, 3)),
    ("3月中旬的讨论", month(2023, 3)),
    ("十二月那次", month(2022, 12)),
    ("6月份的旅行", month(2023, 6)),
    ("Which country did James visit in 2021?", year(2021)),
    ("How many times has Melanie gone to the beach in 2023?", year(2023)),
    ("Melanie在2023年去过海滩几次？", year(2023)),
    ("What state did Joanna visit in summer 2021?", [(date(2021, 6, 1), date(2021, 9, 1))]),
    ("Caroline这个夏天有什么计划？", [(date(2023, 6, 1), date(2023, 9, 1))]),
    ("去年冬天的问题", [(date(2022, 12, 1), date(2023, 3, 1))]),
    # A season or part of a year, after a year or alone (asked in October 2023).
    ("2021年秋天去复查", [(date(2021, 9, 1), date(2021, 12, 1))]),
    ("2022年的夏季", [(date(2022, 6, 1), date(2022, 9, 1))]),
    ("前年冬天", [(date(2021, 12, 1), date(2022, 3, 1))]),
    ("2022年底的燃气费", month(2022, 12)),
    ("2022年年底", month(2022, 12)),
    ("2022年初", [(date(2022, 1, 1), date(2022, 3, 1))]),
    ("去年年底发的奖金", month(2022, 12)),
    ("今年上半年", [(date(2023, 1, 1), date(2023, 7, 1))]),
    ("去年下半年", [(date(2022, 7, 1), date(2023, 1, 1))]),
    ("前年暑假", [(date(2021, 7, 1), date(2021, 9, 1))]),
    ("暑假去哪玩了", [(date(2023, 7, 1), date(2023, 9, 1))]),
    ("寒假的时候", [(date(2023, 1, 1), date(2023, 3, 1))]),
    ("年底的时候", month(2022, 12)),  # the last year end before asking
    ("上个月年底的汇报", month(2023, 9) + month(2022, 12)),  # relative both, neither decides alone
    ("2022年初中毕业", year(2022)),  # 初中, junior school, is no start of the year
    ("2022年的暑假", [(date(2022, 7, 1), date(2022, 9, 1))]),
    ("去年年中", [(date(2022, 6, 1), date(2022, 8, 1))]),
    # Relative to the asking time.
    ("What did Joanna write yesterday?", one_day(2023, 10, 24)),
    ("what broke last night", one_day(2023, 10, 24)),
    ("the day before yesterday", one_day(2023, 10, 23)),
    ("what did we do today", one_day(2023, 10, 25)),
    ("昨天的报错", one_day(2023, 10, 24)),
    ("前天说的方案", one_day(2023, 10, 23)),
    ("大前天", one_day(2023, 10, 22)),
    ("今天早上", one_day(2023, 10, 25)),
    ("What did we decide last week about X", [(date(2023, 10, 16), date(2023, 10, 23))]),
    ("上周的决定", [(date(2023, 10, 16), date(2023, 10, 23))]),
    ("上个星期", [(date(2023, 10, 16), date(2023, 10, 23))]),
    ("earlier this week", [(date(2023, 10, 23), date(2023, 10, 26))]),
    ("这周", [(date(2023, 10, 23), date(2023, 10, 26))]),
    ("last weekend", [(date(2023, 10, 21), date(2023, 10, 23))]),
    ("上周末去哪了", [(date(2023, 10, 21), date(2023, 10, 23))]),
    ("last Friday", one_day(2023, 10, 20)),
    ("last Wednesday", one_day(2023, 10, 18)),  # asked on a Wednesday: a week back
    # A day of the week alone is the last one before today; of this week, only one already come.
    ("what did I work on on Monday?", one_day(2023, 10, 23)),
    ("what did we do Monday", one_day(2023, 10, 23)),
    ("Friday's deploy", one_day(2023, 10, 20)),
    ("the bug we found on Wednesday", one_day(2023, 10, 18)),  # asked on a Wednesday: a week back
    ("this Monday", one_day(2023, 10, 23)),
    ("周一做了什么", one_day(2023, 10, 23)),
    ("星期天聊的", one_day(2023, 10, 22)),
    ("礼拜五的会", one_day(2023, 10, 20)),
    ("上周三说的方案", one_day(2023, 10, 18)),
    ("上个周日", one_day(2023, 10, 22)),  # the calendar week's Sunday, its last day
    ("这周一", one_day(2023, 10, 23)),
    ("本周三", one_day(2023, 10, 25)),
    ("上上周三", [(date(2023, 10, 9), date(2023, 10, 16))]),  # the week, not last week's Wednesday
    ("last month", month(2023, 9)),
    ("上个月", month(2023, 9)),
    ("上月的账单", month(2023, 9)),
    ("this month", month(2023, 10)),
    ("本月", month(2023, 10)),
    ("last year", year(2022)),
    ("去年", year(2022)),
    ("前年", year(2021)),
    ("大前年的合同", year(2020)),  # the year before 前年, not 前年 read inside it
    ("上上周的决定", [(date(2023, 10, 9), date(2023, 10, 16))]),
    ("上上个月", month(2023, 8)),
    ("上上周末", [(date(2023, 10, 14), date(2023, 10, 16))]),
    ("上上上周", [(date(2023, 10, 2), date(2023, 10, 9))]),  # each 上 a week further back
    ("上上上个月", month(2023, 7)),
    ("the week before last", [(date(2023, 10, 9), date(2023, 10, 16))]),  # as 上上周
    ("the weekend before last", [(date(2023, 10, 14), date(2023, 10, 16))]),
    ("the month before last", month(2023, 8)),
    ("the year before last", year(2021)),
    ("the night before last", one_day(2023, 10, 23)),
    ("1000天前", []),  # no 000天前
    ("一百二十天前", []),  # no 二十天前
    ("this year", [(date(2023, 1, 1), date(2023, 10, 26))]),
    ("今年", [(date(2023, 1, 1), date(2023, 10, 26))]),
    ("two weeks ago", [(date(2023, 10, 8), date(2023, 10, 15))]),
    ("2 days ago", one_day(2023, 10, 23)),
    ("a week ago", [(date(2023, 10, 15), date(2023, 10, 22))]),
    ("three months ago", month(2023, 7)),
    ("a year ago", year(2022)),
    ("5天前", one_day(2023, 10, 20)),
    ("两周前", [(date(2023, 10, 8), date(2023, 10, 15))]),
    ("3个月前", month(2023, 7)),
    ("三个月之前", month(2023, 7)),
    ("in the past two weeks", [(date(2023, 10, 11), date(2023, 10, 26))]),
    ("over the last few days", [(date(2023, 10, 22), date(2023, 10, 26))]),
    ("in the past month", [(date(2023, 9, 1), date(2023, 10, 26))]),
])
def test_reads_the_time_a_question_names(question, expected):
    assert days_of(question) == expected


# Lunar days, asked on 25 October 2023 (lunar 2023, 九月十一; lunar 2022 began 1 February 2022, lunar
# 2023 on 22 January 2023 with a leap second month). Each date as lunar-python and lunardate give it.
@pytest.mark.parametrize("question, expected", [
    ("去年腊月二十七我们定了什么", one_day(2023, 1, 18)),  # lunar 2022's 腊月 is January 2023's
    ("腊月二十七那天", one_day(2023, 1, 18)),  # no year: the last one before asking, as 3月5号
    ("2022年腊月二十七", one_day(2023, 1, 18)),
    ("正月初六", one_day(2023, 1, 27)),
    ("今年的正月十五", one_day(2023, 2, 5)),
    ("二月初二", one_day(2023, 2, 21)),  # 初 marks the day lunar
    ("十二月初八", one_day(2022, 12, 30)),
    ("农历8月15日", one_day(2023, 9, 29)),
    ("农历三月", [(date(2023, 4, 20), date(2023, 5, 19))]),
    ("去年腊月", [(date(2022, 12, 23), date(2023, 1, 22))]),  # a lunar month alone: all of it
    ("闰二月初五", one_day(2023, 3, 26)),  # the leap month, after the second
    ("闰二月", [(date(2023, 3, 22), date(2023, 4, 20))]),
    ("除夕", one_day(2023, 1, 21)),
    ("年三十", one_day(2023, 1, 21)),
    ("大年初一", one_day(2023, 1, 22)),
    ("元宵节", one_day(2023, 2, 5)),
    ("端午", one_day(2023, 6, 22)),
    ("七夕", one_day(2023, 8, 22)),
    ("中秋", one_day(2023, 9, 29)),
    ("重阳节", one_day(2023, 10, 23)),
    ("腊八", one_day(2022, 12, 30)),
    ("春节", [(date(2023, 1, 21), date(2023, 1, 29))]),  # the holiday, 除夕 to 初七
    ("前年中秋", one_day(2021, 9, 21)),
    ("小年", [(date(2023, 1, 14), date(2023, 1, 16))]),  # 腊月二十三 in the north, 二十四 in the south
    # Days of the solar year: the holidays of 国庆 and 五一, the shopping days, the rest one day.
    ("国庆去哪玩了", [(date(2023, 10, 1), date(2023, 10, 8))]),
    ("去年国庆节", [(date(2022, 10, 1), date(2022, 10, 8))]),
    ("2022年五一", [(date(2022, 5, 1), date(2022, 5, 6))]),
    ("劳动节加班了吗", [(date(2023, 5, 1), date(2023, 5, 6))]),
    ("元旦", one_day(2023, 1, 1)),
    ("双十一买的外套", one_day(2022, 11, 11)),  # not yet this year
    ("双11", one_day(2022, 11, 11)),
    ("前年双十二", one_day(2021, 12, 12)),
    ("圣诞节送的礼物", one_day(2022, 12, 25)),
    ("平安夜", one_day(2022, 12, 24)),
    ("情人节", one_day(2023, 2, 14)),
    ("七夕情人节", one_day(2023, 8, 22)),  # 七夕, not 14 February
    ("中国情人节送了什么", []),  # 七夕 in other words, not 14 February
    ("六一儿童节", one_day(2023, 6, 1)),
    ("教师节", one_day(2023, 9, 10)),
    ("三八节", one_day(2023, 3, 8)),
    # 清明 is a day of the solar year: the holiday of 4-6 April, any year.
    ("清明回老家扫墓", [(date(2023, 4, 4), date(2023, 4, 7))]),
    ("去年清明节", [(date(2022, 4, 4), date(2022, 4, 7))]),
    ("2060年清明", [(date(2060, 4, 4), date(2060, 4, 7))]),
    # A festival named with a year is the one in that year: 去年除夕 is the eve of 2022's Spring Festival.
    ("去年除夕", one_day(2022, 1, 31)),
    ("2023年除夕", one_day(2023, 1, 21)),
    ("2023年春节", [(date(2023, 1, 21), date(2023, 1, 29))]),
    # 腊月三十 is New Year's Eve: the 29th in a 腊月 of 29 days (lunar 2024's).
    ("2022年腊月三十", one_day(2023, 1, 21)),
    ("2024年腊月三十", one_day(2025, 1, 28)),
    # Not lunar: no mark (八月十五 may be August's), early March together, words with 正月 or 腊八 inside.
    ("八月十五", month(2023, 8)),
    ("三月初一起讨论的", month(2023, 3)),
    ("修正月报的格式", []),
    ("腊八粥的做法", []),
    ("元宵好吃吗", []),
    ("小年轻都这样", []),
    ("苹果树有大小年", []),
    ("小小年纪就懂事", []),
    ("报名的最小年龄", []),
    ("意识清明的时候签的字", []),
    ("头脑清明的时候再决定", []),
    ("清明上河图的复制品", []),
    ("张国庆说的那家店", []),  # a man's name
    ("五一广场的那家店", []),
    ("五一路上堵车", []),
    ("五一二那天", []),
    ("二十五一斤", []),
    ("圣诞老人的衣服", []),
    # No such day, or outside the table's years (1979-2056): no time, no error.
    ("2023年闰二月三十", []),  # that leap month has 29 days
    ("闰正月初一", []),  # none in the table's years
    ("1970年腊月二十七", []),
    ("2060年中秋", []),
])
def test_reads_lunar_days_as_their_gregorian_days(question, expected):
    assert days_of(question) == expected


# Asked on 3 January 2026, lunar 2025's 冬月十五 (lunar 2026 begins 17 February 2026): the lunar year under
# way is still 2025, so 去年 names lunar 2024 and its 腊月 of January 2025, not the 腊月 still to come.
# A festival named with a year keeps the Gregorian year it falls in (去年除夕: 2025's, 28 January).
@pytest.mark.parametrize("question, expected", [
    ("去年腊月二十七", one_day(2025, 1, 26)),
    ("去年腊月", [(date(2024, 12, 31), date(2025, 1, 29))]),
    ("今年的正月十五", one_day(2025, 2, 12)),
    ("前年腊月二十七", one_day(2024, 2, 6)),
    ("去年除夕", one_day(2025, 1, 28)),
])
def test_a_lunar_year_said_in_january_counts_from_the_lunar_year_under_way(question, expected):
    assert days_of(question, datetime(2026, 1, 3, 12, tzinfo=UTC).timestamp()) == expected


@pytest.mark.parametrize("asked", [datetime(1975, 6, 1, tzinfo=UTC), datetime(2070, 6, 1, tzinfo=UTC)])
def test_a_lunar_day_asked_outside_the_tables_years_names_none(asked):
    assert days_of("腊月二十七", asked.timestamp()) == days_of("去年中秋", asked.timestamp()) == []


@pytest.mark.parametrize("question", ["the other day", "前几天", "前些日子"])
def test_the_other_day_is_a_few_days_ago(question):
    assert days_of(question) == days_of("a few days ago") == one_day(2023, 10, 22)
    assert [w.strength for w in timewords.find(question, ASKED, UTC)] == [timewords.VAGUE]


def test_a_vague_or_broad_time_counts_less_than_a_named_day():
    vague = {w.phrase: w.strength for q in ("a few days ago", "几年前", "in 2021", "summer 2021", "two years ago")
             for w in timewords.find(q, ASKED, UTC)}
    assert vague and all(s < timewords.EXACT for s in vague.values()), vague
    assert [w.strength for w in timewords.find("on 9 February, 2023", ASKED, UTC)] == [timewords.EXACT]


@pytest.mark.parametrize("question", [
    "May I ask what we decided about the cache?",
    "you may want to retry",
    "things may change in may",
    "we march on the API",
    "The soldiers march in formation",
    "the second time it failed",
    "the first time we met",
    "a month of work on the parser",
    "it takes two weeks to build",
    "the last time we spoke",
    "the last day of the sprint",
    "each week we deploy",
    "a 2023 byte buffer",
    "timeout in 2048 ms",
    "error 2023 in the log",
    "port 2021",
    "Which book did Jolene recommend?",
    "What workshop did Caroline attend recently?",  # recent to the event, not to the asking (measured)
    "what have we changed lately",
    "Melanie最近画了什么？",
    "近期的改动",
    "三个月的工作",
    "一个月",
    "以前年轻时的爱好",
    "月亮很圆",
    "五月天的演唱会",
    "一月一次的例会",
    "每月的报告",
    "第三个月",
    "两周年纪念",
    "1990年代的音乐",
    "这一年中最热的一天",
    "青少年中心的才艺表演",  # the end of 青少年, no 年中
    "青少年初中生",
    "多年底蕴",
    "年初二回娘家",  # the New Year's second day (大年初二 is read as such)
    "明年年底再说",
    # Days of the week that recur, are to come or count weeks.
    "on Mondays we deploy", "this Friday", "every Monday we deploy", "next Friday", "Monday to Friday",
    "Monday through Friday", "Monday-Friday", "Mon–Fri", "the coming Sunday", "每周一开会", "周一到周五上班", "周一至周五", "周一、三、五健身",
    "下周一", "本周五", "一周一次", "两个周一",
    # A deadline names the day a thing is for, not the day it was talked of.
    "what did we plan for Friday", "the fix is due on Monday", "due Monday", "ship it by Friday",
    "frozen until Thursday", "what must land before Friday", "周五之前要交", "周五前发版", "报告周三截止",
    "每年年底",
    "",
])
def test_words_that_only_look_like_times_name_none(question):
    assert timewords.find(question, ASKED, UTC) == []


def test_an_impossible_date_names_nothing_and_raises_nothing():
    assert timewords.find("on 31 February, 2023", ASKED, UTC) == []
    assert timewords.find("2023年13月5日", ASKED, UTC) == []
    assert timewords.find("on 29 February", ASKED, UTC) == []  # 2023 has none
    assert timewords.find("yesterday", float("nan"), UTC) == []
    assert timewords.find("yesterday", 1e300, UTC) == []


def test_several_times_in_one_question_all_count():
    assert days_of("between August 11 and August 15 2023") == one_day(2023, 8, 11) + one_day(2023, 8, 15)


def test_read_in_the_given_zone():
    tokyo = timezone(timedelta(hours=9))
    (window,) = timewords.find("yesterday", ASKED, tokyo)
    assert window.start == datetime(2023, 10, 24, tzinfo=tokyo).timestamp()


def hit(name: int, score: float, when: float) -> Hit:
    return Hit(name, f"session {name}", score, KEYWORD, when)


def _order(hits, windows, weight=0.5):
    return [h.message_id for h in timewords.reweigh(hits, windows, weight)]


DAY = timewords.DAY
OCT_13 = datetime(2023, 10, 13, tzinfo=UTC).timestamp()
WINDOW = [Window(OCT_13, OCT_13 + DAY, 1.0, "13 October")]


def test_a_hit_inside_the_window_rises_within_the_bound():
    far, close, weak = hit(1, 1.0, OCT_13 - 200 * DAY), hit(2, 0.8, OCT_13 + 3600), hit(3, 0.5, OCT_13 + 60)
    assert _order([far, close, weak], WINDOW) == [2, 1, 3]  # 0.8 × 1.5 > 1.0, but 0.5 × 1.5 < 1.0
    assert _order([far, close, weak], WINDOW, weight=1.0) == [2, 1, 3]
    assert _order([far, close, weak], WINDOW, weight=2.0) == [2, 3, 1]


def test_nearness_fades_faster_before_a_window_than_after_it():
    before = timewords.closeness(OCT_13 - 2 * DAY, WINDOW)
    after = timewords.closeness(OCT_13 + 3 * DAY, WINDOW)
    inside = timewords.closeness(OCT_13 + DAY / 2, WINDOW)
    assert inside == 1.0 and 0 < before < after < inside
    assert timewords.closeness(OCT_13 + 90 * DAY, WINDOW) < 1e-6
    assert timewords.closeness(0.0, WINDOW) == 0.0  # a message without a usable time


def test_the_best_window_counts_scaled_by_its_strength():
    weak = [Window(OCT_13, OCT_13 + DAY, 0.3, "in 2023")]
    assert timewords.closeness(OCT_13 + 10, weak) == pytest.approx(0.3)
    assert timewords.closeness(OCT_13 + 10, weak + WINDOW) == 1.0


def test_no_window_or_no_weight_leaves_the_order_exactly():
    hits = [hit(1, 0.2, OCT_13), hit(2, 0.9, 0.0), hit(3, 0.5, OCT_13)]  # not sorted by score on purpose
    assert timewords.reweigh(hits, [], 0.5) is hits
    assert timewords.reweigh(hits, WINDOW, 0.0) is hits


def test_ties_and_untimed_hits_keep_their_order():
    hits = [hit(1, 0.5, 0.0), hit(2, 0.5, OCT_13 - 300 * DAY), hit(3, 0.5, 0.0)]
    assert _order(hits, WINDOW) == [1, 2, 3]
