"""A home Hermes 0.19.0 wrote, searched (the plugin's indexes built), then opened by the 0.22 line.

0.22's SessionDB migrates state.db from schema 22 to 31 on its first open: it adds columns
(``display_kind``, ``message_uid`` minted onto every old row, ``hidden``…), rebuilds two usage
tables, narrows the FTS update triggers, keeps the inline FTS layout and keeps WAL. Message ids
and texts stay. A process that searched before (a gateway left running while another process
upgraded) goes on with its connection and its indexes; the search after the migration must name
the same messages, find what 0.22 writes next, and leave state.db as Hermes left it.

The home starts from 0.19.0's own DDL (``tests/hermes_0_19_state.sql``, its SessionDB's schema),
with rows written as 0.19.0's ``append_message`` writes them; 0.22's own SessionDB then migrates it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import hermes_state
import pytest

from hermes_world import (call, db_digest, enable_plugin, found, new_session_id, only_on, plugin_module,
                          plugin_settings, wait_idle)

DDL_0_19 = Path(__file__).parent.parent / "hermes_0_19_state.sql"
SEARCH = "project_history_search"

UPGRADE = only_on((0, 22), "0.22's SessionDB migrates a state.db Hermes 0.19.0 wrote")


def home_of_0_19(home: Path, sessions: dict[str, tuple[Path | None, list[tuple[str, str]]]]) -> dict[str, str]:
    """state.db as Hermes 0.19.0 left it: its schema (22, WAL) and one session per entry (its
    folder, its messages), written as its SessionDB writes them. The session ids by name."""
    conn = sqlite3.connect(home / "state.db")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(DDL_0_19.read_text(encoding="utf-8"))
    clock = 1_788_000_000.0
    ids = {}
    for name, (cwd, messages) in sessions.items():
        sid = ids[name] = new_session_id()
        clock += 60
        conn.execute("INSERT INTO sessions (id, source, model, cwd, started_at) VALUES (?, 'cli', 'test/model', ?, ?)",
                     (sid, str(cwd) if cwd else None, clock))
        for role, text in messages:
            clock += 30
            conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                         (sid, role, text, clock))
            conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,))
    conn.commit()
    conn.close()
    return ids


def rows(home: Path) -> dict[int, tuple[str, str]]:
    with closing(sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)) as conn:
        return {mid: (sid, text) for mid, sid, text in conn.execute("SELECT id, session_id, content FROM messages")}


def derived(home: Path) -> dict[str, set]:
    """The messages each of the plugin's indexes holds (keywords.db's (row, message), embeddings.db's
    (session, message, row)), and the files' inodes: a rebuild starts a new file."""
    data = home / "project-history-recall"
    with closing(sqlite3.connect(f"file:{data / 'keywords.db'}?mode=ro", uri=True)) as conn:
        words = set(conn.execute("SELECT rowid, message_id FROM docs"))
    with closing(sqlite3.connect(f"file:{data / 'embeddings.db'}?mode=ro", uri=True)) as conn:
        vectors = set(conn.execute("SELECT session_id, message_id, rowid FROM chunks"))
    files = {(data / name).stat().st_ino for name in ("keywords.db", "embeddings.db")}
    return {"keywords": words, "embeddings": vectors, "files": files}


def named(res: dict, home: Path) -> set[tuple[str, int, str]]:
    """(session, message, text) of every hit, read back from state.db by the hit's ids: each names a
    message of its own session there."""
    held = rows(home)
    out = set()
    for r in res["results"]:
        assert r["link"].endswith(r["session_id"]), r
        for hit in [r, *r.get("more_hits", [])]:
            sid, text = held[hit["message_id"]]
            assert sid == r["session_id"], (hit, r)
            out.add((sid, hit["message_id"], text))
    return out


def read_around(found: set[tuple[str, int, str]], home: Path) -> None:
    """Hermes reads each hit's message back around its id (what ``around_message_id`` asks)."""
    db = hermes_state.SessionDB(db_path=home / "state.db")
    try:
        for sid, mid, _ in found:
            around = db.get_messages_around(sid, mid, window=1)["window"]
            assert any(m["id"] == mid for m in around), (sid, mid, around)
    finally:
        db.close()


QUERY = "websocket reconnect backoff"


