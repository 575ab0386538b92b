"""The plugin's own keyword index: its tokens and queries, pure; and one file end to end."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import numpy as np
import pytest

from write_lock import WriteLock
from project_history_recall.keyword import textindex
from project_history_recall.hermes.changes import Change
from project_history_recall.keyword.lengths import Lengths, PerSession
from project_history_recall.keyword.textindex import match_for, normalise, tokens


def test_cjk_runs_become_bigrams_then_characters_and_words_stay_words():
    assert tokens(normalise("修改youer服务端的timeout")) == [
        "修改", "修", "改", "youer", "服务", "务端", "端的", "服", "务", "端", "的", "timeout"]
    assert tokens("超") == ["超"]


def test_compatibility_forms_case_and_emoji_are_indexed_as_read():
    assert tokens(normalise("ＡＰＩ Straße ﬁle m² ｶﾀｶﾅ 🚀✅")) == [
        "api", "strasse", "file", "m2", "カタ", "タカ", "カナ", "カ", "タ", "カ", "ナ", "🚀", "✅"]


@pytest.mark.parametrize("text, match", [
    ("超时", '"超时"'), ("服务端", '"服务 务端"'), ("超", '"超"'), ("timeout", '"timeout"'),
    ("foo.bar()", '"foo bar"'), ("修改youer", '"修改 youer"'), ("🚀", '"🚀"'), ('a"b', '"a b"'),
])
def test_a_term_is_queried_as_the_index_stores_it(text, match):
    assert match_for(normalise(text)) == match


def test_punctuation_only_has_no_query():
    assert match_for("->") is None and match_for("...") is None


def _fts_finds(text: str, query: str) -> bool:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, content='', tokenize=\"{textindex.TOKENIZE}\")")
    conn.execute("INSERT INTO t (rowid, body) VALUES (1, ?)", (" ".join(tokens(normalise(text))),))
    return bool(conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (match_for(normalise(query)),)).fetchall())


@pytest.mark.parametrize("query", ["支付回调超时", "回调", "超", "时", "youer", "服务端", "ＡＰＩ", "api", "café", "🚀"])
def test_every_substring_of_a_cjk_run_and_every_word_is_found(query):
    assert _fts_finds("支付回调超时，修改youer服务端 API café 🚀", query)


@pytest.mark.parametrize("query", ["超付", "服务器", "apis", "caf"])
def test_what_the_text_does_not_hold_is_not_found(query):
    assert not _fts_finds("支付回调超时，修改youer服务端 API café 🚀", query)


# Words as a person reads them, found whichever way the history or the question spells them: a Thai
# (or Lao, Khmer, Burmese) word inside a run written without spaces, the Turkish capital İ (which
# casefolds to i and a combining dot) and dotless ı (DIŞ is dış in Turkish, diş to casefold), and a
# word with an invisible zero-width space, soft hyphen or word joiner inside it (pasted from a web page).
@pytest.mark.parametrize("text, query", [
    ("เราได้ย้ายฐานข้อมูลเมื่อวานนี้", "ย้าย"), ("เราได้ย้ายฐานข้อมูลเมื่อวานนี้", "ฐานข้อมูล"),
    ("ປ່ຽນຖານຂໍ້ມູນແລ້ວ", "ຖານຂໍ້ມູນ"), ("យើងបានផ្លាស់ប្តូរមូលដ្ឋានទិន្នន័យ", "មូលដ្ឋាន"),
    ("ဒေတာဘေ့စ်ကိုပြောင်းခဲ့သည်", "ဒေတာဘေ့စ်"),
    ("İstanbul ofisindeki toplantı", "istanbul"), ("istanbul ofisi", "İSTANBUL"),
    ("DIŞ kapı kilitli", "dış"), ("toplantı yarın", "TOPLANTI"), ("TOPLANTI yarın", "toplantı"),
    ("the data\u200bbase migration", "database"), ("the data\u00adbase migration", "database"),
    ("the data\u2060base migration", "database"), ("the database migration", "data\u200bbase"),
    ("نَقَلْنَا الخَادِمَ الجَدِيدَ", "الخادم"), ("نقلنا الخـــادم الجديد", "الخادم"), ("نقلنا الخادم", "الخَادِم"),
    ("הֶעֱבַרְנוּ לַשָּׁרָת", "לשרת"), ("העברנו לשרת", "לַשָּׁרָת"),
])
def test_a_word_is_found_however_its_script_spells_it(text, query):
    assert _fts_finds(text, query)


def test_thai_is_indexed_as_a_run_without_spaces_and_joiners_and_vowel_signs_stay():
    assert tokens(normalise("ย้าย")) == ["ย้", "้า", "าย", "ย", "้", "า", "ย"]
    # The joiners of an emoji sequence and of Persian words are not cut out (only invisible breaks are),
    # nor are the marks of an abugida, which spell its vowels (हिंदी is not हदी).
    assert normalise("हिंदी") == "हिंदी"
    assert "\u200d" in normalise("👩\u200d💻") and "\u200c" in normalise("می\u200cخواهم")


def _write(index, sid, rows, seen, kind="append", key=("auto", "/k")):
    index.write(Change(sid, kind, 0, seen), key, rows, first=True, complete=True)


def test_a_session_lookup_finds_its_rows_and_a_redo_retires_the_old_ones(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(1, "user", "超时了", None, None, 10.0), (2, "tool", "websocket 超时", "terminal", None, 20.0)],
           (2, 2))
    _write(index, "s2", [(3, "user", "超时", None, None, 30.0)], (1, 3), key=("auto", "/other"))
    states = index.states(["s1", "s2"])
    assert states["s1"].slot != states["s2"].slot
    user_only = textindex.lookup_for(index, states, ["s1"], with_tools=False)
    with_tools = textindex.lookup_for(index, states, ["s1"], with_tools=True)
    assert len(user_only.keys('"超时"', 10)) == 1 and user_only.count('"超时"') == 1
    assert set(user_only.sessions_of(user_only.keys('"超时"', 10)).tolist()) == {states["s1"].ordinal}
    assert len(with_tools.keys('"超时"', 10)) == 2
    assert len(with_tools.keys('"超时"', 10, [states["s1"].ordinal])) == 2  # one session's rows, tools included
    assert len(with_tools.keys('"terminal"', 10))  # the tool name is indexed too
    later = textindex.lookup_for(index, states, ["s1"], with_tools=True, since=15.0)
    assert len(later.keys('"超时"', 10)) == 1
    # s1 lost a message in Hermes: it is indexed again under a new number, the old rows are unreachable.
    old = states["s1"].ordinal
    _write(index, "s1", [(2, "tool", "websocket", "terminal", None, 20.0)], (1, 2), kind="redo")
    states = index.states(["s1"])
    assert states["s1"].ordinal != old and index.garbage() == 2
    lookup = textindex.lookup_for(index, states, ["s1"], with_tools=True)
    assert len(lookup.keys('"超时"', 10)) == 0 and len(lookup.keys('"websocket"', 10)) == 1


def test_a_rewrite_the_lock_kept_unmarked_is_queued_planned_again_and_redone_once(tmp_path, monkeypatch):
    """``Keeper.changed`` while another process holds keywords.db's write lock past its wait: the
    mark is not written, so the session's counts say it is current. Its redo is queued instead
    (``Rewritten``), planned again by the next check (a plan from the counts would replace the queue
    without it), and done whatever the counts say, once: a plain redo as of the same counts is not."""
    index = textindex.TextIndex(tmp_path / "keywords.db")
    key = ("auto", "/k")
    _write(index, "s1", [(1, "user", "the server ran out of memory", None, None, 10.0)], (1, 1))
    keeper = textindex.Keeper(tmp_path, index)
    monkeypatch.setattr(keeper, "_start", lambda: None)  # no thread: the queue stays as it is looked at
    with WriteLock(index.path, at_most=5) as other:  # another process writing the file
        keeper.changed(key, ["s1"], 0.2)
        assert other.holds()  # back before the lock was let go: it waited its 0.2 s, not the lock out
        assert [type(item) for item in keeper._waiting(key)] == [textindex.Rewritten]
    before = index.states(["s1"])
    assert before["s1"].seen_count == 1  # not marked
    redo = keeper._queued(key, before, {})["s1"]
    assert isinstance(redo, textindex.Rewritten) and redo.seen == (1, 1)
    rows = [(1, "user", "a robot waters the plants", None, None, 10.0)]
    index.write(Change("s1", "redo", 0, (1, 1)), key, rows, first=True, complete=True)
    assert index.states(["s1"]) == before  # as of the counts it is current at: taken for done
    index.write(redo, key, rows, first=True, complete=True)
    after = index.states(["s1"])
    assert after["s1"].ordinal != before["s1"].ordinal and after["s1"].seen_count == 1
    lookup = textindex.lookup_for(index, after, ["s1"], with_tools=False)
    assert len(lookup.keys('"robot"', 10)) == 1 and not len(lookup.keys('"memory"', 10))
    index.write(redo, key, rows, first=True, complete=True)  # another copy of it (another thread's)
    assert index.states(["s1"]) == after and keeper._queued(key, after, {}) == {}


def test_a_term_counted_with_its_rows_has_the_count_and_keys_of_two_lookups(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(1, "user", "超时", None, None, 10.0), (2, "user", "超时了", None, None, 20.0),
                         (3, "user", "没有", None, None, 25.0)], (3, 3))
    _write(index, "s2", [(4, "user", "又超时", None, None, 30.0)], (1, 4))  # the same slot, not searched
    _write(index, "s3", [(5, "user", "超时", None, None, 40.0)], (1, 5), key=("auto", "/other"))
    states = index.states(["s1", "s2", "s3"])
    for lookup in (textindex.lookup_for(index, states, ["s1", "s3"], with_tools=False),
                   textindex.lookup_for(index, states, ["s1", "s3"], with_tools=False, since=15.0)):
        # Fewer rows than the limit in each slot: the slots' count (s2's row too) and the searched keys.
        count, keys = lookup.counted('"超时"', 4)
        assert count == lookup.count('"超时"') == 4
        assert keys is not None and keys.tolist() == lookup.keys('"超时"', 5000).tolist()
        # As many as the limit in a slot: counted apart, the keys left to a lookup of their own.
        assert lookup.counted('"超时"', 3) == (4, None)
        count, keys = lookup.counted('"没了"', 4)
        assert count == 0 and keys is not None and not len(keys)
    assert len(lookup.keys('"超时"', 5000)) == 2  # since 15.0: s1's second row and s3's


def test_a_term_read_in_some_sessions_at_once_keeps_what_a_lookup_per_session_keeps(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(i, "tool" if i % 2 else "user", "超时", "terminal", None, float(i)) for i in range(1, 8)], (7, 7))
    _write(index, "s2", [(i, "user", "超时了", None, None, float(i)) for i in range(8, 11)], (3, 10))
    _write(index, "s3", [(11, "user", "超时", None, None, 11.0)], (1, 11))  # the same slot, left out
    _write(index, "s4", [(12, "user", "又超时", None, None, 12.0)], (1, 12), key=("auto", "/other"))
    states = index.states(["s1", "s2", "s3", "s4"])
    top = [states[s].ordinal for s in ("s1", "s2", "s4")]
    for tools in (False, True):
        lookup = textindex.lookup_for(index, states, ["s1", "s2", "s3", "s4"], with_tools=tools)
        count = lookup.count('"超时"')
        for limit in (1, 2, 10):
            one_by_one = lookup.keys('"超时"', limit, top).tolist()
            assert lookup.keys_in('"超时"', limit, top, count).tolist() == one_by_one  # one read of the slots
            assert lookup.keys_in('"超时"', limit, top, 10**6).tolist() == one_by_one  # a lookup per session
        # Per session (and per its tool rows), its first rows: s1's 3 (or 4 tool) rows cut to 2 each.
        assert len(lookup.keys_in('"超时"', 2, top, count)) == (2 + 2 + 1 + 2 if tools else 2 + 2 + 1)


def test_doc_arrays_line_up_with_the_rowids_asked_and_fill_what_is_unknown(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(7, "user", "abc", None, None, 10.5), (9, "user", "abcdef", None, None, "later")], (2, 9))
    lookup = textindex.lookup_for(index, index.states(["s1"]), ["s1"], with_tools=False)
    first, second = lookup.keys('"abc" OR "abcdef"', 10).tolist()
    # The second row's time is no number (an importer's text), and a rowid nothing was written under.
    ids, lengths, times = index.doc_arrays(np.array([first, second, second + 1], dtype=np.int64))
    assert ids.tolist() == [7, 9, -1] and lengths.tolist() == [3.0, 6.0, 0.0] and times.tolist() == [10.5, 0.0, 0.0]
    assert [a.tolist() for a in index.doc_arrays(np.zeros(0, dtype=np.int64))] == [[], [], []]


def test_a_scopes_lengths_are_its_searched_sessions_messages_read_again_only_where_written(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(1, "user", "abc", None, None, 1.0), (2, "tool", "abcdefgh", "t", None, 2.0)], (2, 2))
    _write(index, "s2", [(3, "user", "ab", None, None, 3.0)], (1, 3))
    _write(index, "s3", [(4, "user", "abcd", None, None, 4.0)], (1, 4), key=("auto", "/other"))
    kept = PerSession()

    def lengths(searched, tools, since=None):
        return textindex.lookup_for(index, index.states(searched), searched, tools, since).scope_lengths(kept)

    assert lengths(["s1", "s2", "s3"], False) == Lengths.of([3, 2, 4])
    assert lengths(["s1", "s3"], True) == Lengths.of([3, 8, 4])  # a scope with tools: their rows too
    assert lengths(["s1", "s3"], True, since=3.5) == Lengths.of([3, 8, 4])  # every time: the scope's messages
    index.write(Change("s2", "append", 3, (2, 5)), ("auto", "/k"), [(5, "user", "abcde", None, None, 5.0)],
                first=True, complete=True)
    assert lengths(["s1", "s2"], False) == Lengths.of([3, 2, 5])


def test_a_prefix_stands_for_the_indexed_words_it_starts(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _write(index, "s1", [(1, "user", "painted paintings; a painter, 画画", None, None, 1.0)], (1, 1))
    lookup = textindex.lookup_for(index, index.states(["s1"]), ["s1"], with_tools=False)
    assert lookup.prefix_match("paint") == '"painted" OR "painter" OR "paintings"'
    assert lookup.prefix_match("sculpt") is None
    assert len(lookup.keys(lookup.prefix_match("paint"), 10)) == 1


def test_list_content_is_indexed_as_its_text(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    raw = '\x00json:[{"type": "text", "text": "\\u652f\\u4ed8\\u56de\\u8c03\\u8d85\\u65f6 at the caf\\u00e9"}]'
    _write(index, "s1", [(1, "user", raw, None, None, 1.0)], (1, 1))
    lookup = textindex.lookup_for(index, index.states(["s1"]), ["s1"], with_tools=False)
    for query in ("超时", "支付回调超时", "café"):
        assert len(lookup.keys(match_for(normalise(query)), 10)), query


def _segments(index) -> int:
    with index.using() as conn:  # each segment has a row in FTS5's page index
        return conn.execute("SELECT count(DISTINCT segid) FROM text_idx").fetchone()[0]


def _many_writes(index, sessions=60):
    """An index of many small commits, as a build leaves it: FTS5 writes a segment a commit."""
    for s in range(sessions):
        rows = [(s * 10 + i, "user", f"deploy {s} 超时 retry{i % 3} 连接池", None, None, float(s)) for i in range(3)]
        _write(index, f"s{s:03}", rows, (3, s * 10 + 2), key=("auto", f"/p{s % 4}"))
    return [f"s{s:03}" for s in range(60)]


def _found(index, sids):
    states = index.states(sids)
    lookup = textindex.lookup_for(index, states, sids, with_tools=True)
    return {q: (lookup.count(q), lookup.keys(q, 1000).tolist())
            for q in ('"超时"', '"deploy"', '"retry1"', '"连接池"', '"17"', '"nothing"')}


def test_merging_leaves_fewer_segments_and_the_same_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(textindex, "MERGE_PAGES", 1)  # many small steps, as at 1M
    index = textindex.TextIndex(tmp_path / "keywords.db")
    sids = _many_writes(index)
    before, found = _segments(index), _found(index, sids)
    assert index.merge() > 1
    assert _segments(index) < before and _segments(index) <= 3  # at most one a level
    assert _found(index, sids) == found
    assert index.merge() == 0  # nothing left: no step merged anything


def test_a_merge_stopped_between_steps_leaves_a_working_index_and_the_next_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(textindex, "MERGE_PAGES", 1)
    index = textindex.TextIndex(tmp_path / "keywords.db")
    sids = _many_writes(index)
    found = _found(index, sids)
    before = _segments(index)
    assert index.merge(steps=1) == 1
    assert index.merge(lambda: False) == 0  # a search handed work over: the merge waits
    between = _segments(index)
    assert _found(index, sids) == found
    _write(index, "late", [(9999, "user", "超时 deploy", None, None, 1.0)], (1, 9999))  # written meanwhile
    assert index.merge() > 0 and index.merge() == 0
    assert between < before and _segments(index) <= between
    found_late = _found(index, [*sids, "late"])
    assert found_late['"超时"'][0] == found['"超时"'][0] + 1


def test_a_merge_that_fails_keeps_the_index_as_it_was(tmp_path, caplog):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    sids = _many_writes(index)
    found, before = _found(index, sids), _segments(index)
    keeper = textindex.Keeper(tmp_path, index)
    with index.using() as conn:  # the disk full: not one more page
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    assert keeper.settle() == 0 and "merging the keyword index's segments stopped" in caplog.text
    assert _segments(index) == before and _found(index, sids) == found
    with index.using() as conn:
        conn.execute("PRAGMA max_page_count = 1073741823")
        conn.execute("PRAGMA busy_timeout = 50")
    other = sqlite3.connect(index.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing the file
    try:
        assert keeper.settle() == 0 and "locked" in caplog.text
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _found(index, sids) == found
    assert keeper.settle() > 0 and _segments(index) < before and _found(index, sids) == found


def _statements(index, fn):
    """(``fn()``, the SQL statements it ran on the index's connection)."""
    ran: list[str] = []
    with index.using() as conn:
        conn.set_trace_callback(ran.append)
    try:
        return fn(), ran
    finally:
        with index.using() as conn:
            conn.set_trace_callback(None)


def _merged(ran) -> bool:
    return any("'merge'" in sql for sql in ran)


def test_a_settled_index_is_not_merged_again_until_something_commits_to_it(tmp_path):
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _many_writes(index)
    assert index.merge() > 0
    writes = index.writes
    done, ran = _statements(index, index.merge)
    assert done == 0 and index.writes == writes  # no write transaction
    assert ran == ["PRAGMA data_version"], ran  # nor FTS5's 'merge', nor a read of its config
    _write(index, "late", [(9999, "user", "超时 deploy", None, None, 1.0)], (1, 9999))  # this process writes
    assert _merged(_statements(index, index.merge)[1])
    assert not _merged(_statements(index, index.merge)[1])
    with closing(sqlite3.connect(index.path)) as other, other:  # another process writes
        other.execute("INSERT INTO meta VALUES ('other', '1')")
    assert _merged(_statements(index, index.merge)[1])
    assert not _merged(_statements(index, index.merge)[1])


def test_the_commits_left_unmerged_are_counted_from_the_last_merge_that_found_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(textindex, "MERGE_PAGES", 1)
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _many_writes(index, sessions=5)
    assert index.unmerged() >= 5
    index.merge(steps=1)
    assert index.unmerged() >= 5  # cut short: still unmerged
    index.merge()
    assert index.unmerged() == 0
    _write(index, "late", [(9999, "user", "超时 deploy", None, None, 1.0)], (1, 9999))
    assert index.unmerged() == 1


def test_a_merge_cut_short_is_not_settled(tmp_path, monkeypatch):
    monkeypatch.setattr(textindex, "MERGE_PAGES", 1)
    index = textindex.TextIndex(tmp_path / "keywords.db")
    _many_writes(index)
    assert index.merge(steps=1) == 1  # the step limit
    assert _merged(_statements(index, index.merge)[1])
    _write(index, "late", [(9999, "user", "超时 deploy", None, None, 1.0)], (1, 9999))
    assert index.merge(lambda: False) == 0  # a search handed work over before the first step
    assert _merged(_statements(index, index.merge)[1])


def test_unreachable_rows_piled_past_the_limit_and_half_the_live_rows_start_the_index_afresh(tmp_path, monkeypatch):
    """FTS5 cannot delete contentless rows, so the rows a redo retires stay until a rebuild; the
    next process to open the file starts it afresh once they pass GARBAGE_LIMIT and half the
    live rows (the sessions are then indexed again as on a first build)."""
    monkeypatch.setattr(textindex, "GARBAGE_LIMIT", 2)
    path = tmp_path / "keywords.db"
    index = textindex.TextIndex(path)
    rows = [(i, "user", f"message {i}", None, None, float(i)) for i in range(1, 6)]
    _write(index, "s1", rows, (5, 5))
    _write(index, "s1", rows[:3], (3, 3), kind="redo")  # 5 retired rows, 3 live: at the limit of 2 and past half
    assert index.garbage() == 5
    more = [(i, "user", f"message {i}", None, None, float(i)) for i in range(6, 16)]
    _write(index, "s2", more, (10, 15))  # 13 live rows: the 5 retired ones are no longer past half
    assert set(textindex.TextIndex(path).states(["s1", "s2"])) == {"s1", "s2"}
    _write(index, "s2", more[:1], (1, 6), kind="redo")  # 15 retired, 4 live
    reopened = textindex.TextIndex(path)
    assert reopened.states(["s1", "s2"]) == {} and reopened.garbage() == 0
    states = {"s1": textindex.KeywordState("s1", ordinal=1, slot=1)}
    assert textindex.lookup_for(reopened, states, ["s1"], with_tools=True).keys('"message"', 10).size == 0
