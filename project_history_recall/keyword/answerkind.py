"""Whether a question asks for a number or a time, and whether a text says one (``answers``: read
only in a short text, ``ANSWER_CHARS``). Pure.

A question that asks 多少, 几 or 多久 is answered by a number: 牙套多少钱 by "全瓷牙冠，两千五",
父母帮我们出了多少首付 by "我和你爸给你们出二十万". The messages that hold the question's words
without a number most often ask it again ("首付比例多少") or talk around it. The question word is
grammar, as "how much" is in English, so it finds nothing itself; what it asks for is a kind of
answer, and a message that says one earns part of a share of the question
(``scoring.ANSWER_CREDIT``). So does 什么时候: "when" is answered by a time (上周五, 昨天, 八月,
两周前), and the messages that ask it back (你什么时候去？) say none.

Three kinds. A length of time (多久, 多长时间, 几天) is answered by a number with a unit of time
(七年, 两个月, 二十四小时); any other amount (a price, a score, a count, a distance) by a number
that is not one, nor a day or an hour (8月15号, 下午3点, 9:30): 打工时薪多少 is not answered by
"打工两个月", nor 花了多少 by "超过二十四小时" or by "合同签了 8月15号搬"; a
moment (什么时候, 哪天, 几月) by a day, a week, a month or a year named (腊月二十七 and 中秋 too), or a
time ago. A number said in Chinese is one of its own (二十, 两千五, 三个人, 五公里), not a numeral in a
word (三亚, 七夕, 周五, 千万别).

English questions are read for "when" only (when…, what or which day, date, month, year), answered
by a time said in English (yesterday, last week, two weeks ago, Saturday, in May, 2022): on LoCoMo
it lifts more questions to first than it drops. "How many / how much / how long" answered by numbers
and number words lifted no LoCoMo question to first and cost MRR (docs/benchmarks.md, "Questions
that ask for a number or a time"), so English amounts and lengths are not read.
"""

from __future__ import annotations

import re

from .. import lunar
from . import cjk

# Kinds of answer a question asks for.
LENGTH = "length of time"
AMOUNT = "amount"
MOMENT = "moment"
# An English question is answered in English, and its messages are read for English time words only:
# a Chinese message's bare 2023 is no year, which 2023年 is.
MOMENT_EN = "moment, in English"

# A unit of time after a number (``UNIT_OF_TIME``, a regex): 两个礼拜 is as long as 两个星期.
_UNITS_BUT_MONTH = "小时|钟头|分钟|天|周|星期|礼拜|年"
UNIT_OF_TIME = rf"\s*个?(?:{_UNITS_BUT_MONTH}|月)"
# 几 asks "how many" except in 那几 / 这几 / 好几 ("those few", "several") and 几乎 ("almost").
_HOW_MANY = r"(?<![那这好])几(?!乎)"
_ASKS = re.compile(r"多少|多大|多远|多久|多长|多高|多重|多贵|多深|" + _HOW_MANY)
_ASKS_LENGTH = re.compile(r"多久|多长时间|" + _HOW_MANY + UNIT_OF_TIME)
# Asked before the rest: 几月 and 几号 ask which month and day, not how many.
_ASKS_MOMENT = re.compile(r"什么时候|何时|哪天|哪一天|哪年|哪一年|哪个月|几月|几号")
# A number: digits (NFKC-folded) or Chinese numerals; the run a numeral starts is the number.
NUMERALS = "零〇一二三四五六七八九十百千万亿两"
# Either, as the inside of a character class ([{NUMBER_CHARS}], [{NUMBER_CHARS}几]).
NUMBER_CHARS = rf"\d{NUMERALS}"
_PLACE = "十百千万亿"
# Chinese numerals spell words as often as numbers (三亚, 四川, 七夕, 五花肉, 二手, 百度, 万达, 周五), and
# each read as a number said would earn the answer credit and pass the number-or-time gate. Digits
# are always a number; a Chinese one is said as one: numerals with a place (二十, 三百五, 两千, 一百,
# 十几), a decimal (七点一, 五点二), or numerals before a measure word or a unit (三个人,
# 两晚, 打八折, 五公里, 十来个) or after 第 or 分之 (第三, 百分之五). 一 alone is mostly no number
# (一起, 一下, 一直), nor is 百, 千, 万 or 亿 alone (百度, 千岛湖, 万达).
_NUMBER = re.compile(rf"[{NUMBER_CHARS}][{NUMBER_CHARS}.几点]*")
# The measure words and units a number is said with in chat, but those that make words with a
# numeral more often than counts: 下 (周五下午), 里 (三里屯), 级 (英语六级), 面 (二面, an interview
# round), 手 (二手), 轮 (三轮车), 行 (周六行不); and 号 and 点, as 六号 and 三点 name a day and an hour,
# moments, not amounts. 晚 and 夜 are nights, not in 周五晚上 or 三夜里.
_MEASURE = re.compile(
    r"\s*[多来余几]?(?:个|块|元|毛|角|分|次|回|遍|趟|顿|人|位|名|口(?!子)|只|条|件|张|本|台|辆|套|间|家|颗|粒"
    r"|根|支|把|片|杯|碗|瓶|盒|包|袋|箱|桶|份|双|对|副|串|束|朵|棵|盘|桌|道|项|款|种|样|类|门|节|课|场|部|集"
    r"|首|篇|页|章|针|批|组|届|等奖|层|楼|岁|室|厅|居|房|圈|步|站|局|座|所|栋|斤|两|克|公斤|千克|吨|毫克|毫升"
    r"|升|公里|千米|米|厘米|毫米|寸|尺|度|平|亩|卡|倍|成|折|%|晚(?!上)|夜(?![里晚])|宿)")
