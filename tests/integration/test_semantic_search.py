"""Semantic and hybrid search through Hermes's real plugin manager and dispatch (Hermes 0.19.0).

Searches wait for indexing (the test settings give them a long budget), so
what is found never depends on this machine's speed; where a test needs the
background indexer to be done, it waits for it explicitly.
"""

from __future__ import annotations

import json
import signal
import sqlite3

import pytest

from cli_runs import index_signalled
from hermes_world import (EN_DOCS, ZH_DOCS, ask, call, checkpoint, db_digest, enable_plugin, ids, plugin_module,
                          plugin_settings, semantic_docs, wait_idle, write_as_importer)

SEARCH = "project_history_search"

@pytest.fixture
def docs(world, work):
    return semantic_docs(world, work)


def test_english_paraphrase_found_by_meaning_not_by_words(docs):
    query = "the release crashed since the box had too little RAM"
    res = ask(docs, "EN", query)
    assert res["semantic_status"] == "ready" and res["searched_with"] == "semantic"
    assert ids(res)[0] == docs[("EN", "oom")][1]
    assert res["results"][0]["score_source"] == "semantic"
    assert docs[("EN", "oom")][1] not in ids(ask(docs, "EN", query, "keyword"))
    hybrid = ask(docs, "EN", query, "hybrid")
    assert hybrid["searched_with"] == "keyword+semantic" and ids(hybrid)[0] == docs[("EN", "oom")][1]


def test_chinese_paraphrase(docs):
    query = "发布的时候为什么崩溃"
    assert ids(ask(docs, "ZH", query))[0] == docs[("ZH", "oom")][1]
    assert docs[("ZH", "oom")][1] not in ids(ask(docs, "ZH", query, "keyword"))


def test_chinese_question_finds_english_answer_and_back(docs):
    zh_to_en = "我们怎么处理付款通知等太久的问题"
    assert ids(ask(docs, "EN", zh_to_en))[0] == docs[("EN", "pay")][1]
    assert docs[("EN", "pay")][1] not in ids(ask(docs, "EN", zh_to_en, "keyword"))
    en_to_zh = "how did we fix the payment notification waiting too long"
    assert ids(ask(docs, "ZH", en_to_zh))[0] == docs[("ZH", "pay")][1]
    assert docs[("ZH", "pay")][1] not in ids(ask(docs, "ZH", en_to_zh, "keyword"))


def test_exact_error_code_is_found_by_keyword_in_hybrid(docs):
    res = ask(docs, "EN", "ERR_CONNECTION_REFUSED", "hybrid")
    assert res["searched_with"] == "keyword+semantic"
    assert ids(res)[0] == docs[("EN", "code")][1]
    assert res["results"][0]["score_source"] in ("keyword", "both")
    assert {r["score_source"] for r in res["results"][1:]} <= {"semantic"}


def test_fusion_marks_hits_both_engines_found(docs):
    res = ask(docs, "EN", "websocket reconnect backoff", "hybrid")
    first = res["results"][0]
    assert first["message_id"] == docs[("EN", "ws")][1] and first["score_source"] == "both"
    assert all(r["score_source"] == "semantic" for r in res["results"][1:])


def test_projects_stay_apart_in_semantic_search(docs):
    en_sessions = {docs[("EN", k)][0] for k in EN_DOCS}
    res = ask(docs, "EN", "猫咪打翻了花瓶")  # only ZH has it
    assert {r["session_id"] for r in res["results"]} <= en_sessions


