"""Whether a question asks how something turned out or what a completed act came to, and hits
re-ordered so. Pure.

"How did the interview turn out?", "which laptop did I end up buying", 后来…怎么样了, 最后…,
…的结果, 现在… ask for the latest of the sessions on a topic that comes back, where the words of
the question match its first mention as well. ``asks_for_latest`` reads that from the question;
``reweigh`` lifts the later of the best sessions by a bounded share of their own score, placed by
time within the spread of those sessions, so it decides only between sessions that match alike.
A question without such words leaves the ranking exactly as it was.

In hybrid mode a question that asks how something turned out (``asks_for_outcome``, not how it
stands now) first gives each of the best sessions' *sequel* its place (``sequels``): the first
later session among the hits that stands out as alike the session. A topic comes back as a thread
(asking the assistant about a cough, then the diagnosis; planning a purchase, then what was
bought), and the question names the topic in the words of the first session while the outcome is
told in the next one, in other words: a lift by time alone could not separate it from unrelated
later sessions (the day after, in a spread of months). A question that asks for a number or a time
(``keyword.answerkind``: 等了多长时间, 哪天, 多少钱) is a thread's question too, where the leader says no
answer of that kind and its sequel says one (首保要做啥, then 首保做完了…等了两个小时): only such a
pair is linked for it, so a leader that may answer keeps its place. So does, for a question that asks
how something turned out, a leader one of whose messages tells something done in one short act
(gbk就好了 after 读csv中文全是乱码, 对 是后面带了空格): the thread's outcome is told in it, and a later
alike session is another episode (the next time the file or the table went wrong). 了 telling how
long a state has lasted (咳嗽一周了) or letting a thing be (涨一百算了) tells nothing done.

A Chinese question asked in the perfective (``asks_what_happened``: 花了多少, 开的什么药, 那次…) asks
what a completed act came to, as one asking a figure of it does (``asks_for_a_figure``: 猫咪第一次打预防针
多少钱), so a session that only asks about it or plans it is not its answer while a later one of the
same thread, saying some word of it again, that tells it done is
(``reports``): 首保要做啥 then 首保做完了…等了两个小时, 钢琴课要不要报一个 then 钢琴试听了…一节课二百二. The
act of a message is read from its words only where it is one short act: a message of one sentence
whose asking or planning clause asks ahead (no 了 but 了吗 or 了没, "is it done yet"), or which tells
something done (了) and asks and plans nothing. A translated long chat (LoCoMo-zh) asks, plans and
tells in one message of several sentences, and reading its act there moved the wrong sessions; beside
such a message (the assistant's advice), a session still only asks when one of its one-sentence
messages asks ahead and says nothing done at all (家里人要注意什么, not 一模考了580…能上什么学校). Nor
is a session whose every message says nothing done (no 了 of a done act anywhere: a plan, a symptom,
a quote, 老孙:今天去千岛湖钓鱼 车五点半楼下等 then 千岛湖钓了一条八斤的鳙鱼) the answer to what the act came to,
however its sentences run.

Only words that ask about an outcome whatever the sentence around them says count: "last week" is a
time (``timewords``), "at last weekend" and "last name" are no outcome, and 最近 alone is recent to
the event talked about, not to the asking. Asking for the first is read in Chinese only (第一次保养,
头一回考试, 首次: ``asks_for_first``), where it picks the first of a kind's occasions, and lifts the
earlier of the best sessions as the latest are lifted otherwise; in English ("when did Caroline
first…") LoCoMo's such questions name when an event happened, often told in a later session, and
lifting the earlier sessions lost there.
"""

from __future__ import annotations

import functools
import math
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Collection, Mapping

from .hits import Hit, lifted
from .keyword import answerkind, cjk
from .sessions import leading

if TYPE_CHECKING:
    import numpy as np

