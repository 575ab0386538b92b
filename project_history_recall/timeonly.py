"""A question that names a time and nothing else to look for ("what did we do yesterday?", "last
week", 上周, 昨天做了什么): its answer is the sessions from then, newest first.

Neither engine can answer one. The keyword side has only the time's own words to look for, and a
message seldom says "yesterday" of the day it was written; the semantic side has a question about
no matter at all. What such a question asks is which sessions were then, so it is answered by
their times alone, in every mode. A question with anything else to look for ("what did we decide
about the cache last week?") is ranked as ever, the time lifting the hits from then
(``timewords.reweigh``).

Whether there is anything else is the keyword side's own reading of the question (``querytext``)
once the phrases the time words were read from are set aside: what is left is stop words or
nothing.

So is a question that asks for the session before this one and nothing else ("what did we do last
time?", "where did we leave off?", 上次聊到哪了, 上一个会话): its answer is the sessions before the
asking, newest first (``before_this``). It is no time for ``timewords``: beside a matter (上次看牙花了多少钱,
"the last time we changed the cache") it picks that matter's latest occasion among the sessions that
match, which a window over all the past would not do.
"""

from __future__ import annotations

import re
from typing import Sequence

from . import sessions, timewords
from .context import SearchContext
from .hermes import automated, messages
from .hits import TIME, Hit
from .keyword.querytext import Term, clean_text, terms_besides

# Words that, beside a time and nothing else, ask what went on then, or for the sessions or what was
# said then, not for a matter: "what did we work on last week?", "what happened yesterday?", "show me
# yesterday's sessions", "summarize yesterday", "recap last week", "catch me up on last week", "give
# me an overview of last week", 上周忙了些什么, 前天干了啥, 昨天干嘛了, 上周做了哪些事, 总结一下昨天, 回顾上周,
# 昨天的进展. Said of no matter, they would rank the sessions that happen to use the word; the
# sessions from then are the answer. (English words by their stem, as ``querytext`` gives it:
# summariz(e), summaris(e), summar(y).)
WHAT_WENT_ON = frozenset({
    "work", "happen", "talk", "discuss", "chat", "busy", "do", "go", "ask", "show", "list", "session",
    "conversation", "summariz", "summaris", "summar", "recap", "review", "overview", "give", "tell", "catch",
    "brief", "went",
    "做", "干", "干嘛", "忙", "聊", "搞", "弄", "发生", "聊天", "讨论", "进行", "事", "工作", "对话", "会话", "进展",
    "聊到", "说到", "继续", "帮",
    "总结", "回顾", "概括", "汇总",
})
# Words that ask how recent, of no matter: "what did we do recently?", "what's new", 最近做了什么. Not read
# as a time (``timewords``: beside a matter they are recent to the event talked about), but a question
# of them and what went on alone asks for the latest sessions.
_RECENT = frozenset({"recent", "late", "new", "最近", "近期", "最新"})
# The sessions of a time named right after it (昨天的会话, 上周的聊天记录): set aside whole, because
# the words are cut apart there (昨天的会话 into 昨天 / 的 / 会 / 话, 聊天记录 into 聊天 / 记录), and
# 话 or 记录 alone is no asking what went on.
_SESSIONS_AFTER = r"\s*的?\s*(?:会话|对话|聊天记录|聊天)"
# The session before this one: "last time", "the previous session", "where did we leave off", 上次, 上一回,
# 上一个会话 (not 上上次, the one before that).
_BEFORE_THIS = re.compile(
    r"\b(?:last|previous|prior)\s+(?:time|session|conversation|chat)\b|\bwhere\s+(?:did\s+)?we\s+(?:leave|left)\s+off\b"
    r"|\bwhere\s+were\s+we\b|(?<!上)上一?(?:个\s*)?(?:次|回|会话|对话)", re.IGNORECASE)


