"""project_history_search through Hermes's real plugin manager and dispatch (Hermes 0.19.0)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading

import pytest

from cli_runs import cli_process
from hermes_world import (call, checkpoint, db_digest, enable_plugin, found, hits, ids, only_on, plugin_module,
                          plugin_settings, write_as_importer)

SEARCH = "project_history_search"


@pytest.fixture(params=[None, 10_000, 0], ids=["own-keyword-index", "scan-small-scope", "hermes-index-big-scope"])
def lookalike_pq(world, work, request, monkeypatch):
    """Projects P and Q in folders that share a prefix and carry % and _."""
    p_dir = work / "app_1%"
    q_dir = work / "app_1%x"
    other = work / "app_10"
    for d in (p_dir / "src", q_dir, other):
        d.mkdir(parents=True)
    p = world.project("P", p_dir)
    q = world.project("Q", q_dir)
    sp = world.session(("user", "websocket reconnect fails with ERR_CONNECTION_REFUSED"),
                       ("assistant", "Added exponential backoff to the websocket client"), cwd=p_dir, title="P one")
    sp2 = world.session(("user", "支付回调超时，修改youer服务端配置"), ("assistant", "超时改为15秒"),
                        cwd=p_dir / "src", title="P two")
    sq = world.session(("user", "websocket pricing for Q ERR_CONNECTION_REFUSED"), ("assistant", "Q answer 超时"),
                       cwd=q_dir, title="Q one")
    so = world.session(("user", "websocket in app_10 ERR_CONNECTION_REFUSED"), cwd=other, title="Other")
    asker_p = world.session(cwd=p_dir, title="asking from P")
    asker_q = world.session(cwd=q_dir, title="asking from Q")
    if request.param is not None:
        # Without the plugin's own index, both ways Hermes's data is searched:
        # scanning a small scope, Hermes's indexes for a big one.
        plugin_settings(world.home, keyword_index=False)
    enable_plugin(world.home)
    if request.param is not None:
        monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", request.param)
    return {"P": p, "Q": q, "sp": sp, "sp2": sp2, "sq": sq, "so": so, "asker_p": asker_p, "asker_q": asker_q,
            "p_dir": p_dir, "q_dir": q_dir, "other": other, "keyword_index": request.param is None}


def test_projects_never_leak_into_each_other(lookalike_pq):
    for query in ("websocket", "ERR_CONNECTION_REFUSED", "超时", "websocket ERR_CONNECTION_REFUSED 超时"):
        from_p = call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_p"])
        from_q = call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_q"])
        assert found(from_p) <= {lookalike_pq["sp"], lookalike_pq["sp2"]}, query
        assert found(from_q) <= {lookalike_pq["sq"]}, query
        assert from_p["project"] == {"kind": "explicit", "id": lookalike_pq["P"], "name": "P"}
        assert from_q["project"]["id"] == lookalike_pq["Q"]
    assert found(call(SEARCH, {"mode": "keyword", "query": "websocket"},
                      session_id=lookalike_pq["asker_p"])) == {lookalike_pq["sp"]}


def test_response_shape_matches_the_spec(lookalike_pq):
    res = call(SEARCH, {"mode": "keyword", "query": "websocket reconnect"}, session_id=lookalike_pq["asker_p"])
    assert res["success"] is True and res["mode"] == "keyword"
    assert res["sessions_in_scope"] == 2  # P's two sessions; the asker's own is excluded
    assert res["semantic_status"] in ("disabled", "consent_required", "indexing", "partial", "ready", "unavailable")
    hit = res["results"][0]
    assert set(hit) >= {"session_id", "link", "title", "message_id", "snippet", "score_source", "when"}
    assert hit["session_id"] == lookalike_pq["sp"] and hit["title"] == "P one"
    assert hit["link"] == f"@session:default/{lookalike_pq['sp']}"
    assert hit["score_source"] == "keyword"
    assert ">>>websocket<<<" in hit["snippet"]
    assert any(c.get("hit") for c in hit["context"]) and len(hit["context"]) == 2


def test_hybrid_falls_back_to_keyword_and_says_why(lookalike_pq, world):
    res = call(SEARCH, {"query": "websocket"}, session_id=lookalike_pq["asker_p"])
    assert res["mode"] == "hybrid" and res["results"]
    assert res["semantic_status"] == "ready" and res["searched_with"] == "keyword+semantic"
    plugin_settings(world.home, semantic=False, keyword_index=lookalike_pq["keyword_index"])
    res = call(SEARCH, {"query": "websocket"}, session_id=lookalike_pq["asker_p"])
    assert res["mode"] == "hybrid" and res["results"] and res["searched_with"] == "keyword"
    assert res["semantic_status"] == "disabled" and res["semantic_reason"]


def test_link_reads_back_with_core_session_search(lookalike_pq, world):
    from tools.session_search_tool import session_search

    hit = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=lookalike_pq["asker_p"])["results"][0]
    profile, _, sid = hit["link"].removeprefix("@session:").partition("/")
    import json

    out = json.loads(session_search(session_id=sid, profile=profile, around_message_id=hit["message_id"],
                                    db=world.db))
    assert out["success"] and any(m["id"] == hit["message_id"] for m in out["messages"])


def test_cjk_one_two_and_three_plus_characters_and_mixed_scripts(lookalike_pq):
    ask = lambda q: found(call(SEARCH, {"mode": "keyword", "query": q},  # noqa: E731
                               session_id=lookalike_pq["asker_p"]))
    assert ask("超") == {lookalike_pq["sp2"]}
    assert ask("超时") == {lookalike_pq["sp2"]}
    assert ask("服务端") == {lookalike_pq["sp2"]}
    assert ask("修改youer服务端") == {lookalike_pq["sp2"]}
    assert ask("youer") == {lookalike_pq["sp2"]}
    # A two-character word the project never says is looked for as its characters (超 of 超时).
    assert ask("超期") == {lookalike_pq["sp2"]}


def test_exact_symbols_and_error_codes(world, work):
    d = work / "sym"
    d.mkdir()
    world.project("Sym", d)
    sid = world.session(("user", "call foo.bar() in src/app.py; it raised 0x80070005"),
                        ("assistant", "ERR_CONNECTION_REFUSED came from payment_gateway.timeout"), cwd=d)
    noise = world.session(("user", "foo and bar and app and py, connection refused"), cwd=d)
    asker = world.session(cwd=d)
    enable_plugin(world.home)
    for symbol in ("foo.bar()", "src/app.py", "0x80070005", "ERR_CONNECTION_REFUSED", "payment_gateway.timeout"):
        res = call(SEARCH, {"mode": "keyword", "query": symbol}, session_id=asker)
        assert res["results"] and res["results"][0]["session_id"] == sid, symbol
        assert noise not in {r["session_id"] for r in res["results"][:1]}


def test_other_forms_of_a_word_find_it(lookalike_pq, world):
    """A prefix every form shares ("activity" finds "activities") and irregular forms ("buy" finds
    "bought"), through every way the scope is searched."""
    sid = world.session(("user", "We bought two activities trackers"), cwd=lookalike_pq["p_dir"], title="forms")
    ask = lambda q: found(call(SEARCH, {"mode": "keyword", "query": q},  # noqa: E731
                               session_id=lookalike_pq["asker_p"]))
    assert ask("buy") == {sid}
    assert ask("activity") == {sid}
    assert ask("tracker") == {sid}


def test_sessions_the_words_miss_follow_by_the_questions_stop_words(lookalike_pq, world):
    """A question whose words the project says in fewer sessions than asked for: the sessions
    that hold only its stop words ("she", "had") follow those, never before them; a session that
    holds none of it stays out, and a question whose words fill the results brings none, nor one
    whose words the project never says."""
    p_dir = lookalike_pq["p_dir"]
    said = world.session(("user", "The doctor checked the knee"), cwd=p_dir, title="doctor")
    stop = world.session(("user", "Lily had a fever and she slept all day"), cwd=p_dir, title="fever")
    garden = world.session(("user", "Tomatoes want full sun"), cwd=p_dir, title="garden")
    ask = lambda q, limit=10: [r["session_id"] for r in call(  # noqa: E731
        SEARCH, {"mode": "keyword", "query": q, "limit": limit, "context": 0},
        session_id=lookalike_pq["asker_p"])["results"]]
    # The project's other sessions say "the" and "to" at most: they follow.
    found_ = ask("What did the doctor say my daughter had when she was ill?")
    assert found_[:2] == [said, stop] and garden not in found_
    assert ask("What did the doctor say my daughter had when she was ill?", limit=1) == [said]
    assert ask("doctor") == [said]
    assert ask("What did the dentist say about my daughter?") == []


@pytest.mark.parametrize("query", ['NEAR(websocket reconnect)', 'websocket AND', 'OR', '"unbalanced', 'col:websocket',
                                   '*', '^websocket', 'a:b:c', "'; DROP TABLE messages; --", "(((", '"" AND ""',
                                   "websocket\x00", "\ud800websocket", "x" * 5000])
def test_malformed_fts_syntax_never_raises(lookalike_pq, query):
    res = call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_p"])
    assert isinstance(res, dict) and "success" in res
    if res["success"]:
        assert found(res) <= {lookalike_pq["sp"], lookalike_pq["sp2"]}
    else:
        assert res["error"]


def test_auto_project_tier(world, work):
    repo = work / "loose-repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".git").mkdir()
    a = world.session(("user", "auto tier websocket note"), cwd=repo / "src")
    b = world.session(("user", "another websocket note at the root"), cwd=repo)
    elsewhere = world.session(("user", "websocket elsewhere"), cwd=work)
    asker = world.session(cwd=repo)
    enable_plugin(world.home)
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=asker)
    assert res["project"]["kind"] == "auto" and res["project"]["name"] == "loose-repo"
    assert found(res) == {a, b}
    assert elsewhere not in found(res)


def test_home_bucket_searches_nothing(lookalike_pq, world):
    tg = world.session(("user", "websocket question from telegram"), source="telegram")
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=tg)
    assert res["success"] is True and res["results"] == []
    assert res["project"]["kind"] == "home" and res["sessions_in_scope"] == 0
    assert "project_session_move" in res["reason"]


def test_subagent_child_searches_its_parents_project_and_skips_the_conversation(lookalike_pq, world):
    child = world.session(("assistant", "subagent scratch websocket"), parent=lookalike_pq["asker_p"],
                          source="subagent")
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=child)
    assert res["project"]["id"] == lookalike_pq["P"]
    assert found(res) == {lookalike_pq["sp"]}
    assert res.get("current_session_excluded") is True
    # The run itself is not P's searchable history (Hermes's session_search hides subagent runs too).
    res = call(SEARCH, {"mode": "keyword", "query": "subagent scratch"}, session_id=lookalike_pq["sp"])
    assert res["project"]["id"] == lookalike_pq["P"] and found(res) == set()


def test_current_session_lookup_order_and_missing_row(lookalike_pq, monkeypatch):
    # session_id first; a task_id that exists is used when session_id is unknown.
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id="20990101_000000_ffffff",
               task_id=lookalike_pq["asker_q"])
    assert res["project"]["id"] == lookalike_pq["Q"]
    # No ids at all, no row yet: the working directory decides.
    monkeypatch.setenv("TERMINAL_CWD", str(lookalike_pq["p_dir"]))
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id="20990101_000000_eeeeee")
    assert res["project"]["id"] == lookalike_pq["P"]
    monkeypatch.setenv("HERMES_SESSION_ID", lookalike_pq["asker_q"])
    res = call(SEARCH, {"mode": "keyword", "query": "websocket"})
    assert res["project"]["id"] == lookalike_pq["Q"]


def test_include_current_session_and_roles(lookalike_pq, world):
    world.say(lookalike_pq["asker_p"], "user", "websocket in the current conversation")
    world.say(lookalike_pq["asker_p"], "tool", "websocket tool output line", tool_name="terminal")
    default = found(call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=lookalike_pq["asker_p"]))
    assert lookalike_pq["asker_p"] not in default
    both = call(SEARCH, {"mode": "keyword", "query": "websocket", "include_current_session": True, "include_tool_output": True},
                session_id=lookalike_pq["asker_p"])
    roles = {h["role"] for r in both["results"] if r["session_id"] == lookalike_pq["asker_p"]
             for h in [r, *r.get("more_hits", [])]}
    assert roles == {"user", "tool"}


def test_rewound_messages_are_hidden_and_compacted_ones_stay(lookalike_pq, world):
    sid = world.session(("user", "zebra rewound message"), ("user", "zebra compacted message"),
                        cwd=lookalike_pq["p_dir"])
    conn = world.db._conn
    conn.execute("UPDATE messages SET active = 0, compacted = 0 WHERE session_id = ? AND content LIKE '%rewound%'",
                 (sid,))
    conn.execute("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND content LIKE '%compacted%'",
                 (sid,))
    conn.commit()
    snippets = [r["snippet"] for r in
                call(SEARCH, {"mode": "keyword", "query": "zebra"}, session_id=lookalike_pq["asker_p"])["results"]]
    assert any("compacted" in s for s in snippets) and not any("rewound" in s for s in snippets)


def test_a_text_edited_in_place_is_found_by_the_words_it_says_now(lookalike_pq, world):
    """An importer may rewrite a message's text in place (so does Hermes 0.22: below), the session's row count
    and last id unchanged: the message is found by what it says now, never by what it said."""
    sid = world.session(cwd=lookalike_pq["p_dir"], title="edited")
    mid = world.say(sid, "user", "the pelican migration crosses the estuary in spring")

    def found_by(query: str) -> list[int]:
        return ids(call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_p"]))

    assert found_by("pelican estuary") == [mid]
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?",
                      "the office plants are watered by a robot", mid)
    assert found_by("watered robot") == [mid]
    assert mid not in found_by("pelican estuary")
    # As long as it was: only the digest the index keeps of a recent row tells.
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?",
                      "the office plants are watered by a goose", mid)
    assert found_by("watered goose") == [mid]
    assert mid not in found_by("robot")


def test_index_sets_right_an_old_text_edited_in_place(lookalike_pq, world):
    """A row edited by an importer long after Hermes wrote it (300 rows written since: past the rows
    a search checks), its length kept: ``index`` on the command line checks every row's digest, and
    then the message is found by what it says now, not by what it said."""
    sid = world.session(cwd=lookalike_pq["p_dir"], title="old")
    mid = world.say(sid, "user", "the pelican migration crosses the estuary in spring")

    def found_by(query: str) -> list[int]:
        return ids(call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_p"]))

    assert found_by("pelican estuary") == [mid]
    chatter = world.session(cwd=lookalike_pq["p_dir"], title="chatter")
    for n in range(300):
        world.say(chatter, "assistant", f"routine line {n}")
    assert found_by("pelican estuary") == [mid]  # the chatter indexed too
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?",
                      "the pelican migration crosses the lagoons in spring", mid)
    done = cli_process("index", "--all", home=world.home)
    assert done.returncode == 0, done.stderr
    assert found_by("pelican lagoons") == [mid]
    assert mid not in found_by("estuary")


@only_on((0, 22), "SessionDB.set_user_message_content, which rewrites a user row's text in place")
def test_a_user_turn_hermes_rewrites_in_place_is_found_by_its_new_words(lookalike_pq, world):
    """Hermes 0.22 writes a user turn when it is submitted and rewrites that row's text in place when
    the turn's prologue expands it (an @-file, say): the row count and last id stay as they were. The
    rows Hermes may still rewrite are checked before each search, so the first search after the
    rewrite finds the new words, in both modes, and none finds the old ones, whatever the length."""
    sid = world.session(cwd=lookalike_pq["p_dir"], title="expanded")
    mid = world.say(sid, "user", "summarise @notes.md about the heron")

    def found_by(query: str, mode: str = "keyword") -> list[int]:
        return ids(call(SEARCH, {"mode": mode, "query": query}, session_id=lookalike_pq["asker_p"]))

    assert found_by("heron summarise") == [mid]
    assert world.db.set_user_message_content(sid, mid, "summarise these notes: the kingfisher nests by the weir") == 1
    assert found_by("kingfisher weir", "hybrid")[0] == mid
    assert found_by("kingfisher weir") == [mid]
    assert mid not in found_by("heron") and mid not in found_by("heron", "hybrid")
    assert world.db.set_user_message_content(sid, mid, "summarise these notes: the cormorant nests by the weirs") == 1
    assert found_by("cormorant") == [mid] and found_by("cormorant", "hybrid")[0] == mid
    assert mid not in found_by("kingfisher") and mid not in found_by("kingfisher", "hybrid")


@only_on((0, 22), "a rollback-journal state.db, and SessionDB.set_user_message_content")
def test_a_rewrite_within_one_tick_of_the_files_clock_is_found(lookalike_pq, world):
    """Whether state.db changed was told by its file's stamp alone (modified time, size, inode): a
    rewrite that keeps the file's size, committed within the same tick of the file system's clock
    as the last search's look (a few milliseconds), left the stamp as it was, and searches went on
    with the text as it had been (found by its old words, not by its new ones). SQLite counts every
    commit to a rollback-journal file in its header; the stamp counts them too. The tick is made
    here by putting the file's time back as it was."""
    sid = world.session(cwd=lookalike_pq["p_dir"], title="expanded")
    mid = world.say(sid, "user", "summarise @notes.md about the heron")

    def found_by(query: str) -> list[int]:
        return ids(call(SEARCH, {"mode": "keyword", "query": query}, session_id=lookalike_pq["asker_p"]))

    assert found_by("heron summarise") == [mid]
    db = world.home / "state.db"
    assert not db.with_name("state.db-wal").exists()  # a rollback journal: commits go to the file itself
    before = os.stat(db)
    assert world.db.set_user_message_content(sid, mid, "summarise @notes.md about the egret") == 1
    assert os.stat(db).st_size == before.st_size
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert found_by("egret") == [mid]
    assert mid not in found_by("heron")