# The best sessions whose times set the spread a hit is placed in.
TOP_SESSIONS = 10
# The best sessions whose sequel takes their place (``sequels``)...
SEQUEL_LEADS = 3
# ...the sequel standing this many standard deviations above the leader's mean likeness to the
# sessions of the hits. A bar relative to the question's own hits, as ``fusion.BACKING_Z`` is: the
# cosines of a thread's two messages (a symptom and its diagnosis, a plan and the purchase) are
# no paraphrase's, and where every session is alike (long answers restating the same advice) none
# stands out. Chosen on the zh-daily tune halves: 1.5 linked other people's sessions, 2.5 found
# too few threads; a fixed cosine (0.5) lost en-daily's held-out "end up" questions.
SEQUEL_Z = 2.0
# A sequel is placed this share of the gap between them past its leader (0.05-1 did the same).
SEQUEL_PAST = 0.2
# A report (``reports``) is among this many best sessions: the sessions of a thread are alike, so
# its report is near the top already (chosen before any run; 3 and 10 did the same on the tune halves).
REPORT_AMONG = 5
# A report further down, among this many, follows its leader instead (``behind``): in a long history
# (one project for every topic) a thread's report can rank below the fifth, and taking the leader's
# place from there lost first places on the tune halves, while right behind it the question's thread
# and its outcome are seen together and the first place stays (20 did as 10, a little worse in MRR).
# Such a report says at least this many of the leader's words (``_words``): one alone (物理, 手术, 乐乐,
# 合同) is a topic a long history comes back to in other threads, and on the tune halves every report
# that far down saying only one was another thread's, pushing the answer down a place.
REPORT_BEHIND = 10
REPORT_BEHIND_WORDS = 2

# A Chinese question in the perfective: 了 after a verb (not 为了 "in order to", 除了 "besides", not
# 了吗 "has it yet"), 那次 "that time", V下来 / V出来 "came to", or a past act's 的 asked about (住的哪家,
# 开的什么药)...
_PERFECTIVE = re.compile(rf"(?<![为除])(?<=[{cjk.HAN}])了(?!吗)|那次|那回|下来|出来|(?<=[{cjk.HAN}])的(?:哪|什么|啥|多少|几)")
# ...and not about the asking or the plan itself (问过什么, 推荐了哪家, 打算, 约在哪天: the arrangement, 约, is
# the plan; not 大约 "about", nor a contract or a saving: 续约, 签约, 合约, 节约, 约束). 过 is not read: it
# asks what ever happened (去过哪些城市), over many sessions.
_ABOUT_ASKING = re.compile(r"问|建议|推荐|打算|计划|准备|想|(?<![大续签解违合契条节公婚毁履租制])约(?!束)")
# The kinds of answer a Chinese question asks for (``answerkind``; its English "when" is not read here).
_FIGURES = (answerkind.AMOUNT, answerkind.LENGTH, answerkind.MOMENT)
# A clause that asks (吗, ？, 要不要, 啥, 多少, 靠谱不, 去不去, 哭了没) or plans (准备, 下周, 周五)...
_ASKS = re.compile(r"[吗？?]|要不要|啥|什么|多少|多久|几|哪|怎么|推荐|合适|划算|靠谱|(\w)[不没]\1|\S[不没](?:\s|$)")
_PLANS = re.compile(r"准备|打算|想|约了|下周|明年|明天|下个?月|周[一二三四五六日末]|礼拜|星期")
# ...a clause that tells something done; 了吗 / 了没 ask whether it is.
_DONE = re.compile(r"了")
_WHETHER = re.compile(r"了(?=[吗没])")
# ...and 了 that tells how long a state has lasted (咳嗽一周了, 三百天了, 一个多月了: a number, or 几, 半
# or 多, and a unit of time, as ``answerkind`` reads them) or lets a thing be (涨一百算了): nothing done.
_LASTING = re.compile(rf"(?:[{answerkind.NUMBER_CHARS}几半多]+{answerkind.UNIT_OF_TIME}|算|罢)了")
# ...nor 了 of an arrangement (约了: the act is still ahead, as ``_PLANS`` reads it) or of a step another
# waits on (麻药醒了得有人扶, 干了再浇, 不疼了就停): nothing done yet. 了就好 ("done, and that is
# fine": 做了就好) still tells it.
_AHEAD = re.compile(r"(?<=约)了|了(?=[得再]|就(?!好))")
_CLAUSES = re.compile(r"[\s,，。;；!！]+")
# A sentence end with more after it: a message of several sentences is no one act.
_INNER_END = re.compile(r"[。!?！？]+(?=\s*\S)")
_HAN_RUN = re.compile(f"[{cjk.HAN}]+")
# The name a quoted message, or a line of one, begins with ("老赵:", "妈妈:"; the text read is normalised, ：
# to :): a few characters with no space or colon in them.
_QUOTED_BY = re.compile(r"^[^:\s]{1,12}:", re.MULTILINE)

