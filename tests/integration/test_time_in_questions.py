"""A time named in a question shapes the ranking, through Hermes's real dispatch.

The same words were said in sessions at different dates; a question that names one of the
dates ("on March 10, 2026", "in June 2026", "last week", "上周") finds that session first,
read from the asking session's latest turn (its start when it has none). Without a date, the order is exactly as with the
time weighting off.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from hermes_world import call, enable_plugin, ids, plugin_settings

SEARCH = "project_history_search"
SAID = (("user", "what did we decide about the cache eviction policy? 缓存淘汰策略定了吗"),
        ("assistant", "we decided the cache eviction policy: least recently used. 缓存淘汰策略：最近最少使用"))
DAY = 86400.0


def _at(world, when: float, cwd) -> str:
    world._clock = when  # World stamps each message 30 s after the last
    return world.session(*SAID, cwd=cwd)


@pytest.fixture
def history(world, work):
    world.project("App", work)
    now = time.time()
    sessions = {
        "march": _at(world, datetime(2026, 3, 10, 11).timestamp(), work),
        "june": _at(world, datetime(2026, 6, 20, 15).timestamp(), work),
        "week": _at(world, now - 8 * DAY, work),  # last week, or the week before when asked on a Monday
        "yesterday": _at(world, now - DAY, work),  # the newest: first wherever the words alone decide
    }
    asker = world.session(cwd=work)  # Hermes stamps it as begun now
    enable_plugin(world.home)
    return sessions, asker


def _sessions(asker: str, query: str, mode: str) -> list[str]:
    res = call(SEARCH, {"query": query, "mode": mode, "context": 0}, session_id=asker)
    assert res["success"] and res["results"], res
    return list(dict.fromkeys(r["session_id"] for r in res["results"]))


def _with_weight(home, weight: float) -> None:
    plugin_settings(home, time_weight=weight)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_named_date_finds_its_session_first(history, world, mode):
    sessions, asker = history
    asked = [
        ("march", "what did we decide about the cache eviction policy on March 10, 2026?"),
        ("june", "what did we decide about the cache eviction policy in June 2026?"),
        ("march", "2026年3月10日缓存淘汰策略定了什么？"),
        ("june", "2026年6月缓存淘汰策略定了什么？"),
    ]
    _with_weight(world.home, 0.0)
    untimed = {_sessions(asker, q, mode)[0] for _, q in asked}
    _with_weight(world.home, 0.5)
    assert [_sessions(asker, q, mode)[0] for _, q in asked] == [sessions[name] for name, _ in asked]
    # Off, every question finds the same session first: the words alone cannot tell them apart.
    assert len(untimed) == 1


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("query", ["what did we decide last week about the cache eviction policy?",
                                   "上周缓存淘汰策略定了什么？"])
def test_last_week_is_read_from_when_the_asking_session_began(history, world, mode, query):
    sessions, asker = history
    _with_weight(world.home, 0.0)
    assert _sessions(asker, query, mode)[0] != sessions["week"]
    _with_weight(world.home, 0.5)
    assert _sessions(asker, query, mode)[0] == sessions["week"]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_without_a_date_the_order_is_as_before(history, world, mode):
    _sessions_, asker = history
    query = "what did we decide about the cache eviction policy?"
    _with_weight(world.home, 0.0)
    before = call(SEARCH, {"query": query, "mode": mode, "context": 0}, session_id=asker)
    _with_weight(world.home, 0.5)
    after = call(SEARCH, {"query": query, "mode": mode, "context": 0}, session_id=asker)
    assert ids(after) == ids(before)
    # Four sessions, each with both of its messages (the second in more_hits).
    assert len(before["results"]) == 4 and len(ids(before)) == 8


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_relative_times_are_read_from_the_asking_sessions_start_not_from_now(history, world, work, monkeypatch,
                                                                             mode):
    """A session begun on Wednesday 24 June 2026 (Hermes stamps its start with the clock, set
    back for that one write): its "last week" is 15-21 June, holding the "june" session,
    whatever today is."""
    import hermes_state

    sessions, _asker = history
    begun = datetime(2026, 6, 24, 12).timestamp()
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: begun)
        asker = world.session(cwd=work)
    _with_weight(world.home, 0.5)
    for query in ("what did we decide last week about the cache eviction policy?", "上周缓存淘汰策略定了什么？"):
        assert _sessions(asker, query, mode)[0] == sessions["june"]


def test_hybrid_chooses_its_keyword_candidates_with_the_time_named(world, work):
    """Sixty later sessions say the same words as the one of 10 March, so by the words alone its
    messages come after the keyword candidates hybrid fuses; the date in the question brings them
    among the candidates, as keyword mode ranks them, and its session comes first."""
    world.project("App", work)
    now = time.time()
    for n in range(60):
        _at(world, now - (n + 1) * DAY, work)
    # Written last, so that the semantic engine's ties (the same words) do not bring it in either.
    march = _at(world, datetime(2026, 3, 10, 11).timestamp(), work)
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    query = "what did we decide about the cache eviction policy on March 10, 2026?"
    for mode in ("keyword", "hybrid"):
        assert _sessions(asker, query, mode)[0] == march


def test_a_question_about_how_it_turned_out_lifts_the_later_session_in_keyword_mode_and_its_fallback(world, work):
    world.project("App", work)
    now = time.time()
    world._clock = now - 60 * DAY
    early = world.session(("user", "cache eviction policy: LRU or LFU? the cache eviction policy decides the cache hit rate"),
                          cwd=work)
    world._clock = now - 2 * DAY
    late = world.session(("user", "we settled the eviction policy"), cwd=work)
    asker = world.session(cwd=work)
    enable_plugin(world.home)
    asked = "what did we end up choosing for the cache eviction policy?"
    plugin_settings(world.home, order_weight=0.0)
    assert _sessions(asker, asked, "keyword")[0] == early  # the words alone prefer the first discussion
    plugin_settings(world.home, order_weight=5.0)
    assert _sessions(asker, asked, "keyword")[0] == late
    # Hybrid without its semantic engine is a keyword search, and ranks as keyword mode does.
    plugin_settings(world.home, order_weight=5.0, semantic=False)
    assert _sessions(asker, asked, "hybrid")[0] == late


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_the_week_and_month_before_last_are_not_last_week_and_month(world, work, monkeypatch, mode):
    """上上周, 上上周末 and 上上个月 (and "the week, weekend, month before last") name the week, weekend and month before last. Read from a session
    begun on Wednesday 24 June 2026, 上上周 is 8-14 June, 上上周末 13-14 June, 上上个月 April; the
    上周 inside 上上周 was read instead, lifting last week's session (15-21 June) over the one asked about."""
    import hermes_state

    world.project("App", work)
    said = {name: _at(world, datetime(*day, 15).timestamp(), work) for name, day in (
        ("april", (2026, 4, 14)), ("may", (2026, 5, 14)), ("weekend before last", (2026, 6, 13)),
        ("last weekend", (2026, 6, 20)), ("week before last", (2026, 6, 10)), ("last week", (2026, 6, 17)))}
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: datetime(2026, 6, 24, 12).timestamp())
        asker = world.session(cwd=work)
    enable_plugin(world.home)
    asked = {"上上周": {"week before last", "weekend before last"}, "上上周末": {"weekend before last"},
             "上上个月": {"april"}, "上周": {"last week", "last weekend"}, "上周末": {"last weekend"},
             "上个月": {"may"}, "the week before last": {"week before last", "weekend before last"},
             "the weekend before last": {"weekend before last"}, "the month before last": {"april"}}
    first = {words: _sessions(asker, f"what did we decide about the cache eviction policy {words}?"
                              if words.isascii() else f"{words}缓存淘汰策略定了什么？", mode)[0] for words in asked}
    assert {words: {name for name, sid in said.items() if sid == first[words]} <= names
            for words, names in asked.items()} == dict.fromkeys(asked, True), first


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_date_in_year_0000_names_no_time(history, world, mode):
    """Year 0000 is on no calendar: a question that names 0000-03-10 names no time, and ranks as
    without one. Its year was read as absent, which means this year (a date said without one): it
    lifted the session of 10 March 2026."""
    _sessions_, asker = history
    for query in ("what did we decide about the cache eviction policy on 0000-03-10?",
                  "0000年3月10日缓存淘汰策略定了什么？"):
        _with_weight(world.home, 0.0)
        before = call(SEARCH, {"query": query, "mode": mode, "context": 0}, session_id=asker)
        _with_weight(world.home, 0.5)
        after = call(SEARCH, {"query": query, "mode": mode, "context": 0}, session_id=asker)
        assert ids(after) == ids(before), query


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_number_too_long_for_a_time_names_none(world, work, monkeypatch, mode):
    """1000天前 (a thousand days ago), 两千零五天前, 一百二十天前, 12026年6月24日 and 12026年6月 name no
    time the rules read (a count of up to three digits or numerals without 百 or 千, a year of four):
    the question ranks as without one. The rules read their last digits instead (000天前, today;
    五天前; 2026年6月24日), lifting the session of the asking day, 24
    June 2026 (and its month), over the newer one the words alone put first."""
    import hermes_state

    world.project("App", work)
    that_day = _at(world, datetime(2026, 6, 24, 15).timestamp(), work)
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: datetime(2026, 6, 24, 12).timestamp())
        asker = world.session(cwd=work)
    newer = _at(world, datetime(2026, 7, 1, 15).timestamp(), work)
    enable_plugin(world.home)
    _with_weight(world.home, 0.5)
    assert _sessions(asker, "6月24日缓存淘汰策略定了什么？", mode)[0] == that_day  # a date read, as a check
    for query in ("1000天前缓存淘汰策略定了什么？", "两千零五天前缓存淘汰策略定了什么？", "一百二十天前缓存淘汰策略定了什么？",
                  "12026年6月24日缓存淘汰策略定了什么？", "12026年6月缓存淘汰策略定了什么？"):
        assert _sessions(asker, query, mode)[0] == newer, query


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_lunar_day_finds_its_session_first(world, work, monkeypatch, mode):
    """Asked on 24 June 2026, 腊月二十七 (alone, of 去年 or of 2025年) is lunar 2025's, 14 February 2026;
    前年's is lunar 2024's, 26 January 2025; 大年初一 is 17 February 2026. Without the time weighting
    (or before lunar days were read: 去年 lifted all of 2025) another session comes first."""
    import hermes_state

    world.project("App", work)
    said = {name: _at(world, datetime(*day, 15).timestamp(), work) for name, day in (
        ("lunar 2024", (2025, 1, 26)), ("lunar 2025", (2026, 2, 14)), ("new year", (2026, 2, 17)),
        ("newer", (2026, 6, 10)))}
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: datetime(2026, 6, 24, 12).timestamp())
        asker = world.session(cwd=work)
    enable_plugin(world.home)
    asked = {"去年腊月二十七": "lunar 2025", "腊月二十七": "lunar 2025", "2025年腊月二十七": "lunar 2025",
             "前年腊月二十七": "lunar 2024", "大年初一": "new year"}
    _with_weight(world.home, 0.0)
    assert {_sessions(asker, f"{words}缓存淘汰策略定了什么？", mode)[0] for words in asked} == {said["newer"]}
    _with_weight(world.home, 0.5)
    first = {words: _sessions(asker, f"{words}缓存淘汰策略定了什么？", mode)[0] for words in asked}
    assert first == {words: said[name] for words, name in asked.items()}


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_resumed_session_reads_last_week_from_its_latest_turn(world, work, monkeypatch, mode):
    """A session begun on Wednesday 24 June 2026 and taken up again on Wednesday 29 July (``hermes -c``,
    ``/resume``, a chat a gateway keeps): Hermes writes the user's turn before the tool runs, so
    "last week" is 20-26 July, not 15-21 June."""
    import hermes_state

    world.project("App", work)
    june = _at(world, datetime(2026, 6, 17, 11).timestamp(), work)
    july = _at(world, datetime(2026, 7, 22, 11).timestamp(), work)
    with monkeypatch.context() as clock:
        clock.setattr(hermes_state.time, "time", lambda: datetime(2026, 6, 24, 12).timestamp())
        asker = world.session(cwd=work)
    enable_plugin(world.home)
    _with_weight(world.home, 0.5)
    query = "what did we decide last week about the cache eviction policy?"
    assert _sessions(asker, query, mode)[0] == june
    world._clock = datetime(2026, 7, 29, 12).timestamp()
    world.say(asker, "user", query)
    assert _sessions(asker, query, mode)[0] == july


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("given_in", ["environment", "config.yaml"])
def test_time_words_and_bare_dates_are_read_in_the_zone_the_user_gave_hermes(world, work, monkeypatch, mode,
                                                                             given_in):
    """The machine on UTC, the user's Hermes on Asia/Shanghai (``HERMES_TIMEZONE``, or ``timezone:`` in
    config.yaml, as Hermes reads it), asked at 04:00 on 25 June in Shanghai: "yesterday" is the 24th
    there, which began at 16:00 UTC on the 23rd."""
    import hermes_state

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.delenv("HERMES_TIMEZONE", raising=False)
    if given_in == "environment":
        monkeypatch.setenv("HERMES_TIMEZONE", "Asia/Shanghai")
    try:
        world.project("App", work)
        utc = lambda *when: datetime(*when, tzinfo=timezone.utc).timestamp()  # noqa: E731
        shanghai_24th = _at(world, utc(2026, 6, 24, 10), work)  # 18:00 on the 24th in Shanghai
        utc_23rd = _at(world, utc(2026, 6, 23, 8), work)  # 16:00 on the 23rd in Shanghai
        with monkeypatch.context() as clock:
            clock.setattr(hermes_state.time, "time", lambda: utc(2026, 6, 24, 20))
            asker = world.session(cwd=work)
        enable_plugin(world.home)
        _with_weight(world.home, 0.5)
        if given_in == "config.yaml":
            with open(world.home / "config.yaml", "a", encoding="utf-8") as config:
                config.write("timezone: Asia/Shanghai\n")
        for query in ("what did we decide yesterday about the cache eviction policy?", "昨天缓存淘汰策略定了什么？"):
            assert _sessions(asker, query, mode)[0] == shanghai_24th
        # A bare date in since/until is a Shanghai day too: the 24th there holds only the first session.
        res = call(SEARCH, {"query": "cache eviction policy", "mode": mode, "since": "2026-06-24",
                            "until": "2026-06-25"}, session_id=asker)
        assert {r["session_id"] for r in res["results"]} == {shanghai_24th}, res
        assert utc_23rd != shanghai_24th
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_gateway_serving_several_profiles_reads_each_profiles_own_zone(world, work, monkeypatch):
    """A gateway started in one profile and serving others (``gateway.multiplex_profiles``) puts its
    launching profile's ``timezone`` in ``HERMES_TIMEZONE`` for the whole process; Hermes then reads the
    zone of each profile it serves from that profile's own config.yaml. This profile's is Asia/Shanghai,
    the launching one's America/Los_Angeles: the 24th is the Shanghai day (16:00 UTC on the 23rd to 16:00
    UTC on the 24th)."""
    from agent import secret_scope

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("HERMES_TIMEZONE", "America/Los_Angeles")
    try:
        world.project("App", work)
        utc = lambda *when: datetime(*when, tzinfo=timezone.utc).timestamp()  # noqa: E731
        shanghai_24th = _at(world, utc(2026, 6, 23, 20), work)  # 04:00 on the 24th there; 13:00 on the 23rd in LA
        los_angeles_24th = _at(world, utc(2026, 6, 24, 20), work)  # 04:00 on the 25th there; 13:00 on the 24th in LA
        asker = world.session(cwd=work)
        enable_plugin(world.home)
        with open(world.home / "config.yaml", "a", encoding="utf-8") as config:
            config.write("timezone: Asia/Shanghai\n")
        bounds = {"query": "cache eviction policy", "mode": "keyword", "since": "2026-06-24", "until": "2026-06-25"}
        alone = call(SEARCH, bounds, session_id=asker)  # a process of this profile alone: its variable speaks
        assert {r["session_id"] for r in alone["results"]} == {los_angeles_24th}, alone
        secret_scope.set_multiplex_active(True)
        try:
            served = call(SEARCH, bounds, session_id=asker)
        finally:
            secret_scope.set_multiplex_active(False)
        assert {r["session_id"] for r in served["results"]} == {shanghai_24th}, served
    finally:
        monkeypatch.undo()
        time.tzset()