def test_list_content_is_decoded(lookalike_pq, world):
    sid = world.session(cwd=lookalike_pq["p_dir"])
    world.say(sid, "user", [{"type": "text", "text": "giraffe in a multimodal message"},
                            {"type": "image_url", "image_url": {"url": "data:..."}}])
    res = call(SEARCH, {"mode": "keyword", "query": "giraffe"}, session_id=lookalike_pq["asker_p"])
    assert res["results"][0]["snippet"].startswith("»") is False
    assert "giraffe" in res["results"][0]["snippet"] and "\x00json" not in res["results"][0]["snippet"]


def test_time_range(lookalike_pq):
    asker = lookalike_pq["asker_p"]
    assert call(SEARCH, {"mode": "keyword", "query": "websocket", "until": "2000-01-01"}, session_id=asker)["results"] == []
    assert call(SEARCH, {"mode": "keyword", "query": "websocket", "since": "2000-01-01"}, session_id=asker)["results"]


def test_explicit_project_argument_and_unknown_project(lookalike_pq):
    res = call(SEARCH, {"mode": "keyword", "query": "websocket", "project": "q"}, session_id=lookalike_pq["asker_p"])
    assert res["project"]["id"] == lookalike_pq["Q"] and found(res) == {lookalike_pq["sq"]}
    bad = call(SEARCH, {"mode": "keyword", "query": "websocket", "project": "nope"}, session_id=lookalike_pq["asker_p"])
    assert bad["success"] is False and "nope" in bad["error"] and bad["candidates"]