# Words that ask how something turned out...
_OUTCOME = re.compile(
    r"\b(?:in\s+the\s+end|eventually|finally|at\s+last(?!\s+(?:\w+day|week|weekend|night|month|year|time)\b)"
    r"|end(?:s|ed)?\s+up|end\s+result|turn(?:s|ed)?\s+out)\b"
    r"|后来|最后|最终|结果|到底|终于|(?:怎么样|怎样|咋样|如何)了", re.IGNORECASE)
# ...and words that ask how it stands now, or for its latest mention: "current" and a bare "now"
# too, as 现在 is ("what is my current rent", "how much does she weigh now"), and "last" said of an act
# ("when did we last touch the parser?", "what did I last set the timeout to"), not of a time.
_NOW = re.compile(
    r"\b(?:latest|most\s+recent(?:ly)?|the\s+last\s+time|current(?:ly)?|now(?:adays)?|these\s+days"
    r"|at\s+the\s+moment|(?:did|do|does|have|has|had)\s+(?:\w+\s+){1,2}last(?!\s+(?:week|month|year|night|"
    r"time|name|\w+day|weekend|one|few|two|three)\b))\b"
    r"|现在|如今|目前|最近一次", re.IGNORECASE)


# Chinese words that ask for the first of the occasions of a kind (第一次保养, 头一回考试, 首次): the
# earliest of the sessions that match alike.
_FIRST = re.compile(r"第一[次回趟]|头一[次回趟]|首次")


def asks_for_first(question: str) -> bool:
    """Whether ``question`` asks in Chinese for the first of the occasions of a kind."""
    return bool(_FIRST.search(question or ""))


def asks_for_latest(question: str) -> bool:
    """Whether ``question`` asks how something turned out, or how it stands now."""
    return asks_for_outcome(question) or bool(_NOW.search(question or ""))


def asks_for_outcome(question: str) -> bool:
    """Whether ``question`` asks how something turned out (``sequels``): not how it stands now,
    which the latest mention tells ("what is Jon currently reading", 现在这群朋友), not a sequel."""
    return bool(_OUTCOME.search(question or ""))


def asks_what_happened(question: str) -> bool:
    """Whether ``question`` asks in Chinese what a completed act came to (``reports``): in the
    perfective (花了多少, 住的哪家, 那次…), and not about the asking or a plan itself (问过什么, 打算)."""
    return bool(_PERFECTIVE.search(question or "")) and not _ABOUT_ASKING.search(question or "")


def asks_for_a_figure(question: str) -> bool:
    """Whether ``question`` asks in Chinese for a number or a time (``answerkind``: 打预防针多少钱,
    哪天早上几点的), and not about the asking or a plan itself (你建议我每天摄入多少热量): a figure of
    the person's own life is what an act came to (the fee paid, the day booked) even with no aspect
    said, so its thread's report answers it as for ``asks_what_happened``."""
    return answerkind.asked(question) in _FIGURES and not _ABOUT_ASKING.search(question or "")


def _one_act(text: str) -> bool:
    """Whether ``text`` is one sentence, the only message whose act is read."""
    return not _INNER_END.search(text.strip())


def _asks_or_plans(text: str) -> bool:
    return bool(_ASKS.search(text) or _PLANS.search(text))


def _asks_ahead(text: str) -> bool:
    """Whether a clause of ``text`` asks or plans about something not yet done (首保要做啥, 找好公司了吗),
    not what a done act came to (今天你钓了几条)."""
    return any(_asks_or_plans(c) and not _DONE.search(_WHETHER.sub("", c)) for c in _CLAUSES.split(text))


def _says_done(text: str) -> bool:
    """Whether ``text`` says something done (了) anywhere, not whether it is yet (了吗), how long
    a state has lasted (咳嗽一周了), an arrangement (约了) nor a step another waits on (醒了得有人扶)."""
    return bool(_DONE.search(_AHEAD.sub("", _LASTING.sub("", _WHETHER.sub("", text)))))


def _tells_done(text: str) -> bool:
    """Whether ``text`` tells something done (首保做完了) and asks and plans nothing."""
    return _says_done(text) and not _asks_or_plans(text)


