"""The plugin's own derived files (``embeddings.db``, ``keywords.db``) damaged or unwritable.

Both are rebuilt from state.db at any time, so damage to one is repaired
(the file is moved aside, one copy kept for inspection, and built again),
searches go on meanwhile, and no error ever names state.db for a fault of
the plugin's own files. The damage is done the way it happens: pages
overwritten with the header left intact, a file cut short in place while a
process holds it open, and a file-size limit (EFBIG, which SQLite reports
as a "disk I/O error").
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_runs import cli_process
from hermes_world import (PLUGIN_KEY, background_workers, call, checkpoint, db_digest, enable_plugin, ids,
                          plugin_settings, wait_idle, write_as_importer)
from write_lock import WriteLock

SEARCH = "project_history_search"
TOPICS = ["websocket reconnect backoff", "payment callback timeout", "invoice exporter parallel tests",
          "navigation bar css classes", "server ran out of memory during the build", "nightly refund job"]
MEANING = "the release crashed since the box had too little RAM"


def _world(world, work, sessions: int) -> str:
    """Project App with enough distinct text for multi-page indexes; the id of a session asking from it."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    for n in range(sessions):
        topic = TOPICS[n % len(TOPICS)]
        world.session(("user", f"question {n} about the {topic}, ticket T{n:04d} word{n}x"),
                      ("assistant", f"answer {n}: we looked at the {topic} and changed module_{n}.py"),
                      cwd=app, title=f"{topic} {n}")
    asker = world.session(cwd=app)
    world.close()
    enable_plugin(world.home)
    return asker


