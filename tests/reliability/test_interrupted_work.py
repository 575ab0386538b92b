"""The fourteenth hostile sweep, the user's files: work interrupted and taken up again, and the plugin's
files written by another version of it. Real processes of the command line on homes Hermes's own
``SessionDB`` wrote; the rule as before: nothing of the user's lost, the state said as it is, the
next run finishing the work without redoing what was done."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest

from cli_runs import cli_process, index_signalled
from hermes_world import EN_DOCS, checkpoint, db_digest, plugin_settings, seed_saved_model


def _big_project(world, work) -> tuple:
    """Project Big: six sessions of every EN_DOCS text, embedded two chunks a batch; (its folder, the
    number of chunks a whole index holds)."""
    folder = work / "big"
    folder.mkdir()
    world.project("Big", folder)
    for i in range(6):
        world.session(*[("user", f"note {i}-{j}: {EN_DOCS[k]}") for j, k in enumerate(EN_DOCS)], cwd=folder)
    plugin_settings(world.home, batch_size=2)
    seed_saved_model(world.home)
    checkpoint(world.home)
    return folder, 6 * len(EN_DOCS)


def _chunks(home) -> int:
    db = sqlite3.connect(home / "project-history-recall" / "embeddings.db")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_an_index_run_stopped_by_a_signal_says_so_and_the_next_run_goes_on(world, work, signum):
    """``timeout 10m project-history-recall index --all``, systemd stopping a job, a terminal closed:
    SIGTERM and SIGHUP ended the run where it stood, without a word (the shell showed only exit 143 or
    129), and its ``finally`` blocks never ran. Now it stops as a Ctrl-C stops it: one line saying so
    and that what was indexed is kept, exit 128 + the signal; the next run embeds only the rest."""
    folder, total = _big_project(world, work)
    state = db_digest(world.home / "state.db")
    stopped = index_signalled(world.home, folder, signum)
    assert stopped.returncode == 128 + signum, (stopped.returncode, stopped.stderr)
    said = stopped.stderr.replace("\r", "\n").strip().splitlines()[-1]
    assert f"stopped by {signal.Signals(signum).name}" in said and "kept" in said, stopped.stderr
    assert "Traceback" not in stopped.stderr
    kept = _chunks(world.home)
    assert 0 < kept < total
    again = cli_process("index", str(folder), "--json", home=world.home)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["totals"]["chunks_embedded"] == total - kept
    assert _chunks(world.home) == total
    assert db_digest(world.home / "state.db") == state


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root, as sudo gives it")
def test_an_index_run_as_root_stopped_by_sigterm_hands_back_what_it_made(world, work):
    """``sudo timeout 1h project-history-recall index --all`` on a home another user's Hermes writes:
    the run stopped by SIGTERM left the data folder and its indexes root's (a completed run or a Ctrl-C
    hands them back), so that user's own Hermes could open neither index until someone ran ``chown
    -R``."""
    folder, _total = _big_project(world, work)
    user = 65534
    for path in (world.home, world.home / "state.db", world.home / "project-history-recall",
                 world.home / "project-history-recall" / "config.yaml"):
        os.lchown(path, user, user)
    stopped = index_signalled(world.home, folder, signal.SIGTERM)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    data = world.home / "project-history-recall"
    assert (data / "embeddings.db").exists()
    assert [p for p in [data, *data.rglob("*")] if p.lstat().st_uid != user] == []


def _set_meta(path, key: str, value: str) -> None:
    """``key`` of a derived file's ``meta`` set to ``value``, as another version writes it; the WAL
    folded in, so the file's bytes tell any later change."""
    db = sqlite3.connect(path)
    try:
        db.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def _bytes(path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@pytest.mark.parametrize("other", ["newer", "older", "tokenizer"])
def test_an_index_of_another_version_is_kept_by_status_and_its_rebuild_said(world, work, other):
    """A ``keywords.db`` and an ``embeddings.db`` another version of the plugin wrote: a newer one's
    after a downgrade, an older one's after an upgrade, a keyword index of another tokenizer.
    ``status``, a look that makes nothing, opened both for use, and so deleted them (and emptied the
    keyword index of another tokenizer), then said "400 of 400 sessions are not indexed yet" as of a
    home never indexed; the search that followed had nothing left to say, and ``index`` embedded every
    message again (for a remote model, sent it again) without a word of why. Now ``status`` leaves both
    files as they are and says which version wrote them and that the next search or ``index`` rebuilds
    them; ``index`` says it rebuilt them, and why."""
    from project_history_recall.keyword import textindex
    from project_history_recall.semantic import store

    folder, total = _big_project(world, work)
    plugin_settings(world.home)  # the default batch size
    assert cli_process("index", str(folder), home=world.home).returncode == 0
    data = world.home / "project-history-recall"
    keywords, vectors = data / textindex.FILE_NAME, data / store.FILE_NAME
    if other == "tokenizer":
        _set_meta(keywords, "tokenizer", str(int(textindex.TOKENIZER_VERSION) + 1))
    else:
        step = 1 if other == "newer" else -1
        _set_meta(keywords, "schema_version", str(textindex.SCHEMA_VERSION + step))
        _set_meta(vectors, "schema_version", str(store.SCHEMA_VERSION + step))
    files = {p: _bytes(p) for p in (keywords, vectors)}
    state = db_digest(world.home / "state.db")

    looked = cli_process("status", str(folder), "--json", home=world.home)
    assert looked.returncode == 0, looked.stderr
    said = json.loads(looked.stdout)
    assert {p: _bytes(p) for p in files} == files
    assert said["keyword_status"] == "indexing" and "another version" in said["keyword_reason"], said
    if other != "tokenizer":
        assert said["semantic_status"] == "indexing" and "another version" in said["semantic_reason"], said

    rebuilt = cli_process("index", str(folder), home=world.home)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.count("another version") == (1 if other == "tokenizer" else 2), rebuilt.stdout
    assert _chunks(world.home) == total
    again = cli_process("index", str(folder), "--json", home=world.home)
    done = json.loads(again.stdout)
    assert done["totals"]["chunks_embedded"] == 0 and done["keyword"]["sessions_updated"] == 0
    # As the keyword side counts them: a run that finds nothing to do updated no session (it said all 6).
    assert done["totals"]["sessions_updated"] == 0, done["totals"]
    assert "rebuilt" not in done and "rebuilt" not in done["keyword"]
    assert db_digest(world.home / "state.db") == state


def test_a_long_lived_process_takes_its_indexes_back_once_they_can_be_written(world, work, monkeypatch):
    """Hermes's gateway opened ``keywords.db`` and ``embeddings.db`` while they could not be written
    (a backup's ``chmod 444``, a read-only mount of them, another user's files): SQLite then opens a file
    read-only, for good. Once the files could be written again, every search of that process still said
    "keyword index could not be used: attempt to write a readonly database", its new messages searched
    through Hermes's indexes only, until Hermes was restarted. The index is now opened again once its file
    can be written. (SQLite's own fallback, a connection that only reads, is made here as it makes it:
    root writes any file whatever its mode.)"""
    from hermes_world import call, enable_plugin, found, plugin_module

    folder, _total = _big_project(world, work)
    plugin_settings(world.home)
    assert cli_process("index", str(folder), home=world.home).returncode == 0
    asker = world.session(cwd=folder)
    enable_plugin(world.home)
    derived = plugin_module("files.derived")

    def read_only(path, schema, version, expected):
        return sqlite3.connect(derived.sqlite_uri(path, "mode=ro"), uri=True, timeout=10, isolation_level=None,
                               check_same_thread=False)

    with monkeypatch.context() as patched:
        patched.setattr(derived, "_connect", read_only)
        first = call("project_history_search", {"query": "pelican harbour", "mode": "hybrid"}, session_id=asker)
        assert first["keyword_status"] == "ready", first
        new = world.session(("user", "the pelican harbour moved to blue-green deployments"), cwd=folder)
        stuck = call("project_history_search", {"query": "pelican harbour", "mode": "keyword"}, session_id=asker)
        assert stuck["keyword_status"] == "unavailable" and "readonly" in stuck["keyword_reason"], stuck
    # The files can be written again: the next search writes them.
    back = call("project_history_search", {"query": "pelican harbour", "mode": "hybrid"}, session_id=asker)
    assert back["keyword_status"] == "ready" and back["semantic_status"] == "ready", back
    assert new in found(back)
