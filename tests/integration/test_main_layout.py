"""Hermes main's state.db layout (external-content FTS over views, display_kind, hidden sessions).

Hermes main is not installable here (Python 3.14), so on 0.19.0 the fixture
takes a state.db written by its SessionDB and re-lays its search index the way
main's FTS storage v3 does (DDL as main renders it), then searches it. The
0.22 line writes that layout itself (schema 31), and marks hidden sessions and
scaffolding rows through its own SessionDB.
"""

from __future__ import annotations

import sqlite3

import pytest

from hermes_world import World, call, enable_plugin, only_on, plugin_module, plugin_settings

MAIN_FTS = """
DROP TRIGGER IF EXISTS messages_fts_insert; DROP TRIGGER IF EXISTS messages_fts_delete;
DROP TRIGGER IF EXISTS messages_fts_update; DROP TRIGGER IF EXISTS messages_fts_trigram_insert;
DROP TRIGGER IF EXISTS messages_fts_trigram_delete; DROP TRIGGER IF EXISTS messages_fts_trigram_update;
DROP TABLE messages_fts; DROP TABLE messages_fts_trigram;
ALTER TABLE messages ADD COLUMN display_kind TEXT;
CREATE VIEW messages_fts_src AS SELECT id, content, tool_name, tool_calls FROM messages;
CREATE VIEW messages_fts_trigram_src AS SELECT id, content, tool_name FROM messages WHERE role != 'tool';
CREATE VIRTUAL TABLE messages_fts USING fts5(content, tool_name, tool_calls,
    content='messages_fts_src', content_rowid='id');
CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tool_name,
    content='messages_fts_trigram_src', content_rowid='id', tokenize='trigram');
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES ('rebuild');
"""


SIMULATED = only_on((0, 19), "re-lays a 0.19.0 state.db as main does; the 0.22 line writes that layout itself")


@SIMULATED
@pytest.mark.parametrize("scan_limit", [10_000, 0], ids=["scan-small-scope", "index-big-scope"])
def test_search_on_mains_external_content_layout(home, work, monkeypatch, scan_limit):
    w = World(home)
    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    w.project("App", app)
    hit = w.session(("user", "the websocket ERR_CONNECTION_REFUSED again"), ("assistant", "数据库连接超时 fixed"),
                    cwd=app)
    hidden = w.session(("user", "websocket scaffolding row"), cwd=app)
    w.session(("user", "websocket elsewhere"), cwd=other)
    asker = w.session(cwd=app)
    w.close()
    conn = sqlite3.connect(home / "state.db")
    conn.executescript(MAIN_FTS)
    conn.execute("UPDATE messages SET display_kind = 'hidden' WHERE session_id = ?", (hidden,))
    conn.commit()
    conn.close()
    enable_plugin(home)
    monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", scan_limit)

    from project_history_recall.hermes import readonly, statedb

    ro = readonly.connect_readonly(home / "state.db")
    shape = statedb.inspect(ro, home / "state.db")
    ro.close()
    assert shape.words_fts == "messages_fts" and shape.trigram_fts and not shape.trigram_has_tools
    assert shape.has_display_kind

    for query in ("websocket", "ERR_CONNECTION_REFUSED", "超时", "数据库连接超时"):
        res = call("project_history_search", {"query": query}, session_id=asker)
        assert res["success"], res
        assert {r["session_id"] for r in res["results"]} == {hit}, query


# Main's sessions table also has ``hidden`` (a chat hidden from every list, still resumable).
MAIN_SESSIONS = "ALTER TABLE sessions ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;"


def embedded(home) -> set[tuple[str, int]]:
    """(session, message) of every vector the plugin stored."""
    conn = sqlite3.connect(home / "project-history-recall" / "embeddings.db")
    try:
        return set(conn.execute("SELECT DISTINCT session_id, message_id FROM chunks"))
    finally:
        conn.close()