def test_status_is_truthful(docs, world):
    from project_history_recall import overview
    from project_history_recall.hermes.host import Caller

    caller = Caller.of(docs[("EN", "asker")])
    before = overview.status(world.home, caller)
    assert before["semantic_status"] == "indexing" and before["semantic_index"]["sessions_indexed"] == 0
    plugin_settings(world.home, index_budget_ms=0)
    res = ask(docs, "EN", "server memory", "hybrid")
    # With no time to wait, whatever the search reports must match what it did.
    assert res["semantic_status"] in ("indexing", "partial", "ready")
    assert res["searched_with"] == ("keyword+semantic" if res["semantic_status"] != "indexing" else "keyword")
    plugin_module("semantic.embedders").load(plugin_module("settings").load(world.home))  # model loaded
    ask(docs, "EN", "server memory", "hybrid")  # queues the indexing if the model was still loading
    wait_idle(300)
    assert overview.status(world.home, caller)["semantic_status"] == "ready"
    world.session(("user", "a brand new note about dark mode"), cwd=docs["dirs"]["EN"])
    after = overview.status(world.home, caller)
    assert after["semantic_status"] == "partial" and after["semantic_index"]["sessions_pending"] == 1
    plugin_settings(world.home)
    assert ask(docs, "EN", "dark mode")["semantic_status"] == "ready"
    plugin_settings(world.home, semantic=False)
    res = ask(docs, "EN", "server memory", "hybrid")
    assert res["semantic_status"] == "disabled" and res["searched_with"] == "keyword" and res["results"]
    plugin_settings(world.home, embedder="openai")
    res = ask(docs, "EN", "server memory", "hybrid")
    # a remote embedder with no consent on record: keyword results, and the question to ask
    assert res["semantic_status"] == "consent_required" and res["consent"]["service"] == "https://api.openai.com/v1"
    assert res["searched_with"] == "keyword" and res["results"]
    res = ask(docs, "EN", "the release crashed since the box had too little RAM", "semantic")
    assert res["searched_with"] == "keyword" and res["semantic_reason"]


def test_new_message_is_picked_up_by_the_next_search(docs, world):
    assert ask(docs, "EN", "server memory")["semantic_status"] == "ready"
    sid = docs[("EN", "css")][0]
    new_id = world.say(sid, "assistant", "Dark mode now follows the operating system's colour scheme.")
    res = ask(docs, "EN", "does the night theme match the OS setting")
    # Scored in context, the new reply and the message before it share the top.
    assert new_id in ids(res)[:2] and res["semantic_status"] == "ready"


def test_a_reply_added_later_is_embedded_after_what_it_answers(docs, world):
    """The messages before a reply are read from state.db when it arrives after its session was
    indexed, those with no text passed over; what is stored with its vector is its own text's hash."""
    import numpy as np

    sid, _first = docs[("EN", "css")]
    assert ask(docs, "EN", "server memory")["semantic_status"] == "ready"
    world.say(sid, "assistant", "")
    reply = world.say(sid, "user", "Yes, last week.")
    assert ask(docs, "EN", "server memory")["semantic_status"] == "ready"
    wait_idle()
    use = plugin_module("semantic.embedders.local").UniversalSentenceEncoder(800, 100)
    store = plugin_module("semantic.kept").of(world.home).vector_store()
    (rowid,) = [r[0] for page in store.rows(use.fingerprint, [sid]) for r in page if r[2] == reply]
    stored, digest = store.vectors([rowid])[rowid]
    expected = use.embed_documents([f"{EN_DOCS['css']}\nYes, last week."])[0]
    assert np.allclose(np.frombuffer(stored, dtype=np.float16), expected, atol=2e-3)
    assert digest == plugin_module("semantic.chunking").content_hash("Yes, last week.")


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-index", "hermes-indexes"])
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_a_search_counts_its_sessions_rows_once(docs, world, keyword_index, mode):
    """After Hermes wrote, a search asks state.db once for its scope's row counts, last ids and
    active rows, whichever of the keyword index's check, the lengths of the scope's messages
    (on Hermes's indexes) and the semantic index's check need them: each is a pass over Hermes's
    index of the scope's rows."""
    plugin_settings(world.home, keyword_index=keyword_index)
    assert ask(docs, "EN", "server memory", "hybrid")["semantic_status"] == "ready"
    wait_idle()
    # The search's own connection (Hermes dispatches in this thread), every statement it runs.
    conn = plugin_module("hermes.statedb")._local.pool[str(plugin_module("hermes.paths").state_db_path(world.home))][0]
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    world.say(docs[("EN", "css")][0], "assistant", "Dark mode now follows the operating system's colour scheme.")
    res = ask(docs, "EN", "server memory", mode)
    conn.set_trace_callback(None)
    assert res["success"] and res["results"], res
    assert len([s for s in statements if "count(*), max(id)" in s]) == 1, statements


def _rewrite_user_row(world, sid: str, mid: int, text: str) -> None:
    """As Hermes 0.22's turn prologue rewrites the user row it wrote on submit (an @-file expanded);
    0.19 has no such method: its UPDATE, through a plain connection as an importer would."""
    if hasattr(world.db, "set_user_message_content"):
        assert world.db.set_user_message_content(sid, mid, text) == 1
    else:
        write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ? AND session_id = ? "
                          "AND role = 'user' AND active = 1", text, mid, sid)