def _tells_one(text: str | None) -> bool:
    """Whether ``text`` (None: not read) is one act telling something done."""
    return text is not None and _one_act(text) and _tells_done(text)


def _only_asks_ahead(texts: list[str | None]) -> bool:
    """Whether ``texts`` (None: not read) were all read, none telling something done (``_tells_one``),
    and, each one act, one of them asking or planning ahead (``_asks_ahead``); or, beside a message of
    several sentences (the assistant's advice, whose act is not read), one that asks or plans ahead
    and says nothing done in any clause (老年人糖尿病换成打胰岛素 家里人要注意什么): the question of a thread
    the assistant answered in general, as against 一模考了580…能上什么学校, which tells its own answer."""
    read = [t for t in texts if t is not None]
    if len(read) != len(texts) or any(map(_tells_one, read)):
        return False
    if all(map(_one_act, read)):
        return any(map(_asks_ahead, read))
    return any(_one_act(t) and _asks_ahead(t) and not _says_done(t) for t in read)


def _yields_to_report(texts: list[str | None]) -> bool:
    """Whether ``texts`` (None: not read) are a leader whose report may take its place: all read,
    and either only asking or planning ahead (``_only_asks_ahead``) or saying nothing done in any
    clause of any of them (``_says_done``), so not what a done act came to, however long."""
    read = [t for t in texts if t is not None]
    return _only_asks_ahead(texts) or (len(read) == len(texts) and not any(map(_says_done, read)))


def _words(texts: list[str | None]) -> set[str]:
    """The pairs of Han characters of ``texts`` with no grammar in them (``cjk.content_chars``,
    ``cjk.is_function_word``: not 可以, 个月, 交了): the words, and the pieces of words, a thread's
    sessions say again (押一付三, 中介费; 首保, 机油; 七夕, 餐厅), whatever the dictionary would cut.
    Not the name a quoted message begins with (老赵:…, 妈妈:…): one person writes about
    every topic, and the sessions of a friend's chats would all be one thread."""
    return {pair for text in texts if text for run in _HAN_RUN.findall(_QUOTED_BY.sub("", text))
            for pair in cjk.bigrams(run) if len(cjk.content_chars(pair)) == 2 and not cjk.is_function_word(pair)}


# The times a calendar holds (years 1-9999, those the results show): only they set the spread a hit is
# placed in. A number an importer wrote far beyond (-inf, 1e308) is still a time, placed at the spread's
# end, but as one of its ends it left the spread infinite and every lift NaN.
_CALENDAR = (datetime(1, 1, 1, tzinfo=timezone.utc).timestamp(),
             datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp())


def _on_the_calendar(ts: float) -> bool:
    return bool(ts) and _CALENDAR[0] <= ts <= _CALENDAR[1]


def reweigh(hits: list[Hit], weight: float, earliest: bool = False) -> list[Hit]:
    """``hits`` (best first) re-ordered by ``score × (1 + weight × place)``, ``place`` 0..1 being how
    late the hit lies between the earliest and the latest of the first ``TOP_SESSIONS`` sessions'
    hits (how early, with ``earliest``). With weight 0, or when those sessions all lie at one time,
    the very same list; a hit without a time gains nothing; ties keep their order."""
    if weight <= 0 or not hits:
        return hits
    times = [h.timestamp for h in leading(hits, lambda h: h.session_id, TOP_SESSIONS)
             if _on_the_calendar(h.timestamp)]
    if not times or max(times) <= min(times):
        return hits
    low, spread = min(times), max(times) - min(times)

    def place(ts: float) -> float:
        late = min(max((ts - low) / spread, 0.0), 1.0)
        return (1.0 - late if earliest else late) if ts else 0.0

    return lifted(hits, lambda h: weight * place(h.timestamp))


def _enough_sessions(hits: list[Hit]) -> bool:
    """Whether ``hits`` hold a leader and at least two other sessions for a sequel or a report to
    stand out from."""
    return len({h.session_id for h in hits}) >= 3