_ORDINAL = ("第", "分之")
# A number that names a day (五号, 12日) or a time on the clock (9:30) tells when, not how much.
# The clock's minutes are two digits: a score (3:2) and a ratio (1:1, 16:9) are amounts.
_DAY_AFTER = re.compile(r"\s*[号日]")
_CLOCK = re.compile(r"\d[:：][0-5]\d(?!\d)")
_NO_PLACE = ("一", "百", "千", "万", "亿")
# Words a run of numerals spells that say no number, each too common in chat to leave to the rule
# above: 千万 "by all means" (千万别), 万一 "in case", 一五一十 "in full", and 十分 "very" before a word
# (十分感谢; 十分钟 and 两小时十分 are minutes). 双十一 and 双十二 are shopping days.
_NO_NUMBER = frozenset(("千万", "万一", "一五一十"))
_VERY = re.compile(rf"分(?!钟)[{cjk.HAN}]")
# A number (its run read whole, with 点, 半 and 几) and a unit of time after it; none of the run's
# characters starts a unit, so the run that matches is the whole run.
_NUMBER_OF_UNITS = re.compile(rf"[{NUMBER_CHARS}.点半几]*{UNIT_OF_TIME}")
# A length of time is a number of units of time, and the words a numeral makes with one are not:
# a month is counted with 个 (三个月; 三月 is March, 十一月 November), and 周一, 星期三, 第二天 and
# 2023年 name a day or a year. (二年级, a school year, is left a length: 几年级 asks for one.) The
# number's last character comes first, which the regex engine scans for fast (a lookbehind or an
# alternation first is four times slower), and what stands before it is looked at from there.
_LENGTH_OF_TIME = re.compile(
    rf"[{NUMBER_CHARS}半几](?<![周拜第].)(?<!星期.)(?<!\d{{4}})\s*个?(?:{_UNITS_BUT_MONTH}|(?<=[个半])月)")
_A_MOMENT = re.compile(
    r"昨天|前天|今天|上周|上个?星期|上个?礼拜|上个月|去年|前年|周末|星期[一二三四五六日天]|周[一二三四五六日]"
    rf"|[{NUMBER_CHARS}]+月|\d{{4}}年|[{NUMBER_CHARS}]+[号日]|[{NUMBER_CHARS}几]+(?:天|周|星期|个月|年)前")
_A_LUNAR_DAY = re.compile(lunar.SAID)
# 春节 names the whole New Year holiday and the trips home around it: the message that plans one
# says 春节 without saying when (春节回长沙的机票一般提前多久买), and the zh-sms and zh-chat sets lost
# their right sessions to such plans where 春节 counted as a time told. So are the days of the solar
# year but 清明 (元旦干嘛了, 元旦让你去我家吃饭, 圣诞前聚一个): counted as times told, they lifted such
# greetings and plans over a zh-sms answer (小白结婚是几号) and a zh-fresh one.
_NOT_WHEN = frozenset(("春节", *(name for name in lunar.SOLAR_FESTIVALS if name != "清明")))

# English asks for a moment by "when" leading the question (not "what did she do when…") or by
# what / which day, date, month or year.
_ASKS_MOMENT_EN = re.compile(r"^\W*when\b|\b(?:what|which)\s+(?:day|date|month|year)\b", re.IGNORECASE)
# Texts are read case-folded, so "May" the month is "may" the verb: it and "march" count only with a
# day or year beside them or after a word that places them (in May, last March, May 5, 3 March).
_MONTHS = ("january", "february", "april", "june", "july", "august", "september", "october", "november",
           "december")
_MONTH = "|".join(_MONTHS)
_MAY = (r"(?:in|last|next|early|late|mid|since|until|of)[\s-]+(?:may|march)"
        r"|(?:may|march)\s+\d|\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:may|march)")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY = "|".join(_WEEKDAYS)
