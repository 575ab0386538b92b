"""A question that names only a time ("what did we do yesterday?", 上周, 昨天做了什么) finds the
sessions from then, newest first, in every mode, through Hermes's real dispatch.

Asked from a session of Wednesday 24 June 2026 (its clock set back for the writes that date it),
"yesterday" is 23 June and "last week" 15-21 June. Neither engine had anything to look for in such
a question: the keyword side looked for "yesterday", which no message says of its own day, and the
question found nothing.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from hermes_world import call, enable_plugin, plugin_settings, write_as_importer

SEARCH = "project_history_search"
MODES = ("keyword", "hybrid", "semantic")
ASKED = datetime(2026, 6, 24, 12).timestamp()


def _at(world, when: tuple[int, ...], cwd, *said: tuple[str, str]) -> str:
    world._clock = datetime(*when).timestamp()  # World stamps each message 30 s after the last
    return world.session(*said, cwd=cwd)


@pytest.fixture
def history(world, work, monkeypatch):
    import hermes_state

    world.project("App", work)
    sessions = {
        "week before last": _at(world, (2026, 6, 10, 15), work, ("user", "rename the billing tables"),
                                ("assistant", "renamed them")),
        # Last week: the answer first, then the user's question, so the user's is the one shown.
        "last week": _at(world, (2026, 6, 16, 10), work, ("assistant", "the proxy is up again"),
                         ("user", "why did the proxy drop connections?")),
        "late last week": _at(world, (2026, 6, 19, 9), work, ("user", "set up the nightly backup job"),
                              ("assistant", "the nightly backup job runs at two")),
        "yesterday": _at(world, (2026, 6, 23, 10), work, ("user", "upgrade the websocket library"),
                         ("assistant", "upgraded it; reconnects are faster")),
        "late yesterday": _at(world, (2026, 6, 23, 17), work, ("user", "the nightly backup job failed"),
                              ("assistant", "the disk was full; cleared it")),
        "today": _at(world, (2026, 6, 24, 9), work, ("user", "write the release notes")),
    }
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: ASKED)
        asker = world.session(cwd=work)
    enable_plugin(world.home)
    return sessions, asker


def _ask(asker: str, query: str, mode: str, **extra) -> dict:
    res = call(SEARCH, {"query": query, "mode": mode, **extra}, session_id=asker)
    assert res["success"], res
    return res


def _names(sessions: dict, res: dict) -> list[str]:
    by_id = {sid: name for name, sid in sessions.items()}
    return [by_id.get(r["session_id"], r["session_id"]) for r in res["results"]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("query", "expected"), [
    ("what did we do yesterday?", ["late yesterday", "yesterday"]),
    ("yesterday", ["late yesterday", "yesterday"]),
    ("昨天做了什么", ["late yesterday", "yesterday"]),
    ("last week", ["late last week", "last week"]),
    ("What did we do last week?", ["late last week", "last week"]),
    ("上周", ["late last week", "last week"]),
    ("上周我们做了什么？", ["late last week", "last week"]),
    # Asking what went on then, of no matter.
    ("what did we work on yesterday?", ["late yesterday", "yesterday"]),
    ("what happened last week?", ["late last week", "last week"]),
    ("昨天聊了什么", ["late yesterday", "yesterday"]),
    ("上周忙了些什么", ["late last week", "last week"]),
    # Asking for a summary of then, or for its sessions.
    ("summarize yesterday", ["late yesterday", "yesterday"]),
    ("recap last week", ["late last week", "last week"]),
    ("what did I do earlier today", ["today"]),
    ("总结一下昨天", ["late yesterday", "yesterday"]),
    ("回顾上周", ["late last week", "last week"]),
    ("昨天的会话", ["late yesterday", "yesterday"]),
])
def test_a_time_alone_finds_the_sessions_from_then_newest_first(history, mode, query, expected):
    sessions, asker = history
    res = _ask(asker, query, mode)
    assert _names(sessions, res) == expected
    assert res["searched_with"] == "time" and res["outcome"] == "found"
    assert any("names only a time" in w and "newest first" in w for w in res["warnings"]), res
    for result in res["results"]:
        # Each shown by its first message from then, the user's, with the usual link and window.
        assert result["role"] == "user" and result["score_source"] == "time"
        assert result["link"].endswith("/" + result["session_id"])
        assert [m["message_id"] for m in result["context"] if m.get("hit")] == [result["message_id"]]
        assert ">>>" not in result["snippet"]
    last_week = res["results"][-1] if expected[-1] == "last week" else None
    if last_week is not None:
        assert last_week["snippet"] == "why did the proxy drop connections?"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["what did we do last time?", "where did we leave off?", "上次聊到哪了",
                                   "上一个会话", "what were we working on?", "最近在忙什么", "recap"])
def test_asking_for_the_session_before_this_one_finds_the_latest_sessions(history, mode, query):
    """Neither engine has anything to look for in it: the answer is the sessions before the asking one."""
    sessions, asker = history
    res = _ask(asker, query, mode, limit=2)
    assert _names(sessions, res) == ["today", "late yesterday"]
    assert res["searched_with"] == "time" and res["results"][0]["snippet"] == "write the release notes"
    assert any("asks for the last session" in w or "names no matter to look for" in w for w in res["warnings"]), res
    assert _names(sessions, _ask(asker, query, mode, until="2026-06-20", limit=1)) == ["late last week"]


@pytest.mark.parametrize("mode", MODES)
def test_since_and_until_still_bound_a_time_alone(history, mode):
    sessions, asker = history
    assert _names(sessions, _ask(asker, "上周", mode, since="2026-06-18")) == ["late last week"]
    assert _names(sessions, _ask(asker, "last week", mode, until="2026-06-18")) == ["last week"]
    res = _ask(asker, "what did we do yesterday?", mode, since="2026-06-23 12:00", limit=5)
    assert _names(sessions, res) == ["late yesterday"]


@pytest.mark.parametrize("mode", MODES)
def test_limit_counts_the_sessions_from_then(history, mode):
    sessions, asker = history
    assert _names(sessions, _ask(asker, "上周", mode, limit=1)) == ["late last week"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["what did we do last month?", "上个月做了什么", "上上上周"])
def test_a_time_without_sessions_answers_with_none_and_says_why(history, mode, query):
    _sessions, asker = history
    res = _ask(asker, query, mode)
    assert res["results"] == [] and res["outcome"] == "nothing" and res["searched_with"] == "time"
    assert any("names only a time" in w and "no session searched has messages from then" in w
               for w in res["warnings"]), res
    bounded = _ask(asker, query, mode, since="2026-01-01")
    assert any("between since and until" in w for w in bounded["warnings"]), bounded


def test_the_asking_conversation_is_left_out_unless_asked_for(history, world):
    sessions, asker = history
    world._clock = ASKED
    world.say(asker, "user", "what did we do today?")
    assert _names(sessions, _ask(asker, "today", "hybrid")) == ["today"]
    assert _names(sessions, _ask(asker, "今天", "keyword", include_current_session=True)) == [asker, "today"]


def test_a_start_time_after_now_is_not_when_the_session_asks(history, world):
    """An importer that wrote the asking session's start in milliseconds put it in the year 55000:
    taken as when the session asks, it outweighed the latest turn, and "yesterday" read from then
    was no day at all, so the question looked for the word and found nothing."""
    sessions, asker = history
    world._clock = ASKED
    world.say(asker, "user", "what did we do yesterday?")
    write_as_importer(world.home, "UPDATE sessions SET started_at = ? WHERE id = ?", ASKED * 1000, asker)
    assert _names(sessions, _ask(asker, "yesterday", "keyword")) == ["late yesterday", "yesterday"]


def test_the_sessions_from_then_are_found_without_reading_every_message_from_then(history, world):
    """"last year" in a home of 1M messages took 3 s: every message from then was read, a window over
    each session's. Each session's latest message from then is one step back along Hermes's index, so
    a session with thousands more messages from then (after its user's, which shows it) costs no more."""
    from project_history_recall.hermes import messages, statedb

    sessions, _asker = history
    last_week = [(datetime(2026, 6, 15).timestamp(), datetime(2026, 6, 22).timestamp())]

    def steps() -> tuple[int, list]:
        with statedb.reading(world.home / "state.db") as (conn, shape):
            count = [0]

            def tick() -> int:
                count[0] += 1
                return 0
            conn.set_progress_handler(tick, 100)
            try:
                found = messages.from_then(conn, shape, list(sessions.values()), messages.Filters(), last_week, 1)
            finally:
                conn.set_progress_handler(None, 0)
        return count[0], found

    before, found = steps()
    write_as_importer(world.home, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
                      "INSERT INTO messages (session_id, role, content, timestamp) "
                      "SELECT ?, 'assistant', 'retrying the proxy', ? + i FROM n", sessions["late last week"],
                      datetime(2026, 6, 20).timestamp())
    statedb.discard_pooled(world.home / "state.db")
    after, again = steps()
    assert again == found and found[0][1] == sessions["late last week"]
    assert after < before + 50, (before, after)


@pytest.mark.parametrize("mode", MODES)
def test_a_time_alone_is_read_with_the_time_weighting_off_too(history, world, mode):
    """``time_weight`` 0 keeps dates from shaping a ranking; a question of a time alone is no ranking."""
    sessions, asker = history
    plugin_settings(world.home, time_weight=0.0)
    assert _names(sessions, _ask(asker, "yesterday", mode)) == ["late yesterday", "yesterday"]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("query", ["what went wrong with the nightly backup job yesterday?", "昨天的backup job怎么了"])
def test_a_time_with_words_to_look_for_is_ranked_as_before(history, mode, query):
    """"yesterday" beside words to look for lifts yesterday's hits, and sessions of other days that
    hold the words still come: no listing by time."""
    sessions, asker = history
    res = _ask(asker, query, mode)
    names = _names(sessions, res)
    assert res["searched_with"] != "time" and not any("names only a time" in w for w in res.get("warnings", []))
    assert names[0] == "late yesterday" and "late last week" in names
    assert {r["score_source"] for r in res["results"]} <= {"keyword", "semantic", "both"}
