"""Concurrency and broken files: the plugin keeps answering and never blocks Hermes's writer."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import closing

import pytest

from conftest import sizes
from cli_runs import cli_process
from hermes_world import (PLUGIN_KEY, call, checkpoint, db_digest, enable_plugin, plugin_module, plugin_settings,
                          session_rows, store_state, wait_idle)

SEARCHERS = 8
WRITER = textwrap.dedent("""
    import json, sys, time
    from hermes_state import SessionDB
    seconds, folder = float(sys.argv[1]), sys.argv[2]
    db = SessionDB()
    sid = "20260901_777777_abcdef"
    db.create_session(sid, "cli", cwd=folder)
    errors, n = 0, 0
    start = time.time()
    # At least 50 messages however slow the machine, so ERR_LOAD_7 exists.
    while n < 50 or time.time() - start < seconds:
        try:
            db.append_message(sid, "user", f"websocket load message {n} 超时 ERR_LOAD_{n % 50}")
        except Exception as exc:
            errors += 1
        n += 1
        if n % 500 == 0:
            db._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        time.sleep(max(0.0, start + n / 150 - time.time()))  # ~150 messages a second
    db.close()
    print(json.dumps({"messages": n, "errors": errors}))
""")


@pytest.fixture
def loaded(world, work):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    for n in range(30):
        world.session(("user", f"websocket reconnect {n} ERR_CONNECTION_REFUSED"), ("assistant", f"超时 fix {n}"),
                      cwd=app)
    asker = world.session(cwd=app)
    world.close()
    # The shipped budget: under load a search waits at most 1.5 s for indexing
    # the writer's new rows (the long test budget would serialise the searchers).
    plugin_settings(world.home, index_budget_ms=1500)
    enable_plugin(world.home)
    return {"home": world.home, "app": app, "asker": asker}


@pytest.mark.parametrize("seconds", sizes("PHR_LOAD_SECONDS", full=60.0, quick=5.0))
def test_eight_searchers_and_a_writer(loaded, seconds):
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(seconds), str(loaded["app"])],
                              env=dict(os.environ, HERMES_HOME=str(loaded["home"])), stdout=subprocess.PIPE, text=True)
    stop = time.time() + seconds
    results = {"searches": 0, "failed": []}
    lock = threading.Lock()
    queries = ["websocket", "超时", "ERR_CONNECTION_REFUSED", "load message", "ERR_LOAD_7", "reconnect fix"]

    # Each searcher runs at least twice however slow the machine is, so the
    # threads overlap; how fast they go is measured by `python -m bench load`.
    def searcher(k: int) -> None:
        n = 0
        while n < 2 or time.time() < stop:
            res = call("project_history_search", {"query": queries[(k + n) % len(queries)], "context": 1},
                       session_id=loaded["asker"])
            n += 1
            with lock:
                results["searches"] += 1
                if not res.get("success"):
                    results["failed"].append(res)

    threads = [threading.Thread(target=searcher, args=(k,)) for k in range(SEARCHERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, _ = writer.communicate(timeout=120)
    report = json.loads(out.strip().splitlines()[-1])
    print(f"\nload: {results['searches']} searches by {SEARCHERS} threads; writer {report}")
    assert writer.returncode == 0
    assert results["failed"] == []
    assert report["errors"] == 0
    final = call("project_history_search", {"query": "ERR_LOAD_7"}, session_id=loaded["asker"])
    assert final["results"], "rows the writer committed are found"


def _in_rollback_journal(world, asker: str):
    """The world closed, the plugin loaded, and state.db in rollback-journal mode: (asker, state.db path)."""
    world.close()
    enable_plugin(world.home)
    path = world.home / "state.db"
    with closing(sqlite3.connect(path)) as conn:  # 0.22 here (SQLite < 3.51.3) is in this mode already
        conn.execute("PRAGMA journal_mode=DELETE")
    return asker, path


def test_no_lock_on_state_db_while_embedding_ranking_or_formatting(world, work, monkeypatch):
    """In rollback-journal mode (Hermes 0.22 on an SQLite older than 3.51.3) a
    reader's lock stops Hermes's writer from committing. At each point where
    the plugin embeds (the query, or new messages while the search waits for
    them), ranks or formats, a writer takes the exclusive lock: the plugin
    holds none there. A lock held by the thread that is inside the hook would
    make the writer wait until it gives up."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    for n in range(5):
        world.session(("user", f"websocket reconnect {n}"), ("assistant", f"backoff and retry {n}"), cwd=app)
    asker, path = _in_rollback_journal(world, world.session(cwd=app))
    fusion, results = plugin_module("fusion"), plugin_module("results")
    local = plugin_module("semantic.embedders.local")
    writer = sqlite3.connect(path, timeout=1.0, isolation_level=None, check_same_thread=False)
    probed, blocked = [], []

    def probing(where, fn):
        def wrapper(*args, **kw):
            assert writer.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
            try:
                writer.execute("BEGIN EXCLUSIVE")
                writer.execute("COMMIT")
                probed.append(where)
            except sqlite3.OperationalError as exc:
                blocked.append((where, str(exc)))
            return fn(*args, **kw)
        return wrapper

    monkeypatch.setattr(local.UniversalSentenceEncoder, "embed_documents",
                        probing("embedding", local.UniversalSentenceEncoder.embed_documents))
    monkeypatch.setattr(fusion, "blend", probing("ranking", fusion.blend))
    monkeypatch.setattr(results, "term_marks", probing("formatting", results.term_marks))
    try:
        res = call("project_history_search", {"query": "websocket retry"}, session_id=asker)
    finally:
        writer.close()
    assert res["success"] and res["results"] and res["semantic_status"] == "ready", res
    assert blocked == []
    assert {"embedding", "ranking", "formatting"} <= set(probed) and probed.count("embedding") >= 2
    assert res["journal_mode"] == "rollback"