def test_changed_message_is_re_embedded(docs, world):
    """A row Hermes rewrote in place, as long as it was: both indexes check the rows Hermes may still
    rewrite before the search, so the first search after the edit finds it by its new words, and
    no search by its old ones."""
    sid, mid = docs[("EN", "refund")]
    old = "money back to customers overnight"
    assert ids(ask(docs, "EN", old))[0] == mid
    new = "The office plants are watered every morning by a little robot."
    assert len(new) == len(EN_DOCS["refund"])
    _rewrite_user_row(world, sid, mid, new)
    assert ids(ask(docs, "EN", "a machine takes care of the greenery"))[0] == mid
    assert ids(ask(docs, "EN", "plants watered robot", "keyword")) == [mid]
    assert ids(ask(docs, "EN", "office plants watered by a robot", "hybrid"))[0] == mid
    for mode in ("semantic", "hybrid"):
        assert mid not in ids(ask(docs, "EN", old, mode)), mode
    assert mid not in ids(ask(docs, "EN", "refunds scheduled", "keyword"))


def test_an_edit_elsewhere_is_dropped_when_it_comes_up(docs, world):
    """An importer's edit of an older row (past the rows Hermes may still rewrite): the stale vector still
    ranks the message first, but its text no longer says that: the hit is dropped and the session re-checked."""
    sid, mid = docs[("EN", "refund")]
    assert ids(ask(docs, "EN", "money back to customers overnight"))[0] == mid
    world.session(*[("user", f"filler {i}") for i in range(plugin_module("hermes.changes").RECENT_ROWS)],
                  cwd=docs["dirs"]["ZH"])
    write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?",
                      "The office plants are watered by a robot every morning.", mid)
    assert mid not in ids(ask(docs, "EN", "money back to customers overnight"))
    assert ids(ask(docs, "EN", "a machine takes care of the greenery"))[0] == mid


# The transcript repair's fill of a blank assistant row (an interrupted stream), a compare-and-set on the content.
FILL = "UPDATE messages SET content = ? WHERE id = ? AND session_id = ? AND content IS ?"
FILLED = "The database migration was rolled back because the new index locked the orders table."


def _blank_reply(world, sid: str) -> tuple[int, object]:
    """A blank assistant row, as a stream cut off leaves it, and its content as stored."""
    mid = world.say(sid, "assistant", "")
    conn = sqlite3.connect(world.home / "state.db")
    try:
        return mid, conn.execute("SELECT content FROM messages WHERE id = ?", (mid,)).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_a_blank_reply_filled_in_place_is_found_by_its_words(docs, world, mode):
    """A blank row is never a hit, so only the check of the rows Hermes may still rewrite finds its fill."""
    sid, _ = docs[("EN", "css")]
    blank, stored = _blank_reply(world, sid)
    query = "orders table migration rolled back"
    assert blank not in ids(ask(docs, "EN", query, mode))  # indexed blank
    write_as_importer(world.home, FILL, FILLED, blank, sid, stored)
    assert ids(ask(docs, "EN", query, mode))[0] == blank


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_a_blank_reply_filled_when_its_session_resumes_is_found(docs, world, mode):
    """The repair fills the row when the session is resumed, however many rows Hermes wrote since,
    in the same write as the resumed turn's first row."""
    sid, _ = docs[("EN", "css")]
    blank, stored = _blank_reply(world, sid)
    query = "orders table migration rolled back"
    assert blank not in ids(ask(docs, "EN", query, mode))
    world.session(*[("user", f"filler {i}") for i in range(plugin_module("hermes.changes").RECENT_ROWS)],
                  cwd=docs["dirs"]["ZH"])
    write_as_importer(world.home, FILL, FILLED, blank, sid, stored)
    world.say(sid, "user", "go on")  # the resumed turn (Hermes's one write there; searches come after both)
    assert blank in ids(ask(docs, "EN", query, mode))


def test_deleted_session_leaves_results_and_the_index(docs, world):
    sid, mid = docs[("EN", "oom")]
    assert mid in ids(ask(docs, "EN", "the release crashed since the box had too little RAM"))
    world.db.delete_session(sid)
    assert mid not in ids(ask(docs, "EN", "the release crashed since the box had too little RAM"))
    from project_history_recall.ui import cli

    assert cli.main(["--home", str(world.home), "index", "--all", "--json"]) == 0
    db = sqlite3.connect(world.home / "project-history-recall" / "embeddings.db")
    try:
        assert db.execute("SELECT count(*) FROM chunks WHERE session_id = ?", (sid,)).fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    finally:
        db.close()