@UPGRADE
def test_search_after_hermes_migrates_a_0_19_home(home, work):
    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    ids = home_of_0_19(home, {
        "ws": (app, [("user", "the websocket reconnect loop spins after the proxy drops"),
                     ("assistant", "Added exponential backoff to the websocket client so it reconnects.")]),
        "pay": (app, [("user", "the payment callback kept timing out"),
                      ("assistant", "Raised the wait to fifteen seconds.")]),
        "elsewhere": (other, [("user", "websocket reconnect in another project")]),
        "asker": (app, []),
    })
    from hermes_cli import projects_db

    with projects_db.connect_closing(home / "projects.db") as conn:
        projects_db.create_project(conn, name="App", folders=[str(app)])
    enable_plugin(home)

    def search(mode: str) -> dict:
        res = call(SEARCH, {"query": QUERY, "mode": mode}, session_id=ids["asker"])
        assert res["success"], res
        assert ids["elsewhere"] not in {r["session_id"] for r in res["results"]}, res
        return res

    before = {mode: named(search(mode), home) for mode in ("keyword", "semantic")}
    assert all(ids["ws"] in {sid for sid, _, _ in found} for found in before.values()), before
    wait_idle()
    held, indexed = rows(home), derived(home)

    # Hermes 0.22's first open migrates state.db; it then writes a turn, and a scaffolding row.
    db = hermes_state.SessionDB(db_path=home / "state.db")
    try:
        with closing(sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)) as conn:
            assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 31
            assert "display_kind" in {c[1] for c in conn.execute("PRAGMA table_info(messages)")}
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert rows(home) == held  # every message keeps its id and its text
        later = db.append_message(ids["pay"], "user", "the websocket reconnect backoff also broke the payment page",
                                  timestamp=1_788_100_000.0)
        hidden = db.append_message(ids["pay"], "user", "scaffolding: websocket reconnect backoff",
                                   timestamp=1_788_100_030.0, display_kind="hidden")
    finally:
        db.close()
    migrated = db_digest(home / "state.db")

    # The same process searches on: the hits of before name the same messages, what 0.22 wrote
    # since is found and its scaffolding is not; the indexes were kept, not rebuilt.
    for mode, earlier in before.items():
        found = named(search(mode), home)
        read_around(found, home)
        assert earlier <= found and later in {mid for _, mid, _ in found}, (mode, earlier, found)
        assert hidden not in {mid for _, mid, _ in found}, (mode, found)
    wait_idle()
    now = derived(home)
    assert indexed["files"] == now["files"], (indexed, now)
    assert indexed["keywords"] <= now["keywords"] and indexed["embeddings"] <= now["embeddings"], (indexed, now)
    assert {mid for _, mid, _ in now["embeddings"]} <= set(rows(home))
    assert db_digest(home / "state.db") == migrated  # the plugin wrote nothing to state.db

    # ``hermes sessions optimize-storage``: the inline search index becomes external-content, then
    # VACUUM. Message ids are the rows' keys, so they hold, and so do the answers.
    db = hermes_state.SessionDB(db_path=home / "state.db")
    try:
        assert db.fts_optimize_available()  # the 0.19 layout stayed until asked
        assert db.optimize_fts_storage(vacuum=True).get("ok", True), "optimize-storage failed"
        assert not db.fts_optimize_available()
        latest = db.append_message(ids["ws"], "user", "websocket reconnect backoff capped at thirty seconds",
                                   timestamp=1_788_200_000.0)
    finally:
        db.close()
    assert {mid: text for mid, text in rows(home).items() if mid in held} == held
    for mode, earlier in before.items():
        found = named(search(mode), home)
        read_around(found, home)
        assert earlier <= found and {later, latest} <= {mid for _, mid, _ in found}, (mode, earlier, found)
        assert hidden not in {mid for _, mid, _ in found}, (mode, found)


def _schema(path: Path) -> set[tuple[str, str, str]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return set(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name != 'sqlite_sequence'"))


@only_on((0, 19), "the DDL the 0.22 tests start from is 0.19.0's own")
def test_the_0_19_ddl_is_what_hermes_0_19_creates(tmp_path):
    hermes_state.SessionDB(db_path=tmp_path / "made.db").close()
    home_of_0_19(tmp_path, {})
    assert _schema(tmp_path / "state.db") == _schema(tmp_path / "made.db")
    with closing(sqlite3.connect(tmp_path / "state.db")) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(hermes_state.SCHEMA_VERSION,)]


class _Interrupted(Exception):
    """The user's Ctrl-C in ``hermes sessions optimize-storage`` (it says it resumes)."""


@UPGRADE
@pytest.mark.parametrize("scan_limit", [10_000, 0], ids=["small-scope", "big-scope"])
def test_optimize_storage_of_a_migrated_home_stopped_half_way(home, work, monkeypatch, scan_limit):
    """The 0.19 home's inline search index set aside by ``optimize-storage`` and the new one filled
    ten rows of the 34 before a Ctrl-C: without the plugin's own keyword index, its keyword search
    reads Hermes's indexes, and the rows not in them yet as substrings, as Hermes's own search does."""
    app = work / "app"
    app.mkdir()
    said = "pelican harbour: ERR_PELICAN_DOCK 支付回调超时"
    ids = home_of_0_19(home, {
        "early": (app, [("user", said)]),
        **{f"filler{n}": (app, [("user", f"filler talk number {n} about nothing much")]) for n in range(30)},
        "late": (app, [("user", said)]),
        "asker": (app, []),
    })
    from hermes_cli import projects_db

    with projects_db.connect_closing(home / "projects.db") as conn:
        projects_db.create_project(conn, name="App", folders=[str(app)])
    db = hermes_state.SessionDB(db_path=home / "state.db")
    try:
        assert db.fts_optimize_available()
        db._FTS_REBUILD_CHUNK_ROWS = 5

        def progress(info):
            if info["phase"] == "backfill" and info["indexed"] >= 10:
                raise _Interrupted

        with pytest.raises(_Interrupted):
            db.optimize_fts_storage(progress_cb=progress, vacuum=False)
        assert db.fts_rebuild_status()["indexed"] == 10
        assert {m["session_id"] for m in db.search_messages("pelican")} == {ids["early"], ids["late"]}
    finally:
        db.close()
    plugin_settings(home, keyword_index=False, semantic=False)
    enable_plugin(home)
    monkeypatch.setattr(plugin_module("keyword.engine"), "SCAN_LIMIT", scan_limit)
    before = db_digest(home / "state.db")

    for query in ("pelican harbour", "pelicans", "ERR_PELICAN_DOCK", "支付回调超时"):
        res = call(SEARCH, {"query": query, "mode": "keyword"}, session_id=ids["asker"])
        assert found(res) == {ids["early"], ids["late"]}, (query, res)
    assert db_digest(home / "state.db") == before