class _Sessions:
    """The sessions of ``hits`` (best first, in order of their first hit) with each one's hit
    positions, first and last time, and how alike each two are (as their most alike hits are)."""

    def __init__(self, hits: list[Hit], likeness: Callable[[list[int]], "np.ndarray"]):
        self.hits = hits
        self.likeness = likeness
        self.groups: dict[str, list[int]] = {}
        for at, h in enumerate(hits):
            self.groups.setdefault(h.session_id, []).append(at)
        self.names = list(self.groups)
        self.starts = [min(hits[i].timestamp for i in self.groups[sid]) for sid in self.names]
        self.ends = [max(hits[i].timestamp for i in self.groups[sid]) for sid in self.names]

    @functools.cached_property
    def alike(self) -> "np.ndarray":
        """Sessions by sessions. Worked out on first use: ``reports`` reads the texts first, and most
        questions' leaders ask nothing ahead, so they need no likeness."""
        import numpy as np

        index = {sid: k for k, sid in enumerate(self.names)}
        of = np.array([index[h.session_id] for h in self.hits])
        alike = np.full((len(self.names), len(self.names)), -np.inf)
        np.maximum.at(alike, (of[:, None], of[None, :]), self.likeness([h.message_id for h in self.hits]))
        return alike

    def ids(self, k: int) -> list[int]:
        return [self.hits[i].message_id for i in self.groups[self.names[k]]]

    def bar(self, lead: int, z: float) -> float:
        """``z`` standard deviations above the leader's mean likeness to the other sessions."""
        import numpy as np

        others = np.delete(self.alike[lead], lead)
        return float(others.mean() + z * others.std())

    def later(self, lead: int, k: int) -> bool:
        return bool(self.ends[lead]) and self.starts[k] > self.ends[lead]

    def placed(self, pairs: dict[int, int]) -> list[Hit]:
        """The hits with each session ``pairs`` maps a leader to placed just past it: lifted by
        ``SEQUEL_PAST`` of the gap between their first hits; one already ahead stays."""
        lift: dict[str, float] = {}
        for lead, sequel in pairs.items():
            name = self.names[sequel]
            gap = self.hits[self.groups[self.names[lead]][0]].score - self.hits[self.groups[name][0]].score
            if gap > 0:
                lift[name] = max(lift.get(name, 0.0), gap * (1.0 + SEQUEL_PAST))
        if not lift:
            return self.hits
        moved = sorted(((h.score + lift.get(h.session_id, 0.0), n, h) for n, h in enumerate(self.hits)),
                       key=lambda entry: (-entry[0], entry[1]))
        return [Hit(h.message_id, h.session_id, score, h.source, h.timestamp) for score, _, h in moved]


def sequels(hits: list[Hit], likeness: Callable[[list[int]], "np.ndarray"], near: Collection[int],
            answered: Mapping[int, bool | None] | None = None, texts: Mapping[int, str] | None = None,
            about: Collection[str] = ()) -> list[Hit]:
    """``hits`` (best first) with the sequel of each of the first ``SEQUEL_LEADS`` sessions placed
    just past it: the earliest session whose hits all come after the leader's, one of them among
    ``near`` (messages near the question in meaning: a sequel tells what it asks), and which is alike
    the leader ``SEQUEL_Z`` standard deviations above the leader's mean likeness to the other
    sessions of ``hits``. Two sessions are as alike as their most alike hits (``likeness`` of message
    ids, a square array in that order). A sequel already ahead keeps its place, a hit without a time
    is none, and each session's hits keep their order. With ``answered`` (whether each hit's message
    read says the kind of answer the question asks for, ``keyword.answerkind``; one not read, None
    or absent, may) only a leader whose hits were all read and say none has a sequel, and only a
    session one of whose hits says one is it. With ``texts`` (message id -> normalised text, for
    those read) a leader with a hit of one act telling something done (gbk就好了) tells the outcome
    itself and keeps its place, as does a leader of ``about`` (session ids): a session the keyword
    side finds written around the question's words tells how its matter turned out itself."""
    if not _enough_sessions(hits):
        return hits
    s = _Sessions(hits, likeness)
    by_start = sorted(range(len(s.names)), key=lambda k: s.starts[k])
    told = [any(m in near for m in s.ids(k)) for k in range(len(s.names))]
    if answered is not None:
        says = [[answered.get(m) for m in s.ids(k)] for k in range(len(s.names))]
        told = [t and True in said for t, said in zip(told, says, strict=True)]
    pairs: dict[int, int] = {}
    for lead in range(min(SEQUEL_LEADS, len(s.names))):
        if answered is not None and any(said is not False for said in says[lead]):
            continue
        if texts is not None and any(_tells_one(texts.get(m)) for m in s.ids(lead)):
            continue
        if s.names[lead] in about:
            continue
        bar = s.bar(lead, SEQUEL_Z)
        sequel = next((k for k in by_start if s.later(lead, k) and s.alike[lead, k] >= bar and told[k]), None)
        if sequel is not None:
            pairs[lead] = sequel
    return s.placed(pairs)


