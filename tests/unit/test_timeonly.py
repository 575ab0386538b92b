"""Which questions name only a time: a time ``timewords`` reads, and nothing the keyword side would
look for once that time's own words are set aside."""

from __future__ import annotations

from datetime import datetime

import pytest

from project_history_recall import timeonly, timewords

ASKED = datetime(2026, 6, 24, 12).timestamp()


def _only(question: str) -> bool:
    return timeonly.asks_only(question, timewords.find(question, ASKED))


@pytest.mark.parametrize("question", [
    "yesterday", "last week", "last week?", "What did we do yesterday?", "what did we do on 2026-06-20?",
    "the week before last", "上周", "上上周", "昨天做了什么", "上周我们做了什么？", "上个月", "今天", '"yesterday"',
    # Asking what went on then, of no matter.
    "what did we work on last week?", "what were we working on yesterday?", "what happened in June 2026?",
    "what did we talk about yesterday?", "What did we discuss last week?", "前天干了啥", "上周忙了些什么",
    "昨天聊了什么", "昨天发生了什么",
    # Asking for the sessions or what was said or done then: 干嘛 is how 干啥 is most often said.
    "昨天干嘛了", "上周都做了哪些事", "上周做了哪些工作", "上周的对话", "show me yesterday's sessions",
    "list last week's conversations", "what did I ask you yesterday?",
    # Asking for a summary or review of then.
    "summarize yesterday", "Summarise last week", "recap last week", "review yesterday", "an overview of last week",
    "summary of yesterday", "summarize yesterday's sessions", "总结一下昨天", "回顾上周", "概括一下上周", "汇总昨天",
    # "earlier today" is a time, not "earlier" to look for; the sessions named right after a time.
    "what did I do earlier today", "earlier this morning", "昨天的会话", "上周的对话", "前天的聊天", "昨天的会话有哪些",
    "上周的聊天记录", "昨天会话",
    # A day of the week; asking to be told, briefed or caught up on then; what went on or got done then.
    "what did I work on on Monday?", "周三聊了什么", "上周五做了什么", "tell me about yesterday",
    "give me an overview of last week", "catch me up on last week", "brief me on yesterday",
    "what went on last week", "昨天的进展", "上周有什么进展"])
def test_a_time_with_stop_words_alone_is_only_a_time(question):
    assert _only(question)


@pytest.mark.parametrize("question", [
    # Words to look for beside the time: ranked as ever, the time lifting its hits.
    "what did we decide last week about the cache?", "昨天的bug", "what did we work on in the parser last week?",
    "what happened to the cache in June 2026?", "前天干了啥活动", "what did we talk about with Anna yesterday?",
    "summarize the cache decision from yesterday", "review the PR from last week", "总结一下昨天的缓存问题",
    "昨天的会话里说的缓存", "昨天的会话题目", "what did we fix earlier today in the parser?",
    # No time: stop words alone are looked for by themselves.
    "what did we do?", "做了什么", "recently", "最近做了什么",
    # A year too long for a time names none.
    "12026年6月",
])
def test_anything_else_to_look_for_or_no_time_is_not(question):
    assert not _only(question)


def test_the_note_names_the_time_and_says_whether_any_session_was_then():
    windows = timewords.find("上周做了什么", ASKED)
    assert "“上周”" in timeonly.note(windows, True, False) and "newest first" in timeonly.note(windows, True, False)
    assert "no session searched has messages from then: " in timeonly.note(windows, False, False)
    assert "between since and until" in timeonly.note(windows, False, True)


def _before(question: str) -> bool:
    return timeonly.asks_only(question, timeonly.before_this(question, ASKED))


@pytest.mark.parametrize("question", [
    "what did we do last time?", "where did we leave off?", "where were we", "the previous session",
    "recap the last session", "what did we talk about in the previous conversation", "上次", "上次聊到哪了",
    "上次我们聊了什么", "上一次说到哪了", "上回做了什么", "上一个会话", "上个会话", "继续上次的"])
def test_asking_for_the_session_before_this_one_alone_lists_the_sessions_before_it(question):
    assert _before(question)
    (window,) = timeonly.before_this(question, ASKED)
    assert (window.start, window.end) == (0.0, ASKED)
    assert "asks for the last session" in timeonly.note([window], True, False)


@pytest.mark.parametrize("question", [
    "what did we do?", "what were we working on?", "what did we do recently?", "what's new", "recap", "做了什么",
    "最近做了什么", "最近在忙什么", "我们在做什么", "总结一下", "帮我总结"])
def test_a_question_of_no_matter_that_asks_what_went_on_lists_the_latest_sessions(question):
    assert _before(question)
    (window,) = timeonly.before_this(question, ASKED)
    assert window.phrase == "" and "names no matter to look for" in timeonly.note([window], True, False)


@pytest.mark.parametrize("question", [
    "the", "what", "websocket", "status",
    "上次看牙花了多少钱", "the last time we changed the cache", "what did we decide last time about retries?",
    "上上次", "这次", "one more time", "上次问你绿萝的叶子变黄 你说是什么原因"])
def test_the_session_before_this_one_beside_a_matter_or_not_asked_is_not(question):
    assert not _before(question)