@pytest.mark.parametrize("layout", [
    pytest.param("0.19.0", marks=only_on((0, 19), "0.19.0 has no hidden sessions or scaffolding rows")),
    pytest.param("main", marks=SIMULATED),
    pytest.param("0.22", marks=only_on((0, 22), "Hermes 0.22's own SessionDB marks them")),
])
def test_project_history_holds_what_hermes_session_search_shows(home, work, layout):
    """Per kind, as Hermes's own session_search: archived, hidden, subagent, integration (tool)
    and kanban sessions and display_kind='hidden' rows are not searched (nor embedded); cron runs are."""
    w = World(home)
    app = work / "app"
    app.mkdir()
    w.project("App", app)
    chat = w.session(("user", "the okapi migration plan"), ("assistant", "okapi tables move first"), cwd=app)
    cron = w.session(("user", "okapi nightly report"), cwd=app, source="cron")
    archived = w.session(("user", "okapi notes I archived"), cwd=app)
    w.db.set_session_archived(archived, True)
    # Main copies the parent's folder into a subagent's row; 0.19.0 leaves it empty (inherited anyway).
    subagent = w.session(("assistant", "okapi found by a subagent"), cwd=app, parent=chat, source="subagent")
    delegated = "20260901_999998_00aaaa"
    w.db.create_session(delegated, "desktop", model="m", model_config={"_delegate_from": chat}, cwd=str(app),
                        parent_session_id=chat)
    w.say(delegated, "assistant", "okapi from a delegated run")
    w.session(("user", "okapi from an integration"), cwd=app, source="tool")
    w.session(("user", "okapi kanban worker"), cwd=app, source="kanban")
    hidden = w.session(("user", "okapi in a chat hidden from the lists"), cwd=app)
    scaffold = w.session(("user", "okapi shown to the person"), cwd=app)
    if layout == "0.22":
        w.db.set_session_hidden(hidden, True)
        scaffold_row = w.say(scaffold, "user", "okapi skill scaffolding for the model only", display_kind="hidden")
    else:
        scaffold_row = w.say(scaffold, "user", "okapi skill scaffolding for the model only")
    asker = w.session(cwd=app)
    w.close()
    expected = {chat, cron, hidden, scaffold}
    if layout == "main":
        conn = sqlite3.connect(home / "state.db")
        conn.executescript(MAIN_FTS + MAIN_SESSIONS)
        conn.execute("UPDATE sessions SET hidden = 1 WHERE id = ?", (hidden,))
        conn.execute("UPDATE messages SET display_kind = 'hidden' WHERE id = ?", (scaffold_row,))
        conn.commit()
        conn.close()
    if layout != "0.19.0":
        expected.discard(hidden)
    enable_plugin(home)

    res = call("project_history_search", {"query": "okapi", "mode": "keyword", "limit": 50}, session_id=asker)
    assert {r["session_id"] for r in res["results"]} == expected, res
    assert res["sessions_in_scope"] == len(expected)
    for mode in ("hybrid", "semantic"):
        res = call("project_history_search", {"query": "okapi", "mode": mode, "limit": 50}, session_id=asker)
        assert res["success"] and res["semantic_status"] == "ready", res
        assert {r["session_id"] for r in res["results"]} <= expected
        if layout != "0.19.0":
            assert scaffold_row not in {r["message_id"] for r in res["results"]}
    vectors = embedded(home)
    assert {sid for sid, _ in vectors} == expected
    assert ((scaffold, scaffold_row) in vectors) == (layout == "0.19.0")
    # Hidden from search, still in the project: a subagent run searches its conversation's project.
    res = call("project_history_search", {"query": "okapi", "mode": "keyword"}, session_id=subagent)
    assert res["project"]["name"] == "App" and chat not in {r["session_id"] for r in res["results"]}


def test_archiving_a_session_takes_it_out_after_the_background_reread(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    chat = world.session(("user", "okapi in a chat"), cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home)
    catalog = plugin_module("scope.resolve").catalog(world.home)
    assert {r["session_id"] for r in call("project_history_search", {"query": "okapi", "mode": "keyword"},
                                          session_id=asker)["results"]} == {chat}
    world.db.set_session_archived(chat, True)
    catalog.max_staleness = 0
    call("project_history_search", {"query": "okapi", "mode": "keyword"}, session_id=asker)  # may still see it…
    catalog.wait_idle()
    res = call("project_history_search", {"query": "okapi", "mode": "keyword"}, session_id=asker)
    assert res["results"] == [] and res["sessions_in_scope"] == 0  # …the next does not
    world.db.set_session_archived(chat, False)
    call("project_history_search", {"query": "okapi", "mode": "keyword"}, session_id=asker)
    catalog.wait_idle()
    res = call("project_history_search", {"query": "okapi", "mode": "keyword"}, session_id=asker)
    assert {r["session_id"] for r in res["results"]} == {chat}


@pytest.mark.parametrize("keyword_index", [True, False], ids=["own-index", "hermes-indexes"])
@only_on((0, 22), "SessionDB.set_latest_matching_message_display_kind, which marks a written row hidden in place")
def test_a_row_hermes_hides_after_writing_it_ranks_as_a_new_process_would(world, work, keyword_index):
    """Hermes 0.22's TUI gateway stamps a synthesized turn's display_kind on its user row after the
    turn is written ('hidden' when the turn is muted; a fallback for a row written without it): the
    session's row count, last id and active rows stay as they were, and so did the message lengths
    kept for BM25 (``keyword.lengths``). Here whether the long row counts makes the scope's lengths
    unequal or not, which decides the two hits' order: the search must order them as a process that
    never saw the row shown does."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(cwd=app)
    for i in range(6):
        world.say(sid, "user", f"short note {i} about nothing")
        world.say(sid, "assistant", f"reply {i} ok")
    world.say(sid, "user", "okapi seen near the river bank today")
    world.say(sid, "assistant", "the okapi okapi okapi was in the zoo with " + " ".join(f"w{i}" for i in range(40)))
    synthesized = "wake-up notice " + "lorem ipsum dolor sit amet " * 200
    world.say(sid, "user", synthesized)
    asker = world.session(cwd=app)
    plugin_settings(world.home, keyword_index=keyword_index, semantic=False)
    enable_plugin(world.home)

    def order() -> list[int]:
        res = call("project_history_search", {"query": "okapi", "mode": "keyword", "context": 0}, session_id=asker)
        return [h["message_id"] for r in res["results"] for h in [r, *r.get("more_hits", [])]]

    before = order()
    assert world.db.set_latest_matching_message_display_kind(sid, role="user", content=synthesized,
                                                             display_kind="hidden")
    after = order()
    plugin_module("home").Home.of(world.home).slot("keyword.lengths", lambda _home: None)._kept.clear()
    assert after == order() == before and len(before) == 2