# In WAL mode BEGIN EXCLUSIVE takes only the WAL's write lock; the exclusive locking mode takes the
# file's own exclusive lock as well, the one a process closing its last connection needs to
# checkpoint and delete the WAL.
_EXCLUSIVE_NOW = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
    try:
        conn.execute("BEGIN EXCLUSIVE")
    except sqlite3.OperationalError:
        sys.exit(1)
    conn.execute("ROLLBACK")
""")


def _writer_could_commit(path) -> bool:
    """Whether another process could take the file's exclusive lock now, as Hermes's writer does to
    commit to state.db, and a process closing its last connection to a WAL file does to delete the WAL."""
    return subprocess.run([sys.executable, "-c", _EXCLUSIVE_NOW, str(path)], timeout=60).returncode == 0


def test_an_answer_leaves_the_locks_of_other_reads_in_place(world, work, monkeypatch):
    """On POSIX, closing any descriptor of a file drops every lock the process holds on it, SQLite's
    included. Hermes runs tools in a thread pool, so one search answers while another thread of the same
    process is inside a read of state.db. Had the answer (its journal_mode, say) opened and closed
    state.db itself, the other read would lose its lock; in rollback-journal mode Hermes's writer then
    commits under it, and the read fails with "database disk image is malformed"."""
    from hermes_cli.plugins import get_plugin_command_handler

    app = work / "app"
    app.mkdir()
    world.session(("user", "websocket reconnect"), ("assistant", "backoff"), cwd=app)
    asker, path = _in_rollback_journal(world, world.session(cwd=app))
    assert _writer_could_commit(path)
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchall()  # a read that holds its lock until COMMIT
        assert not _writer_could_commit(path)
        res = call("project_history_search", {"query": "websocket"}, session_id=asker)
        assert res["success"] and res["results"] and res["journal_mode"] == "rollback", res
        assert not _writer_could_commit(path), "the search dropped another read's lock on state.db"
        monkeypatch.setenv("HERMES_SESSION_ID", asker)
        assert "rollback journal" in get_plugin_command_handler("recall")("status")
        assert not _writer_could_commit(path), "/recall status dropped another read's lock on state.db"
    finally:
        reader.close()


@pytest.mark.parametrize("held", ["while the search opens them", "while the search checks them"])
def test_a_search_leaves_the_locks_on_the_plugins_own_files_in_place(world, work, held):
    """The same hazard on keywords.db and embeddings.db (WAL): a search opens them, and checks on every
    call that they are still the files it opened. Had it read their headers with open() and close(),
    another process (a gateway beside the CLI) closing its last connection could checkpoint and delete
    the WAL this one still uses, or overwrite what a read of this process is reading."""
    app = work / "app"
    app.mkdir()
    world.session(("user", "websocket reconnect"), ("assistant", "backoff with jitter"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    enable_plugin(world.home)

    def search() -> None:
        res = call("project_history_search", {"query": "websocket", "mode": "hybrid"}, session_id=asker)
        assert res["success"] and res["results"] and res["semantic_status"] == "ready", res

    if held == "while the search opens them":
        assert cli_process("--home", str(world.home), "index", "--all").returncode == 0
    else:
        search()
        wait_idle(300)
    paths = [world.home / PLUGIN_KEY / name for name in ("keywords.db", "embeddings.db")]
    readers = [sqlite3.connect(path, isolation_level=None) for path in paths]
    try:
        for reader, path in zip(readers, paths, strict=True):
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM meta").fetchall()  # a read that holds its lock until COMMIT
            assert not _writer_could_commit(path)
        search()
        for path in paths:
            assert not _writer_could_commit(path), f"a search dropped a read's lock on {path.name} {held}"
    finally:
        for reader in readers:
            reader.close()
    wait_idle(300)


def test_state_db_faults_give_clear_errors(home, work):
    enable_plugin(home)
    db = home / "state.db"
    cases = {
        "missing": lambda: None,
        "empty": lambda: db.write_bytes(b""),
        "corrupt": lambda: db.write_bytes(b"SQLite format 3\x00" + os.urandom(8192)),
        "schema": lambda: sqlite3.connect(db).executescript(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY); CREATE TABLE messages (id INTEGER PRIMARY KEY);"),
    }
    for code, make in cases.items():
        for suffix in ("", "-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
        make()
        res = call("project_history_search", {"query": "x"})
        assert res["success"] is False and res["error_code"] in (code, "corrupt"), (code, res)
        assert "Traceback" not in res["error"]


@pytest.mark.parametrize("table, column", [("sessions", "source"), ("sessions", "message_count"),
                                           ("messages", "tool_calls"), ("messages", "tool_name")])
def test_a_column_a_search_reads_dropped_by_a_later_hermes_is_told_as_the_layout(world, work, table, column):
    """Each of these was read by every search but not checked for: "Reading state.db failed: no such
    column", the catch-all code, where a layout the plugin does not know has its own."""
    app = work / "app"
    app.mkdir()
    asker = world.session(("user", "websocket reconnect"), cwd=app)
    world.session(("user", "websocket backoff"), cwd=app, title="backoff")
    world.close()
    enable_plugin(world.home)
    with closing(sqlite3.connect(world.home / "state.db")) as conn:  # what names the column goes first
        for kind, name in conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger', 'view') "
                                       "AND sql LIKE ?", (f"%{column}%",)).fetchall():
            conn.execute(f"DROP {kind} {name}")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.commit()
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    answers = [call("project_history_search", {"query": "websocket", "mode": mode}, session_id=asker)
               for mode in ("keyword", "hybrid", "semantic")]
    answers.append(call("project_session_move", {"project": str(app), "session": "backoff"}, session_id=asker))
    for res in answers:
        assert res["success"] is False and res["error_code"] == "schema", res
        assert f"{table} lacks {column}" in res["error"], res
    assert db_digest(world.home / "state.db") == before


