"""The plugin's own data folder full or unusable: keep answering, lose nothing.

A full disk is simulated for one process with RLIMIT_FSIZE (any write that
would grow a file fails with EFBIG, which SQLite reports as a full disk); an
unusable folder by a file sitting where the folder should be, or by a
read-only bind mount of the folder (the tests run as root, for whom
permissions do not stop a write).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import SRC
from hermes_world import PLUGIN_KEY, call, enable_plugin, plugin_settings, session_rows, store_state, websocket_app

CHILD = textwrap.dedent("""
    import json, resource, signal, sys
    import model_tools  # imports Hermes (its files in HERMES_HOME) before the limit
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # from here on, no file may grow
    asker = sys.argv[1]
    out = {}
    out["hybrid"] = json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "websocket reconnect"}, session_id=asker))
    out["move"] = json.loads(model_tools.handle_function_call(
        "project_session_move", {"project": "Other"}, session_id=asker))
    out["keyword"] = json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=asker))
    print(json.dumps(out))
""")


def _world(world, work, move_earlier: bool = True) -> tuple[str, str]:
    """(a session asking from App, an earlier session, moved from Other into App unless told not to)."""
    app, other = work / "app", work / "other"
    app.mkdir()
    other.mkdir()
    world.project("App", app)
    world.project("Other", other)
    earlier = world.session(("user", "an earlier session, moved into App before the disk filled"), cwd=other)
    world.session(("user", "the websocket reconnect loop is flaky"), ("assistant", "added backoff"), cwd=app)
    asker = world.session(cwd=app)
    enable_plugin(world.home, saved_model=False)  # the child is the first to load the model: it cannot save it
    if move_earlier:
        moved = call("project_session_move", {"project": "App", "session": earlier}, session_id=asker)
        assert moved["moved"], moved
    return asker, earlier


def _digest(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_full_disk_keeps_keyword_search_and_loses_nothing(world, work):
    asker, _earlier = _world(world, work)
    plugin_settings(world.home, index_budget_ms=5000)
    data = world.home / PLUGIN_KEY
    store_before = store_state(world.home)
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", CHILD, asker], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    hybrid, moved, keyword = out["hybrid"], out["move"], out["keyword"]
    assert hybrid["success"] and hybrid["results"], hybrid
    assert hybrid["semantic_status"] in ("unavailable", "indexing", "partial"), hybrid
    assert keyword["success"] and keyword["results"]
    assert moved["success"] is False and moved["error_code"] in ("record_failed", "hermes_write_failed"), moved
    # Hermes's write fails on a full disk too: whichever failed first, the cwd was not moved.
    assert "nothing was changed" in moved["error"].lower() and "already moved" not in moved["error"], moved
    assert "Traceback" not in json.dumps(out)
    assert store_state(world.home) == store_before  # the earlier move's record is intact
    assert (data / "recall.db").exists()


@pytest.mark.parametrize("what", ["a file", "a link to nothing"])
def test_a_file_where_the_data_folder_should_be(world, work, caplog, what):
    """Searches answer by keyword; a move is refused, naming what is there. A symlink to a folder that
    does not exist was told as a file "something put there while the move ran; the next move clears
    it", which no move does."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.project("Other", work)
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=app)
    asker = world.session(cwd=app)
    world.close()
    enable_plugin(world.home)
    data = world.home / PLUGIN_KEY
    for item in sorted(data.rglob("*"), reverse=True):
        item.unlink() if item.is_file() else item.rmdir()
    data.rmdir()
    if what == "a file":
        data.write_text("something of the user's that happens to have this name\n", encoding="utf-8")
    else:
        data.symlink_to(work / "gone" / "hermes-data")
    before = data.read_bytes() if what == "a file" else os.readlink(data)
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] and res["results"], res
    assert res["semantic_status"] in ("unavailable", "disabled", "indexing"), res
    caplog.clear()
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)
    assert moved["success"] is False and moved["error_code"] == "record_failed", moved
    assert str(data) in moved["error"] and "nothing was changed" in moved["error"].lower()
    assert "next move" not in moved["error"] and ("does not exist" in moved["error"]) == (what != "a file"), moved
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text  # no traceback logged
    assert (data.read_bytes() if what == "a file" else os.readlink(data)) == before