def test_move_keeps_vectors(docs, world):
    sid, mid = docs[("EN", "oom")]
    query = "the release crashed since the box had too little RAM"
    assert ids(ask(docs, "EN", query))[0] == mid
    db = sqlite3.connect(world.home / "project-history-recall" / "embeddings.db")
    before = db.execute("SELECT rowid, vector FROM chunks WHERE session_id = ?", (sid,)).fetchall()
    res = call("project_session_move", {"project": "ZH", "session": sid}, session_id=docs[("EN", "asker")])
    assert res["success"], res
    assert mid not in ids(ask(docs, "EN", query))
    assert mid in ids(ask(docs, "ZH", query))
    wait_idle(300)
    after = db.execute("SELECT rowid, vector FROM chunks WHERE session_id = ?", (sid,)).fetchall()
    db.close()
    assert before and after == before


def test_killed_indexing_run_resumes(world, work):
    folder = work / "big"
    folder.mkdir()
    world.project("Big", folder)
    sessions = [world.session(*[("user", f"note {i}-{j}: {EN_DOCS[k]}") for j, k in enumerate(EN_DOCS)], cwd=folder)
                for i in range(6)]
    asker = world.session(cwd=folder)
    plugin_settings(world.home, batch_size=2)
    proc = index_signalled(world.home, folder, signal.SIGKILL, after_batches=7)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    db = sqlite3.connect(world.home / "project-history-recall" / "embeddings.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert 0 < stored < 6 * len(EN_DOCS)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "the release crashed since the box had too little RAM", "mode": "semantic"},
               session_id=asker)
    assert res["semantic_status"] == "ready" and res["results"]
    rows = db.execute("SELECT count(*), count(DISTINCT message_id) FROM chunks").fetchone()
    db.close()
    assert rows == (6 * len(EN_DOCS), 6 * len(EN_DOCS))
    assert len(sessions) == 6


@pytest.mark.parametrize("damage", ["garbage", "deleted"])
def test_broken_or_deleted_index_is_rebuilt_and_keyword_keeps_working(docs, world, damage):
    query = "the release crashed since the box had too little RAM"
    assert ids(ask(docs, "EN", query))[0] == docs[("EN", "oom")][1]
    path = world.home / "project-history-recall" / "embeddings.db"
    for suffix in ("-wal", "-shm"):
        (path.parent / (path.name + suffix)).unlink(missing_ok=True)
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 400)
    else:
        path.unlink()
    res = ask(docs, "EN", "websocket backoff", "hybrid")
    assert res["success"] and res["results"] and res["results"][0]["message_id"] == docs[("EN", "ws")][1]
    assert res["semantic_status"] == "ready"
    if damage == "garbage":
        assert "rebuilt" in res["semantic_reason"]
        assert list(path.parent.glob("embeddings.db.broken-*"))
    assert ids(ask(docs, "EN", query))[0] == docs[("EN", "oom")][1]


def test_index_command_builds_then_finds_nothing_to_do(docs, world, capsys):
    from project_history_recall.ui import cli

    assert cli.main(["--home", str(world.home), "index", "--all", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["success"] and first["totals"]["chunks_embedded"] == len(EN_DOCS) + len(ZH_DOCS)
    assert cli.main(["--home", str(world.home), "index", "--all", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["totals"]["chunks_embedded"] == 0 and again["totals"]["messages_changed"] == 0
    assert cli.main(["--home", str(world.home), "index", str(docs["dirs"]["ZH"])]) == 0
    assert "Indexed 1 project(s)" in capsys.readouterr().out


def test_state_db_unchanged_by_indexing(docs, world):
    world.close()
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    ask(docs, "EN", "server memory", "hybrid")
    ask(docs, "ZH", "内存", "semantic")
    from project_history_recall.ui import cli

    assert cli.main(["--home", str(world.home), "index", "--all", "--json"]) == 0
    wait_idle(300)
    assert db_digest(world.home / "state.db") == before


@pytest.mark.parametrize("query", ["\ud800 memory", "x" * 5000, "\x00\x00", "NEAR((", "🙂🙂🙂", "内存" * 900])
def test_hostile_queries_through_the_semantic_path(docs, query):
    for mode in ("semantic", "hybrid"):
        res = ask(docs, "EN", query, mode)
        if res["success"]:
            assert res["semantic_status"] == "ready", res
        else:  # nothing searchable in it: a clear error, never a crash
            assert res["error_code"] == "bad_argument" and res["error"], res