def test_a_damaged_page_in_a_real_state_db(world, work):
    app = work / "app"
    app.mkdir()
    written = {}  # session id -> (its message's id, the number in its text)
    for n in range(200):
        sid = world.session(("user", f"websocket {n} " + "padding " * 200), cwd=app)
        written[sid] = (world.db.get_messages(sid)[0]["id"], n)
    asker = world.session(cwd=app)
    world.close()
    checkpoint(world.home)
    enable_plugin(world.home)
    path = world.home / "state.db"
    data = bytearray(path.read_bytes())
    for offset in range(len(data) // 2, len(data) // 2 + 40_000, 4096):
        data[offset + 100: offset + 400] = os.urandom(300)
    path.write_bytes(bytes(data))
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert isinstance(res.get("success"), bool)
    if not res["success"]:
        assert res["error_code"] in ("corrupt", "error") and res["error"]
        assert "Traceback" not in res["error"] and "results" not in res, res
        return
    # Searched in spite of the damage: what it shows is what was written, from the pages left intact,
    # each hit the message of its own session (never random bytes, never the asking session).
    assert res["project"] == {"kind": "auto", "id": str(app), "name": "app"}, res["project"]
    assert res["current_session_excluded"] is True
    assert res["results"], res
    for hit in res["results"]:
        assert hit["session_id"] in written, hit
        message_id, n = written[hit["session_id"]]
        assert hit["message_id"] == message_id and hit["role"] == "user", hit
        assert hit["link"] == f"@session:default/{hit['session_id']}", hit
        assert hit["snippet"].startswith(f">>>websocket<<< {n} padding padding"), hit


def test_locked_state_db_is_reported_not_hung(world, work, monkeypatch):
    app = work / "app"
    app.mkdir()
    asker = world.session(("user", "websocket"), cwd=app)
    world.close()
    enable_plugin(world.home)
    monkeypatch.setattr(plugin_module("hermes.readonly"), "BUSY_TIMEOUT_MS", 300)
    holder = sqlite3.connect(world.home / "state.db", isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        # The answer itself shows the busy timeout gave up instead of hanging.
        res = call("project_history_search", {"query": "websocket"}, session_id=asker)
        assert res["success"] is False and res["error_code"] == "locked" and "try again" in res["error"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert call("project_history_search", {"query": "websocket"}, session_id=asker)["success"]


def test_projects_db_missing_locked_or_corrupt(world, work, monkeypatch):
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    sid = world.session(("user", "websocket in app"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    enable_plugin(world.home)
    projects = world.home / "projects.db"
    assert call("project_history_search", {"query": "websocket"}, session_id=asker)["project"]["kind"] == "explicit"

    projects.rename(world.home / "projects.db.bak")
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] and res["project"]["kind"] == "auto"  # no explicit projects: the folder groups
    assert {r["session_id"] for r in res["results"]} == {sid}

    projects.write_bytes(b"not a database at all" * 50)
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] is False and "projects database" in res["error"]
    projects.unlink()
    (world.home / "projects.db.bak").rename(projects)

    monkeypatch.setattr(plugin_module("hermes.readonly"), "BUSY_TIMEOUT_MS", 300)
    before = {"projects": _projects_rows(projects), "sessions": session_rows(world.home),
              "store": store_state(world.home)}
    holder = sqlite3.connect(projects, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO project_meta(key, value) VALUES ('lock-test', '1')")
    try:
        res = call("project_history_search", {"query": "websocket"}, session_id=asker)
        assert isinstance(res["success"], bool)
        if res["success"]:  # answered from what it read before the lock: the explicit project, all of it
            assert res["project"]["kind"] == "explicit" and res["project"]["name"] == "App", res
            assert {r["session_id"] for r in res["results"]} == {sid}
        else:
            assert res["error_code"] == "locked", res
            assert "projects database" in res["error"] and "try again" in res["error"], res
            assert "results" not in res, res
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Nothing changed anywhere: Hermes's projects and sessions, the plugin's own store.
    assert {"projects": _projects_rows(projects), "sessions": session_rows(world.home),
            "store": store_state(world.home)} == before
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] and res["project"]["kind"] == "explicit", res
    assert {r["session_id"] for r in res["results"]} == {sid}


def _projects_rows(path) -> dict:
    """Every row of every table of Hermes's projects.db, read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        conn.close()


# The plugin's modules that open SQLite files through hermes.readonly.connect_readonly.
OPENS_READ_ONLY = ("hermes.statedb", "hermes.watch", "hermes.catalog", "hermes.projects", "scope.records",
                   "scope.sessionref")


def test_reads_only_ever(world, work):
    """An SQLite authorizer on every connection the plugin opens records anything but reads."""
    import sys

    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "websocket 超时 ERR_X foo.bar()"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    checkpoint(world.home)
    before = db_digest(world.home / "state.db")
    enable_plugin(world.home)
    statedb, readonly = plugin_module("hermes.statedb"), plugin_module("hermes.readonly")
    seen, original = [], readonly.connect_readonly
    reads = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_TRANSACTION,
             sqlite3.SQLITE_RECURSIVE}
    harmless_pragmas = {"query_only", "busy_timeout", "mmap_size", "schema_version", "data_version", "table_info"}

    def guarded(path, **kw):
        conn = original(path, **kw)

        def authorizer(action, arg1, *rest):
            harmless = (
                action in reads
                or (action == sqlite3.SQLITE_PRAGMA and arg1 in harmless_pragmas)
                # The journal mode asked, not set (a search reports it).
                or (action == sqlite3.SQLITE_PRAGMA and arg1 == "journal_mode" and rest[0] is None)
                # FTS5 declares a virtual table's columns the first time a
                # connection uses it; SQLite reports that as an UPDATE of
                # sqlite_master, though nothing is written.
                or (action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master")
            )
            if not harmless:
                seen.append((str(path), action, arg1, rest))
            return sqlite3.SQLITE_OK

        conn.set_authorizer(authorizer)
        return conn

    # Every module of the plugin that opens SQLite files read-only, imported now: the plugin loads
    # most of its modules on first use, after this patch would be too late for them.
    for name in OPENS_READ_ONLY:
        plugin_module(name)
    modules = [m for name, m in sys.modules.items()
               if name.startswith(statedb.__name__.rsplit(".", 2)[0]) and getattr(m, "connect_readonly", None) is original]
    for module in modules:
        module.connect_readonly = guarded
    statedb.discard_pooled(world.home / "state.db")
    try:
        for q in ("websocket", "超时", "ERR_X", "foo.bar()", "超", "nothing here", "NEAR("):
            for extra in ({}, {"include_tool_output": True}, {"project": "App"}, {"mode": "semantic"}):
                assert call("project_history_search", {"query": q, **extra}, session_id=asker)["success"]
        call("project_session_move", {"project": "nope"}, session_id=asker)
    finally:
        for module in modules:
            module.connect_readonly = original
        statedb.discard_pooled(world.home / "state.db")
    assert len(modules) == len(OPENS_READ_ONLY) + 1  # and hermes.readonly itself
    assert seen == [], seen[:5]
    assert db_digest(world.home / "state.db") == before
