"""Hermes main's state.db layout (external-content FTS over views, display_kind).

Hermes main is not installable here (Python 3.14), so the fixture takes a
state.db written by 0.19.0's SessionDB and re-lays its search index the way
main's FTS storage v3 does (DDL as main renders it), then searches it.
"""

from __future__ import annotations

import sqlite3

import pytest

from hermes_world import World, call, enable_plugin, plugin_module

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
    monkeypatch.setattr(plugin_module("keyword"), "SCAN_LIMIT", scan_limit)

    from project_history_recall import statedb

    ro = statedb.connect_readonly(home / "state.db")
    shape = statedb.inspect(ro, home / "state.db")
    ro.close()
    assert shape.words_fts == "messages_fts" and shape.trigram_fts and not shape.trigram_has_tools
    assert shape.has_display_kind

    for query in ("websocket", "ERR_CONNECTION_REFUSED", "超时", "数据库连接超时"):
        res = call("project_history_search", {"query": query}, session_id=asker)
        assert res["success"], res
        assert {r["session_id"] for r in res["results"]} == {hit}, query