def _cli_search(home: Path, folder: Path, query: str, mode: str) -> dict:
    proc = cli_process("--home", str(home), "search", query, "--dir", str(folder), "--mode", mode, "--json")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _damage_pages(path: Path) -> None:
    """Overwrite every page but the first and the ``meta`` table's: the file still opens, and
    its header and version read as before."""
    _checkpoint(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        keep = {1, *(r for (r,) in conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'meta'"))}
    finally:
        conn.close()
    pages = path.stat().st_size // page
    assert pages > 4, pages
    with open(path, "r+b") as fh:
        for n in range(2, pages + 1):
            if n not in keep:
                fh.seek((n - 1) * page)
                fh.write(bytes([0x5A]) * page)


def _no_state_db_blame(res: dict) -> None:
    text = json.dumps(res)
    assert "state.db" not in text and "hermes doctor" not in text, res


def _broken(folder: Path, name: str) -> list[Path]:
    return sorted(p for p in folder.glob(f"{name}.broken-*") if not p.name.endswith(("-wal", "-shm")))


def test_damaged_embeddings_db_is_rebuilt_in_every_process(world, work):
    asker = _world(world, work, sessions=12)
    folder, data = work / "app", world.home / PLUGIN_KEY
    path = data / "embeddings.db"
    assert call(SEARCH, {"query": MEANING, "mode": "semantic"}, session_id=asker)["semantic_status"] == "ready"
    wait_idle(300)
    before = db_digest(world.home / "state.db")
    for round_ in ("search", "index"):
        _damage_pages(path)
        # A new process, as in `hermes recall` after the damage: the file set aside and built again.
        if round_ == "search":
            fresh = _cli_search(world.home, folder, MEANING, "hybrid")
            assert fresh["success"] and fresh["semantic_status"] == "ready" and fresh["results"], fresh
            assert "embeddings.db was damaged" in fresh["semantic_reason"], fresh
        else:
            proc = cli_process("--home", str(world.home), "index", "--all", "--json")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            fresh = json.loads(proc.stdout)
            assert "embeddings.db was damaged" in fresh["repaired"], fresh
        _no_state_db_blame(fresh)
        assert len(_broken(data, "embeddings.db")) == 1, sorted(p.name for p in data.iterdir())
        # The process that held the damaged file open all along rebuilds it too.
        held = call(SEARCH, {"query": MEANING, "mode": "semantic"}, session_id=asker)
        assert held["success"] and held["semantic_status"] == "ready" and held["results"], (round_, held)
        _no_state_db_blame(held)
        wait_idle(300)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    checkpoint(world.home)
    assert db_digest(world.home / "state.db") == before


def test_embeddings_db_emptied_while_a_process_holds_it(world, work):
    asker = _world(world, work, sessions=8)
    folder, data = work / "app", world.home / PLUGIN_KEY
    path = data / "embeddings.db"
    assert call(SEARCH, {"query": MEANING, "mode": "semantic"}, session_id=asker)["semantic_status"] == "ready"
    wait_idle(300)
    os.truncate(path, 0)  # this process still holds it open, and its WAL
    fresh = _cli_search(world.home, folder, MEANING, "semantic")
    assert fresh["success"] and fresh["semantic_status"] == "ready" and fresh["results"], fresh
    assert "locked" not in json.dumps(fresh)
    held = call(SEARCH, {"query": MEANING, "mode": "hybrid"}, session_id=asker)
    assert held["success"] and held["semantic_status"] == "ready" and held["results"], held
    assert len(_broken(data, "embeddings.db")) <= 1


def test_keywords_db_cut_short_while_a_process_holds_it(world, work):
    asker = _world(world, work, sessions=16)
    folder, data = work / "app", world.home / PLUGIN_KEY
    path = data / "keywords.db"
    plain = call(SEARCH, {"query": "T0007", "mode": "keyword"}, session_id=asker)
    assert [r["title"] for r in plain["results"]][:1] == [f"{TOPICS[7 % 6]} 7"], plain
    wait_idle(300)
    _checkpoint(path)
    assert path.stat().st_size > 4 * 4096
    os.truncate(path, path.stat().st_size // 2)
    for query, mode in (("T0007", "keyword"), ("T0011", "hybrid")):
        res = call(SEARCH, {"query": query, "mode": mode}, session_id=asker)
        assert res["success"] and res["results"], res
        assert res["results"][0]["title"].endswith(f" {int(query[1:])}"), res
        _no_state_db_blame(res)
    fresh = _cli_search(world.home, folder, "T0013", "keyword")
    assert fresh["success"] and fresh["results"][0]["title"].endswith(" 13"), fresh
    assert len(_broken(data, "keywords.db")) == 1
    wait_idle(300)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0  # rebuilt, and used again
    conn.close()


def test_a_file_size_limit_names_the_plugins_file(world, work):
    _world(world, work, sessions=6)
    data = world.home / PLUGIN_KEY
    assert cli_process("--home", str(world.home), "index", "--all").returncode == 0
    from hermes_state import SessionDB

    # Hermes keeps state.db open while it runs (its WAL index is there to read, never to grow).
    db = SessionDB(db_path=world.home / "state.db")
    for n in range(6):
        sid = f"20260902_{n:06d}_ffff{n:02d}"
        db.create_session(sid, "cli", model="test/model", cwd=str(work / "app"))
        db.append_message(sid, "user", f"a new session {n} written after the index was built", timestamp=1.79e9 + n)
    files = {p.name for p in data.iterdir() if p.suffix == ".db"}
    try:
        for _ in range(2):
            proc = cli_process("--home", str(world.home), "index", "--all", limit_file_size=True)
            assert proc.returncode == 3, (proc.stdout, proc.stderr)
            assert "state.db" not in proc.stderr, proc.stderr
            assert "keywords.db" in proc.stderr or "embeddings.db" in proc.stderr, proc.stderr
            assert "file-size limit" in proc.stderr, proc.stderr
            assert "Traceback" not in proc.stderr
    finally:
        db.close()
    # With Hermes not running, state.db's own WAL index has to be made to read it: that is where it stops.
    proc = cli_process("--home", str(world.home), "index", "--all", limit_file_size=True)
    assert proc.returncode == 3 and "file-size limit" in proc.stderr, proc.stderr
    assert not list(data.glob("*.broken-*")), sorted(p.name for p in data.iterdir())
    assert {p.name for p in data.iterdir() if p.suffix == ".db"} == files
    done = cli_process("--home", str(world.home), "index", "--all", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["keyword"]["sessions_updated"] == 6


# A process of an earlier release (a gateway started before the upgrade): its keyword index open,
# laid out as that release lays it out, as its keeper holds it for as long as the process runs.
EARLIER = textwrap.dedent("""
    import json, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO meta VALUES (?, ?)", json.loads(sys.argv[2]))
    print("open", flush=True)
    sys.stdin.read()
""")


def _layout(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('schema_version', 'tokenizer')"))
    finally:
        conn.close()


@pytest.mark.parametrize("other", ["schema", "tokenizer"])
def test_an_index_another_release_holds_open_is_left_to_it(world, work, other):
    """Each release rebuilds an index laid out by another, and an earlier release does so too: with
    a process of each searching (a gateway not yet restarted after an upgrade, and a new CLI), each
    deleted the file the other had open at its next search, some 50 times in 16 s, the index never
    current (a rebuild takes minutes at a million messages). Now a file another process holds open
    is left to it: searches answer from Hermes's own indexes until that process ends, and the next
    search after rebuilds it. So is a keyword index of the same layout but another tokenizer, which
    each release emptied as it opened it, under the other's feet."""
    from project_history_recall.keyword import textindex

    asker = _world(world, work, sessions=16)
    data = world.home / PLUGIN_KEY
    path = data / "keywords.db"
    for old in data.glob("keywords.db*"):
        old.unlink()
    laid_out = {"schema_version": "2"} if other == "schema" else {
        "schema_version": str(textindex.SCHEMA_VERSION), "tokenizer": str(int(textindex.TOKENIZER_VERSION) - 1)}
    earlier = subprocess.Popen([sys.executable, "-c", EARLIER, str(path), json.dumps(list(laid_out.items()))],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert earlier.stdout.readline().strip() == "open"
        inode = path.stat().st_ino
        for query, mode in (("T0007", "keyword"), ("T0011", "hybrid")):
            res = call(SEARCH, {"query": query, "mode": mode}, session_id=asker)
            assert res["success"] and res["results"][0]["title"].endswith(f" {int(query[1:])}"), res
            _no_state_db_blame(res)
        wait_idle(300)
        assert path.stat().st_ino == inode and _layout(path) == laid_out
    finally:
        earlier.stdin.close()
        earlier.wait(60)
    res = call(SEARCH, {"query": "T0013", "mode": "keyword"}, session_id=asker)
    assert res["success"] and res["results"][0]["title"].endswith(" 13"), res
    wait_idle(300)
    assert _layout(path) == {"schema_version": str(textindex.SCHEMA_VERSION), "tokenizer": textindex.TOKENIZER_VERSION}


def _searched_first(world, work, args: dict) -> tuple[str, dict]:
    """Project App (6 sessions) searched once by ``args`` with the tests' budget, the background's work
    waited for, then the budget set to 1 s for the searches under test: (the asker, that first response).
    Given 1 s, a first search on a busy machine (Hermes 0.22 loads the model for each home) ended before
    the model had loaded, so embeddings.db was never made; a write lock's holder then made an empty one,
    which the next search rightly set aside as not a database, the holder's lock going with it."""
    asker = _world(world, work, sessions=6)
    first = call(SEARCH, args, session_id=asker)
    wait_idle(300)
    plugin_settings(world.home, index_budget_ms=1000)
    return asker, first


def _searched_while_written(path: Path, asker: str, args: dict, holds, meanwhile=lambda: None) -> None:
    """Search ``args`` twice while another process holds the write lock of ``path`` (another Hermes
    process's indexer committing a batch, a `sqlite3` shell left in a transaction; the budget is 1 s):
    each answers while that process still holds it, and ``holds`` of its response. The holder lets go
    by itself within 8 s, before SQLite's 10 s timeout, so a search that waited the lock out would come
    back after it. ``meanwhile()`` is checked before it lets go; then the background's work is waited for."""
    with WriteLock(path, at_most=8) as writer:
        for _ in range(2):
            res = call(SEARCH, args, session_id=asker)
            assert res["success"] and holds(res), res
            assert writer.holds(), (res.get("semantic_status"), res.get("semantic_reason"))
        meanwhile()
    wait_idle(60)


def _redo_queued(home: Path, message_id: int, is_redo, seen_count) -> None:
    """The session of ``message_id`` is queued for the background's redo (an item ``is_redo`` of) and
    not marked in the plugin's file (``seen_count`` of its session id is not negative): the lock held
    the mark off."""
    sid = _session_of(home, message_id)
    queued = set()
    for _home, worker in background_workers():
        with worker._cond:
            queued |= {item.session_id for queue in worker._queues.values() for item in queue.values() if is_redo(item)}
    assert sid in queued and seen_count(sid) >= 0, (sid, queued)


def _row(path: Path, sql: str, *args) -> tuple:
    """The first row ``sql`` reads from ``path``, opened read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchone()
    finally:
        conn.close()


def _session_of(home: Path, message_id: int) -> str:
    return _row(home / "state.db", "SELECT session_id FROM messages WHERE id = ?", message_id)[0]


@pytest.mark.parametrize("name, mode", [("keywords.db", "keyword"), ("embeddings.db", "semantic"),
                                        ("keywords.db", "hybrid"), ("embeddings.db", "hybrid")])
def test_an_index_another_process_is_writing_holds_a_search_no_longer_than_its_budget(world, work, name, mode):
    """With another process holding the write lock of ``keywords.db`` or ``embeddings.db``, a search
    that had a new message to add waited SQLite's whole busy timeout (10 s) for it, whatever its
    budget: the keyword index's few new rows are written in the search, and the semantic search waited
    for the background indexer, which held the file's connection while it waited for the lock. Now a
    search waits about its budget, answers from what it can read, and the work goes on later."""
    asker, first = _searched_first(world, work, {"query": "websocket", "mode": "hybrid"})
    assert first["results"] and first["semantic_status"] == "ready", first
    from hermes_state import SessionDB

    db = SessionDB(db_path=world.home / "state.db")
    try:
        db.create_session("20260903_000001_zebra1", "cli", model="test/model", cwd=str(work / "app"))
        db.append_message("20260903_000001_zebra1", "user", "a zebra crossing near the websocket", timestamp=1.79e9)
    finally:
        db.close()
    # The new session waits for the semantic index; the keyword half finds it at once.
    _searched_while_written(world.home / PLUGIN_KEY / name, asker, {"query": "zebra crossing", "mode": mode},
                            lambda res: mode == "semantic"
                            or res["results"][0]["session_id"] == "20260903_000001_zebra1")
    res = call(SEARCH, {"query": "zebra crossing", "mode": "hybrid"}, session_id=asker)
    assert res["semantic_status"] == "ready" and res["results"][0]["session_id"] == "20260903_000001_zebra1", res


def _rewritten(world, work, rows_since: int, args: dict) -> tuple[str, list[int]]:
    """Project App searched by ``args`` (its indexes built; the budget 1 s), then its two messages
    about the server running out of memory rewritten in place by an importer: among the rows Hermes
    may still rewrite (``rows_since`` 0), or with that many rows written since. (The asker, the
    messages rewritten.)"""
    asker, first = _searched_first(world, work, args)
    assert first["results"], first
    from hermes_state import SessionDB

    if rows_since:
        db = SessionDB(db_path=world.home / "state.db")
        try:
            db.create_session("20260903_000002_chatter", "cli", model="test/model", cwd=str(work / "app"))
            for n in range(rows_since):
                db.append_message("20260903_000002_chatter", "assistant", f"routine line {n}", timestamp=1.79e9 + n)
        finally:
            db.close()
        assert call(SEARCH, args, session_id=asker)["results"]
    wait_idle(300)
    conn = sqlite3.connect(f"file:{world.home / 'state.db'}?mode=ro", uri=True)
    try:
        edited = [mid for (mid,) in conn.execute(
            "SELECT id FROM messages WHERE content LIKE '%server ran out of memory%' ORDER BY id")]
    finally:
        conn.close()
    assert len(edited) == 2, edited
    for mid, text in zip(edited, ["the office plants are watered by a robot on tuesdays",
                                  "the robot waters the ferns and the cactus in the office"], strict=True):
        write_as_importer(world.home, "UPDATE messages SET content = ? WHERE id = ?", text, mid)
    return asker, edited


@pytest.mark.parametrize("rows_since", [0, 300])
def test_a_text_rewritten_in_place_while_another_process_writes_embeddings_db(world, work, rows_since):
    """A search that meets a message rewritten in place marks its session in ``embeddings.db`` to be
    embedded again: among the rows Hermes may still rewrite (``rows_since`` 0) before it searches,
    elsewhere (300 rows written since) when the stale vector comes up as a hit. With another process
    holding the file's write lock, the mark waited SQLite's whole busy timeout, 10 s, whatever the
    budget. Now it waits the budget at most, the reconcile goes to the background, no search shows
    the old text meanwhile, and once the lock is free the message is found by what it says now."""
    asker, edited = _rewritten(world, work, rows_since, {"query": MEANING, "mode": "semantic"})
    # The stale vectors' hits are dropped; the session's reconcile waits in the queue, not in the file.
    _searched_while_written(world.home / PLUGIN_KEY / "embeddings.db", asker, {"query": MEANING, "mode": "semantic"},
                            lambda res: "out of memory" not in json.dumps(res),
                            lambda: _redo_queued(world.home, edited[0], lambda item: item.kind == "reconcile",
                                                 lambda sid: _vectors_seen(world.home, sid)))
    res = call(SEARCH, {"query": "a robot waters the office plants", "mode": "semantic"}, session_id=asker)
    found = [m["message_id"] for r in res["results"] for m in [r, *r.get("more_hits", [])]]
    assert set(edited) & set(found[:3]) and "robot" in res["results"][0]["snippet"], res


def _vectors_seen(home: Path, session_id: str) -> int:
    """The session's least ``seen_count`` in embeddings.db (of any model): negative when marked to reconcile."""
    return _row(home / PLUGIN_KEY / "embeddings.db", "SELECT min(seen_count) FROM sessions WHERE session_id = ?",
                session_id)[0]


def _keyword_state(home: Path, message_id: int) -> tuple[int, int]:
    """(ordinal, seen_count) in keywords.db of the session holding ``message_id``: a redo gives the
    session a new ordinal; a negative count marks it to redo."""
    return _row(home / PLUGIN_KEY / "keywords.db", "SELECT ordinal, seen_count FROM sessions WHERE session_id = ?",
                _session_of(home, message_id))


@pytest.mark.parametrize("rows_since", [0, 300])
def test_a_text_rewritten_in_place_while_another_process_writes_keywords_db(world, work, rows_since):
    """The keyword side of the case above: a search that meets a message rewritten in place (by its
    digest among the rows Hermes may still rewrite, ``rows_since`` 0; by its length when its old words
    make it a hit, 300 rows since) marks its session in ``keywords.db`` to be indexed again, and waited
    SQLite's whole busy timeout for another process's write lock. Now it waits the budget at most; the
    redo is queued all the same and done by the background once the lock is free (a redo as of the
    counts the session was current at was skipped, so the change would be lost), and no search finds
    the message by the words it no longer says meanwhile."""
    args = {"query": "server ran out of memory", "mode": "keyword"}
    asker, edited = _rewritten(world, work, rows_since, args)
    ordinal, _ = _keyword_state(world.home, edited[0])
    _searched_while_written(world.home / PLUGIN_KEY / "keywords.db", asker, args,
                            lambda res: not set(edited) & set(ids(res)),
                            lambda: _redo_queued(world.home, edited[0], lambda item: type(item).__name__ == "Rewritten",
                                                 lambda _sid: _keyword_state(world.home, edited[0])[1]))
    # Done by the background, before any search could find the rewrite again.
    redone, seen = _keyword_state(world.home, edited[0])
    assert redone != ordinal and seen >= 0, (ordinal, redone, seen)
    res = call(SEARCH, {"query": "robot office", "mode": "keyword"}, session_id=asker)
    assert set(ids(res)) == set(edited) and "robot" in res["results"][0]["snippet"], res
    assert not set(edited) & set(ids(call(SEARCH, args, session_id=asker)))