def test_bad_arguments_come_back_as_json_errors(lookalike_pq):
    for args in ({}, {"query": ""}, {"query": "x", "mode": "psychic"}, {"query": "x", "limit": "many"}):
        res = call(SEARCH, {"mode": "keyword", **args}, session_id=lookalike_pq["asker_p"])
        assert res["success"] is False and res["error"]


def test_missing_and_empty_state_db(home):
    enable_plugin(home)
    res = call(SEARCH, {"mode": "keyword", "query": "x"})
    assert res["success"] is False and res["error_code"] == "missing" and "state.db" in res["error"]
    (home / "state.db").write_bytes(b"")
    res = call(SEARCH, {"mode": "keyword", "query": "x"})
    assert res["success"] is False and res["error_code"] == "empty"
    (home / "state.db").write_bytes(b"this is not sqlite" * 100)
    res = call(SEARCH, {"mode": "keyword", "query": "x"})
    assert res["success"] is False and res["error_code"] == "corrupt"


def test_state_db_bytes_and_schema_unchanged(lookalike_pq, world):
    world.close()
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    for args in ({"query": "websocket"}, {"query": "超"}, {"query": "超时 服务端", "include_tool_output": True},
                 {"query": "ERR_CONNECTION_REFUSED", "mode": "semantic"}, {"query": "NEAR("}, {"query": ""},
                 {"query": "x", "project": "Q"}):
        call(SEARCH, {"mode": "keyword", **args}, session_id=lookalike_pq["asker_p"])
    assert db_digest(world.home / "state.db") == before