RO_CHILD = textwrap.dedent("""
    import json, sys
    import model_tools
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    out = {"move": json.loads(model_tools.handle_function_call(
        "project_session_move", {"project": "Other", "session": sys.argv[1]}))}
    out["search"] = json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "earlier", "mode": "keyword", "project": "App"}))
    print(json.dumps(out))
""")
# A read-only bind mount of the data folder, in a mount namespace of the child's own.
RO_MOUNT = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'


def _read_only_mounts_work(folder) -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", RO_MOUNT, "sh", str(folder), "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.parametrize("earlier_move", [False, True], ids=["first-move", "store-exists"])
def test_a_read_only_data_folder(world, work, earlier_move):
    asker, earlier = _world(world, work, move_earlier=earlier_move)
    world.close()
    data = world.home / PLUGIN_KEY
    if not _read_only_mounts_work(data):
        pytest.skip("no mount namespaces here (needs root and unshare)")
    store_before = store_state(world.home)
    files_before = _digest(data)
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    proc = subprocess.run(["unshare", "-m", "sh", "-c", RO_MOUNT, "sh", str(data), sys.executable, "-c", RO_CHILD,
                           asker], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    res, found = out["move"], out["search"]
    assert res["success"] is False and res["error_code"] == "record_failed", res
    assert "nothing was changed" in res["error"].lower()
    # Searches still read the store (a WAL reader cannot make its index file in a read-only folder).
    assert found["success"], found
    assert {r["session_id"] for r in found["results"]} == ({earlier} if earlier_move else set())
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert session_rows(world.home)[asker]["cwd"] == str(work / "app")
    assert store_state(world.home) == store_before and _digest(data) == files_before


def test_the_plugin_makes_its_own_folders_and_never_the_home_above_them(tmp_path):
    """Every folder the plugin creates goes through ``make_own``: made if missing, kept if there,
    and never with its parents, so a deleted Hermes home is not brought back by our files."""
    from project_history_recall.files.folders import make_own

    home = tmp_path / "home"
    home.mkdir()
    data = home / PLUGIN_KEY
    make_own(data)
    make_own(data)  # a second process finding it made
    make_own(data / "matrices")
    assert data.is_dir() and (data / "matrices").is_dir()
    shutil.rmtree(home)
    with pytest.raises(FileNotFoundError):
        make_own(data)
    assert not home.exists()


@pytest.mark.parametrize("by", ["warm-up", "search"])
def test_a_home_deleted_while_the_plugin_works_stays_deleted(world, work, tmp_path, monkeypatch, by):
    """The Hermes home removed (a profile deleted) once the plugin has read the sessions, before
    it opens its own files: the data folder was made again with its parents, bringing back a
    home that held only ``project-history-recall/`` (seen with the home deleted 0.1 to 0.8 s after
    a session started; the fourth hostile sweep). Hermes's hook and search still answer."""
    import importlib
    import pkgutil
    import threading

    from hermes_cli import plugins
    from hermes_world import plugin_module

    _app, asker = websocket_app(world, work)
    world.close()
    plugin_settings(world.home, index_budget_ms=5000)
    enable_plugin(world.home)
    package = plugin_module("warmup").__name__.rpartition(".")[0]
    for found in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
        importlib.import_module(found.name)  # the code of a directory install goes with the home
    gone = tmp_path / "deleted"
    resolve, user = plugin_module("scope.resolve"), plugin_module("warmup" if by == "warm-up" else "search")
    real = resolve.resolve_scope

    def then_deleted(*args, **kw):
        scope = real(*args, **kw)
        if world.home.exists():
            shutil.move(world.home, gone)
        return scope

    monkeypatch.setattr(resolve if by == "warm-up" else user, "resolve_scope", then_deleted)
    failures: list = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    if by == "warm-up":
        assert plugins.invoke_hook("on_session_start", session_id=asker, model="m", platform="cli") == []
        for thread in threading.enumerate():
            if thread.name == "phr-warm-up":
                thread.join()
    else:
        res = call("project_history_search", {"query": "websocket"}, session_id=asker)
        assert res["success"] or res["error_code"] != "internal", res
    assert gone.exists() and not world.home.exists(), sorted(p.name for p in world.home.rglob("*"))
    assert not failures


@pytest.mark.parametrize("damage", ["overwritten", "cut short"])
def test_a_damaged_recall_db_is_named_as_the_plugins_own_record(world, work, damage):
    """recall.db is not derived (it holds the moves): it is never rebuilt behind the user's back, and
    its damage is told as the plugin's, with what moving it aside gives up. The message every SQLite
    file got sent the user to 'hermes doctor', which does not check this file. Searches go on: every
    one failed while the file was damaged, where Hermes's own data (the folder each move wrote) still
    says which project a session is in; each says what it went without. A move, which must be
    recorded, and a look at a session's moves are refused."""
    from cli_runs import cli_process
    from hermes_world import checkpoint, db_digest

    asker, earlier = _world(world, work)
    world.close()
    path = world.home / PLUGIN_KEY / "recall.db"
    store_state(world.home)  # its WAL folded in: the file is whole on its own
    if damage == "overwritten":
        path.write_bytes(b"not a database, written over by something else\n" * 200)
    else:
        os.truncate(path, path.stat().st_size // 2)
    checkpoint(world.home)
    state_before, damaged = db_digest(world.home / "state.db"), path.read_bytes()
    searched = [call("project_history_search", {"query": "websocket earlier", "mode": "keyword"}, session_id=asker),
                json.loads(cli_process("--home", str(world.home), "search", "websocket earlier", "--project", "App",
                                       "--mode", "keyword", "--json").stdout)]
    for res in searched:
        assert res["success"] is True and {r["session_id"] for r in res["results"]} >= {earlier}, res
        assert len(res["warnings"]) == 1 and str(path) in res["warnings"][0], res
        assert "moved between projects" in res["warnings"][0] and "Hermes's own" in res["warnings"][0], res
    listed = json.loads(cli_process("--home", str(world.home), "projects", "--json").stdout)
    assert listed["success"] and str(path) in listed["warnings"][0], listed
    for args in (("search", "websocket", "--project", "App", "--mode", "keyword"), ("projects",), ("status",)):
        shown = cli_process("--home", str(world.home), *args)
        assert shown.returncode == 0 and f"warning: {path}" in shown.stdout, shown.stdout + shown.stderr
    answers = [call("project_session_move", {"project": "Other"}, session_id=asker),
               json.loads(cli_process("--home", str(world.home), "session", earlier, "--json").stdout)]
    for res in answers:
        assert res["success"] is False and res["error_code"] == "corrupt", res
        assert str(path) in res["error"] and "moved between projects" in res["error"], res
        assert "hermes doctor" not in res["error"] and "Traceback" not in json.dumps(res), res
    assert session_rows(world.home)[asker]["cwd"] == str(work / "app")
    checkpoint(world.home)
    assert db_digest(world.home / "state.db") == state_before and path.read_bytes() == damaged
    path.unlink()  # moved aside by the user: searches go on as before, without a warning
    res = call("project_history_search", {"query": "websocket earlier", "mode": "keyword"}, session_id=asker)
    assert res["success"] and "warnings" not in res and {r["session_id"] for r in res["results"]} >= {earlier}, res


IDLE_CHILD = textwrap.dedent("""
    import importlib, json, resource, signal, sys
    from pathlib import Path
    import model_tools
    from hermes_cli import plugins
    from tools.registry import registry
    plugins.discover_plugins(force=True)
    package = registry.get_entry("project_history_search").handler.__module__.removesuffix(".ui.tools")
    textindex = importlib.import_module(package + ".keyword.textindex")
    textindex.INLINE_ROWS = 0  # the catch-up goes to the keyword index's thread
    keeper = textindex.keeper(Path(sys.argv[2]))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # from here on, no file may grow
    res = json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=sys.argv[1]))
    print(json.dumps({"search": res, "idle": keeper.wait_idle(60)}))
""")


def test_a_full_disk_does_not_keep_the_keyword_index_busy(world, work):
    """keywords.db that cannot grow: before, the keyword index's thread tried its item again every
    half second for as long as Hermes ran, logging a warning each time, and never went idle."""
    app, asker = websocket_app(world, work)
    enable_plugin(world.home)
    assert call("project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=asker)["results"]
    for n in range(3):  # Hermes stays open (world.db): state.db's WAL index is there to read
        world.session(("user", f"websocket question {n} " + "filler " * 2000), cwd=app)
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", IDLE_CHILD, asker, str(world.home)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["search"]["success"] and len(out["search"]["results"]) == 4, out["search"]
    assert out["idle"], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


# recall.db as another release (or another program) may leave it: rows of other types, a table without
# a column this release reads, a column this release does not fill, a view where the table is.
FOREIGN_STORES = {
    "odd-rows": ["INSERT INTO attributions VALUES (NULL, 'p_gone', 1, NULL, NULL)",
                 "INSERT INTO attributions VALUES (x'00ff', x'01', 1, NULL, NULL)",
                 "INSERT INTO attributions VALUES ('s_gone', 42, 'then', NULL, NULL)"],
    "unreadable-layout": ["DROP TABLE attributions",
                          "CREATE TABLE attributions (session_id TEXT PRIMARY KEY, project TEXT, version INTEGER)"],
    "unwritable-layout": ["ALTER TABLE attributions ADD COLUMN reason TEXT NOT NULL DEFAULT 'x'",
                          "CREATE TABLE t AS SELECT * FROM attributions", "DROP TABLE attributions",
                          "CREATE TABLE attributions (session_id TEXT PRIMARY KEY, project_id TEXT NOT NULL, "
                          "recorded_at REAL NOT NULL, previous_kind TEXT, previous_id TEXT, reason TEXT NOT NULL)",
                          "INSERT INTO attributions SELECT * FROM t", "DROP TABLE t"],
    "a-view": ["ALTER TABLE attributions RENAME TO kept",
               "CREATE VIEW attributions AS SELECT * FROM kept"],
}


@pytest.mark.parametrize("kind", list(FOREIGN_STORES))
def test_a_recall_db_of_another_layout_is_told_and_changes_nothing(world, work, kind):
    """recall.db holds no version: a later release's store (a column renamed, one added that it must
    fill), a view in a table's place, or rows no move writes (a NULL session, which SQLite lets into a
    TEXT key; a blob; a number) failed every search, ``/recall status`` and move as ``internal`` (a
    TypeError sorting the records, an IntegrityError or "cannot modify a view" recording), or with a
    bare "no such column". Rows no move writes are passed over; a store this release cannot read is
    told as one, and searches go on by Hermes's own data, as with a damaged store; a move that cannot
    be recorded is refused before Hermes's row is written. Nothing is changed either way."""
    import sqlite3

    from cli_runs import cli_process
    from hermes_cli.plugins import get_plugin_command_handler

    from hermes_world import checkpoint, db_digest

    asker, earlier = _world(world, work)
    path = world.home / PLUGIN_KEY / "recall.db"
    conn = sqlite3.connect(path)
    with conn:
        for statement in FOREIGN_STORES[kind]:
            conn.execute(statement)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    checkpoint(world.home)
    state_before, store_before = db_digest(world.home / "state.db"), path.read_bytes()
    res = call("project_history_search", {"query": "websocket earlier", "mode": "keyword"}, session_id=asker)
    assert res["success"] and {r["session_id"] for r in res["results"]} >= {earlier}, res
    if kind == "unreadable-layout":
        assert len(res["warnings"]) == 1 and str(path) in res["warnings"][0], res
        assert "cannot read" in res["warnings"][0] and "project_id" in res["warnings"][0], res
    else:
        assert "warnings" not in res, res
    os.environ["HERMES_SESSION_ID"] = asker
    try:
        assert not get_plugin_command_handler("recall")("status").startswith("recall:")
    finally:
        del os.environ["HERMES_SESSION_ID"]
    done = cli_process("--home", str(world.home), "session", earlier, "--json")
    assert done.returncode in (0, 3) and "Traceback" not in done.stderr, done.stderr
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)
    if kind == "odd-rows":
        assert moved["success"] and moved["moved"], moved
        return
    assert moved["success"] is False and moved["error_code"] in ("schema", "record_failed"), moved
    assert str(path) in moved["error"] and "release" in moved["error"], moved
    assert session_rows(world.home)[asker]["cwd"] == str(work / "app")
    checkpoint(world.home)
    assert db_digest(world.home / "state.db") == state_before and path.read_bytes() == store_before