def reports(hits: list[Hit], likeness: Callable[[list[int]], "np.ndarray"], texts: Mapping[int, str]
            ) -> tuple[list[Hit], dict[str, str]]:
    """(``hits`` (best first) with the report of each of the first ``SEQUEL_LEADS`` sessions that
    only asks about its act or plans it placed just past it, for a question ``asks_what_happened``;
    the leaders, by session id, whose report was found only further down, among the first
    ``REPORT_BEHIND``, each with that report's session id, to follow it: ``behind``).
    Such a leader's hits were all read (``texts``: message id -> normalised text, for those read),
    and either each is one act, one of them asks ahead and none tells something done, or none says
    anything done at all (``_yields_to_report``); its report is the
    earliest later session among the first ``REPORT_AMONG`` with a hit of one act telling something
    done, alike the leader above the leader's mean likeness to the other sessions, and saying a word
    of the leader's (``_words``): the same thread, though a plan and its report are less alike than
    the topic's near-duplicates, which the bar of ``sequels`` asks. The likeness alone let another
    topic told done through (花呗分12期…实际年化多少, answered in its session, gave its place to 七夕去了
    那家意大利餐厅 两个人花了一千二)."""
    if not _enough_sessions(hits):
        return hits, {}
    s = _Sessions(hits, likeness)
    said = [[texts.get(m) for m in s.ids(k)] for k in range(len(s.names))]
    leads = [lead for lead in range(min(SEQUEL_LEADS, len(s.names))) if _yields_to_report(said[lead])]
    if not leads:
        return hits, {}
    among = range(min(max(REPORT_AMONG, REPORT_BEHIND), len(s.names)))
    tells = [any(map(_tells_one, said[k])) for k in among]
    words = functools.cache(lambda k: _words(said[k]))
    pairs: dict[int, int] = {}
    follow: dict[str, str] = {}
    for lead in leads:
        bar = s.bar(lead, 0.0)
        # The earliest report among the first REPORT_AMONG, else the earliest further down.
        found = sorted((k for k in among if s.later(lead, k) and s.alike[lead, k] >= bar and tells[k]
                        and len(words(lead) & words(k)) >= (1 if k < REPORT_AMONG else REPORT_BEHIND_WORDS)),
                       key=lambda k: (k >= REPORT_AMONG, s.starts[k]))
        if found and found[0] < REPORT_AMONG:
            pairs[lead] = found[0]
        elif found:
            follow[s.names[lead]] = s.names[found[0]]
    return s.placed(pairs), follow


def behind(hits: list[Hit], follow: Mapping[str, str]) -> list[Hit]:
    """``hits`` (best first) with the session ``follow`` maps each leader's session to placed right
    behind the leader, wherever the leader stands: its hits lifted alike, the first to just under the
    leader's first score (a tie would let a later sort put it ahead). One already ahead of its leader
    stays, as does one that follows two leaders behind the first. Applied after every other lift, so
    that no sequel is sought for it as though it led; ties keep their order."""
    first: dict[str, Hit] = {}
    for h in hits:
        first.setdefault(h.session_id, h)
    lift: dict[str, tuple[float, float]] = {}
    for leader, report in sorted(follow.items(), key=lambda pair: -first[pair[0]].score if pair[0] in first else 0.0):
        if leader not in first or report not in first or report in lift:
            continue
        cap = math.nextafter(first[leader].score, -math.inf)
        if first[report].score < cap:
            lift[report] = (cap - first[report].score, cap)
    if not lift:
        return hits
    none = (0.0, math.inf)
    moved = sorted(((min(h.score + lift.get(h.session_id, none)[0], lift.get(h.session_id, none)[1]), n, h)
                    for n, h in enumerate(hits)), key=lambda entry: (-entry[0], entry[1]))
    return [Hit(h.message_id, h.session_id, score, h.source, h.timestamp) for score, _, h in moved]