def test_plugin_connection_cannot_write(lookalike_pq, world):
    from project_history_recall.hermes import readonly as statedb

    conn = statedb.connect_readonly(world.home / "state.db")
    try:
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("CREATE TABLE x (y)")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM messages")
    finally:
        conn.close()


def test_search_while_another_process_writes(lookalike_pq, world):
    world.close()
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os
        from hermes_state import SessionDB
        db = SessionDB()
        sid = "20260901_999999_abcdef"
        db.create_session(sid, "cli", cwd={str(lookalike_pq['p_dir'])!r})
        for n in range(300):
            db.append_message(sid, "user", f"websocket concurrent write {{n}}")
        db.close()
        print(n + 1)
    """)], env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    # Searches for as long as the writer writes (a count, not a clock, so a
    # slow machine only makes the test longer).
    failures, searches = 0, 0
    while writer.poll() is None or searches < 5:
        res = call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=lookalike_pq["asker_p"])
        searches += 1
        failures += not res["success"]
    out, _ = writer.communicate(timeout=30)
    assert writer.returncode == 0 and int(out) == 300
    assert failures == 0
    res = call(SEARCH, {"mode": "keyword", "query": "concurrent"}, session_id=lookalike_pq["asker_p"])
    assert res["results"], "rows the writer committed are found"


def test_new_sessions_count_at_once_and_folder_changes_after_a_background_reread(lookalike_pq, world):

    assert call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=lookalike_pq["asker_p"])["results"] == []
    fresh = world.session(("user", "okapi sighting in P"), cwd=lookalike_pq["p_dir"])
    assert found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=lookalike_pq["asker_p"])) == {fresh}

    # Hermes moves an existing session's folder (not through this plugin).
    world.db.update_session_cwd(fresh, str(lookalike_pq["q_dir"]))
    catalog = plugin_module("scope.resolve").catalog(world.home)
    catalog.max_staleness = 0
    asker = lookalike_pq["asker_p"]
    call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker)  # may still see the old folder…
    catalog.wait_idle()
    assert call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker)["results"] == []  # …the next does not
    assert found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=lookalike_pq["asker_q"])) == {fresh}


def test_a_new_project_folder_counts_at_once(lookalike_pq, world, work):
    extra = work / "extra"
    extra.mkdir()
    sid = world.session(("user", "quokka notes"), cwd=extra)
    assert call(SEARCH, {"mode": "keyword", "query": "quokka"}, session_id=lookalike_pq["asker_p"])["results"] == []
    world.add_folder(lookalike_pq["P"], extra)
    assert found(call(SEARCH, {"mode": "keyword", "query": "quokka"}, session_id=lookalike_pq["asker_p"])) == {sid}


def test_what_a_searched_session_gains_or_loses_is_found_by_the_next_search(lookalike_pq, world):
    asker, sp = lookalike_pq["asker_p"], lookalike_pq["sp"]
    assert not found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker))
    world.say(asker, "user", "okapi?")  # Hermes writes the asking session: state.db changed, the scope did not
    assert not found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker))
    world.say(sp, "assistant", "the okapi fix landed")
    assert found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker)) == {sp}
    world.db._conn.execute("DELETE FROM messages WHERE session_id = ? AND content LIKE '%okapi%'", (sp,))
    world.db._conn.commit()
    assert not found(call(SEARCH, {"mode": "keyword", "query": "okapi"}, session_id=asker))
    assert found(call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=asker)) == {sp}


def test_an_index_grown_only_by_searches_is_merged_in_the_background(world, work, monkeypatch):
    """Each search indexes the few messages Hermes wrote since the last one itself (a commit, so an FTS5
    segment, each) and hands the keeper's thread no work. Once enough of those commits went unmerged,
    the thread merges them all the same, in its idle time, never in a search's."""
    app = work / "app"
    app.mkdir()
    sid = world.session(("user", "websocket reconnect"), cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    textindex = plugin_module("keyword.textindex")
    monkeypatch.setattr(textindex, "MERGE_AFTER_COMMITS", 3)
    merged_in, merge = [], textindex.TextIndex.merge

    def recorded(index, *args, **kw):
        merged_in.append(threading.current_thread().name)
        return merge(index, *args, **kw)

    def search_new_message(n: int) -> None:
        world.say(sid, "assistant", f"websocket retry {n}")
        assert len(found(call(SEARCH, {"mode": "keyword", "query": f"retry {n}"}, session_id=asker))) == 1
        assert keeper.wait_idle(60)

    assert found(call(SEARCH, {"mode": "keyword", "query": "websocket"}, session_id=asker)) == {sid}
    keeper = textindex.keeper(world.home)
    assert keeper.wait_idle(60)
    keeper.settle()  # whatever the first search's build left
    monkeypatch.setattr(textindex.TextIndex, "merge", recorded)
    for n in range(2):
        search_new_message(n)
    assert merged_in == []  # two commits unmerged: nothing asked of the thread
    search_new_message(2)
    assert merged_in == [keeper.thread_name]
    ran: list[str] = []
    with keeper.index.using() as conn:
        conn.set_trace_callback(ran.append)
    try:
        assert keeper.index.merge() == 0
    finally:
        with keeper.index.using() as conn:
            conn.set_trace_callback(None)
    assert ran == ["PRAGMA data_version"], ran  # merged since the last search wrote: nothing is left to merge


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-keyword-index", "hermes-indexes"])
def test_a_hit_on_a_call_alone_shows_the_tool_it_calls(world, work, keyword_index):
    """An assistant message that only calls a tool (no text) is found by its call's arguments, as in
    Hermes's own index; its snippet and its line in a window were empty. Now they name the tools it
    calls (masked as any text), and which messages are found does not change."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "list the quarterly ledger files"), cwd=app)
    call_id = world.say(sid, "assistant", None, tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls ledgerdir"}'}},
        {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "ledgerdir/q3"}'}}])
    world.say(sid, "tool", "q1.csv q2.csv", tool_name="terminal", tool_call_id="c1")
    asker = world.session(cwd=app)
    plugin_settings(world.home, keyword_index=keyword_index)
    enable_plugin(world.home)
    for mode in ("keyword", "hybrid"):
        res = call("project_history_search", {"query": "ledgerdir", "mode": mode, "context": 1}, session_id=asker)
        assert ids(res) == [call_id] if mode == "keyword" else ids(res)[0] == call_id, res
        hit = res["results"][0]
        assert hit["snippet"] == "(calls terminal, read_file)", hit
        around = call("project_history_search", {"query": "quarterly ledger", "mode": "keyword", "context": 2},
                      session_id=asker)["results"][0]["context"]
        assert [e["text"] for e in around if e["message_id"] == call_id] == ["(calls terminal, read_file)"], around


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-keyword-index", "hermes-indexes"])
def test_a_call_whose_text_is_only_blank_shows_the_tool_it_calls(world, work, keyword_index):
    """Models send blank text beside their tool calls ("\\n\\n", a space), and Hermes keeps it as the
    message's content: such a message was taken for one with text, and its snippet and its line in a
    window were blank, where a call with no text at all names its tools. Blank is no text (as
    ``str.strip`` reads it, the no-break and ideographic spaces too)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "list the quarterly ledger files"), cwd=app)
    calls = [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls ledgerdir"}'}}]
    blank = [world.say(sid, "assistant", text, tool_calls=calls) for text in ("\n\n", " ", "\t\u00a0\u3000\r\n")]
    world.say(sid, "assistant", "done, four files")
    asker = world.session(cwd=app)
    plugin_settings(world.home, keyword_index=keyword_index, semantic=False)
    enable_plugin(world.home)
    res = call("project_history_search", {"query": "ledgerdir", "mode": "keyword", "context": 3}, session_id=asker)
    assert sorted(ids(res)) == blank, res
    assert {h["snippet"] for h in hits(res)} == {"(calls terminal)"}, res
    assert [e["text"] for e in res["results"][0]["context"] if e["message_id"] in blank] == ["(calls terminal)"] * 3, res


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-keyword-index", "hermes-indexes"])
def test_a_hit_on_a_call_that_cannot_be_read_shows_a_call_all_the_same(world, work, keyword_index):
    """A message that only calls tools, its calls' JSON cut short by an importer (or not a list, or
    without a name): found by their text, its snippet and its line in a window were empty. Now they
    say it calls a tool, named by the row's ``tool_name`` where it has one, as a readable call's do."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "list the quarterly ledger files"), cwd=app)
    calls = [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls ledgerdir"}'}}]
    cut = world.say(sid, "assistant", None, tool_calls=calls)
    named = world.say(sid, "assistant", None, tool_calls=calls, tool_name="terminal")
    unnamed = world.say(sid, "assistant", None, tool_calls=calls)
    world.say(sid, "assistant", "done, four files")
    for mid, broken in ((cut, '[{"id": "c1", "function": {"name": "terminal", "arguments": "ls ledgerdir'),
                        (named, '{"call": "ls ledgerdir"}'), (unnamed, '[{"arguments": "ls ledgerdir"}]')):
        write_as_importer(world.home, "UPDATE messages SET tool_calls = ? WHERE id = ?", broken, mid)
    asker = world.session(cwd=app)
    plugin_settings(world.home, keyword_index=keyword_index, semantic=False)
    enable_plugin(world.home)
    expected = {cut: "(calls a tool)", named: "(calls terminal)", unnamed: "(calls a tool)"}
    res = call("project_history_search", {"query": "ledgerdir", "mode": "keyword", "context": 0}, session_id=asker)
    assert {h["message_id"]: h["snippet"] for h in hits(res)} == expected, res
    around = call("project_history_search", {"query": "quarterly ledger", "mode": "keyword", "context": 4},
                  session_id=asker)["results"][0]["context"]
    assert {e["message_id"]: e["text"] for e in around if e["message_id"] in expected} == expected, around