_AGO = (r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|few|couple\s+of)"
        r"\s+(?:days?|weeks?|months?|years?)\s+ago")
# A moment said: yesterday, last week, a weekday, a month, a year, or a time ago.
_A_MOMENT_EN = re.compile(
    rf"\b(?:yesterday|today|tonight|last\s+(?:night|week|weekend|month|year)|{_WEEKDAY}|{_MONTH}|{_MAY}"
    rf"|(?:19|20)\d\d|{_AGO})\b")
# Only a text of at most this many characters is read for an answer: a longer one says some number or
# time by chance (the longest of LoCoMo-zh and zh-daily has 208), and a hundred of 4,000 characters
# take ~10 ms to scan.
ANSWER_CHARS = 400
# Every moment said holds one of these words, one for each way of saying it above: the regex tries
# each of its ways at every word, ~25 µs for a message of 400 characters, and most messages hold none
# of the words, which substring searches find in less than half of that.
_IN_EVERY_MOMENT_EN = ("yesterday", "today", "tonight", "last", *_WEEKDAYS, *_MONTHS, "may", "march", "19", "20", "ago")


def asked(question: str) -> str | None:
    """The kind of answer ``question`` asks for (``MOMENT``, ``MOMENT_EN``, ``LENGTH``, ``AMOUNT``), or None."""
    question = question or ""
    if _ASKS_MOMENT.search(question):
        return MOMENT
    if _ASKS_MOMENT_EN.search(question):
        return MOMENT_EN
    if not _ASKS.search(question):
        return None
    return LENGTH if _ASKS_LENGTH.search(question) else AMOUNT


def answers(text: str | None, kind: str) -> bool | None:
    """Whether ``text`` (normalised, as ``textindex.normalise`` folds it) says an answer of ``kind``;
    None when it is not read for one: not read at all (None), or longer than ``ANSWER_CHARS``.

    The length is that of the normalised text, the text every reader of an answer holds (the keyword
    ranking keeps no other): folding changes a length only for a rare character (ß, ﬁ, ㎏), so at
    the edge a message may be read that its raw length would not, and none of the benchmarks' does."""
    return says(text, kind) if readable(text) else None


def readable(text: str | None) -> bool:
    """Whether ``text`` (normalised) is read for an answer: one longer than ``ANSWER_CHARS`` says,
    asks and tells something by chance (see ``answers``)."""
    return text is not None and len(text) <= ANSWER_CHARS


def says(text: str | None, kind: str) -> bool:
    """Whether ``text`` says an answer of ``kind``."""
    if not text:
        return False
    if kind == MOMENT:
        return bool(_A_MOMENT.search(text)) or (any(map(text.__contains__, lunar.IN_EVERY_SAID))
                                                and any(m["f"] not in _NOT_WHEN for m in _A_LUNAR_DAY.finditer(text)))
    if kind == MOMENT_EN:
        return any(map(text.__contains__, _IN_EVERY_MOMENT_EN)) and bool(_A_MOMENT_EN.search(text))
    if kind == LENGTH:
        return bool(_LENGTH_OF_TIME.search(text))
    # Scanned from the numerals, rarer than the characters around them (a message of Chinese text
    # is read at ~25 ns a character, so ``answers`` reads short ones only: ``ANSWER_CHARS``).
    return any(_a_number(text, m.start(), m.group().rstrip("点.")) and _no_length_of_time(text, m.start())
               and not _a_day_or_hour(text, m) for m in _NUMBER.finditer(text))


def _a_number(text: str, start: int, run: str) -> bool:
    """Whether ``run``, digits or Chinese numerals at ``start`` in ``text``, is said as a number."""
    if run in _NO_PLACE:
        return False
    if run[0].isdigit() or run[-1].isdigit():
        return True
    end = start + len(run)
    if run in _NO_NUMBER or text.endswith("双", 0, start) or (run == "十" and _VERY.match(text, end)):
        return False
    if len(run) > 1 and any(c in _PLACE or c == "点" for c in run):
        return True
    if not run.strip("一"):
        return False
    return bool(_MEASURE.match(text, end) or text.endswith(_ORDINAL, 0, start))


def _a_day_or_hour(text: str, number: re.Match) -> bool:
    """Whether ``number`` (a ``_NUMBER`` match in ``text``) names a day or an hour, not an amount:
    五号, 12日, 三点 and 三点半 (a run that ends in 点), 9:30 (either side of the colon)."""
    start, end = number.span()
    return (number.group().endswith("点") or _DAY_AFTER.match(text, end) is not None
            or _CLOCK.match(text, end - 1) is not None or _CLOCK.match(text, max(0, start - 2)) is not None)


def _no_length_of_time(text: str, at: int) -> bool:
    """Whether the number that goes on from ``at`` in ``text`` has no unit of time after it."""
    return not _NUMBER_OF_UNITS.match(text, at)