def asks_only(question: str, windows: Sequence[timewords.Window]) -> bool:
    """Whether ``question`` names a time (``windows``, what ``timewords.find`` read in it) and holds
    nothing else to look for besides stop words and words asking what went on then."""
    times = [w.phrase for w in windows if w.phrase]
    # Each time with the sessions named after it first, so that the time alone does not split them off.
    named = [m[0] for phrase in times for m in re.finditer(re.escape(phrase) + _SESSIONS_AFTER, clean_text(question))]
    return bool(windows) and all(_asks_what_went_on(t) for t in terms_besides(question, [*named, *times]))


def before_this(question: str, asked: float) -> list[timewords.Window]:
    """The time before ``asked`` when ``question`` asks for the session before this one, as a window
    named by the words that ask it (``asks_only`` sets them aside), or when it names no matter at all
    but asks what went on ("what were we working on?", 最近在忙什么, "recap"), as a window named by
    nothing; else none. A question of stop words alone ("the") is neither: it is looked for as typed."""
    found = _BEFORE_THIS.search(question or "")
    if found:
        return [timewords.Window(0.0, asked, timewords.EXACT, found[0])]
    if (all(_asks_what_went_on(t) for t in terms_besides(question, ()))
            and any(_asks_what_went_on(t) for t in terms_besides(question, (), keep_stop=True))):
        return [timewords.Window(0.0, asked, timewords.EXACT, "")]
    return []


def _asks_what_went_on(term: Term) -> bool:
    return (term.stem or term.text) in WHAT_WENT_ON or term.text in _RECENT or term.stem in _RECENT


def sessions_from_then(ctx: SearchContext, windows: Sequence[timewords.Window], limit: int
                       ) -> list[sessions.Group[Hit]]:
    """The scope's ``limit`` sessions with a message inside one of ``windows`` that the request's
    filters let through (roles, since, until), the one with the latest such message first. Each is
    shown by its first message from then, the user's where it has one: what the user set out to
    do then says what the session was about, where a later message or the assistant's answer is
    one step of it. The hit's score is that message's time. The sessions a schedule ran come after
    the user's own (``automated``): "what did we do last time?" asks for the user's last session,
    not the job's last run."""
    spans = [(w.start, w.end) for w in windows]
    late = automated.among(ctx.conn, ctx.scope.session_ids)
    users = [sid for sid in ctx.scope.session_ids if sid not in late]
    found = messages.from_then(ctx.conn, ctx.shape, users, ctx.filters, spans, limit)
    if late and len(found) < limit:
        found += messages.from_then(ctx.conn, ctx.shape, sorted(late), ctx.filters, spans, limit - len(found))
    return [sessions.Group(session_id, [Hit(message_id, session_id, at, TIME, at)])
            for message_id, session_id, at in found]


def note(windows: Sequence[timewords.Window], found: bool, bounded: bool) -> str:
    """The response's warning: why these sessions, in this order, or why none (``bounded``: the
    request gave since or until)."""
    named = ", ".join(dict.fromkeys(f"“{w.phrase}”" for w in windows if w.phrase))
    if not named:  # before_this, of no matter
        return ("the question names no matter to look for, only what went on, so these are the latest sessions, "
                "newest first, each shown by its first message (the user's where there is one); add what it was "
                "about to rank by that instead." if found else
                f"the question names no matter to look for, and no session was searched"
                f"{' between since and until' if bounded else ''}: nothing to show.")
    if all(w.start <= 0 for w in windows):  # before_this
        # "this one" means nothing from the command line, where no session asks: "the last one" reads for both.
        return (f"the question asks for the last session ({named}) and nothing else to look for, so "
                "these are the latest sessions, newest first, each shown by its first message (the user's where "
                "there is one); add what it was about to rank by that instead." if found else
                f"the question asks for the last session ({named}), and no session searched is "
                f"older{' between since and until' if bounded else ''}: nothing to show.")
    if found:
        return (f"the question names only a time ({named}) and nothing else to look for, so these are the "
                "sessions with messages from then, newest first, each shown by its first message from then "
                "(the user's where there is one); add what it was about to rank by that instead.")
    return (f"the question names only a time ({named}) and nothing else to look for, and no session searched "
            f"has messages from then{' between since and until' if bounded else ''}: nothing to show.")
