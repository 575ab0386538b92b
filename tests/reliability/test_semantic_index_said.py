"""What a search says of the semantic side when another process holds ``embeddings.db``'s write lock
past the search's budget (another Hermes process's indexer, a ``sqlite3`` shell left in a
transaction) while it has sessions to embed: not that the index is being built, but that it is
locked, as ``unavailable`` (as the keyword side says of its locked file, and the semantic side of a
file it could not open for the lock). The sessions indexed before answer meanwhile, in the tool's
JSON, ``/recall`` and the command line alike; once the lock is gone the index catches up."""

from __future__ import annotations

import json
import re

import pytest

from cli_runs import Outputs, run_cli
from hermes_world import PLUGIN_KEY, call, enable_plugin, plugin_settings, wait_idle
from write_lock import WriteLock

SEARCH = "project_history_search"
LOCKED = "the vector index is locked by another process, {} of {} sessions not indexed yet; "
FROM_INDEXED = LOCKED + "semantic results come from the indexed part meanwhile"


def _app(world, work, name: str = "App") -> tuple:
    """Project ``name`` with four sessions about a websocket reconnect, and a session asking from
    it: (the folder, the asker)."""
    folder = work / name.lower()
    folder.mkdir()
    world.project(name, folder)
    for n in range(4):
        world.session(("user", f"websocket reconnect {n} failed after the proxy restarted"),
                      ("assistant", f"we raised the backoff of client {n} and the reconnect held"),
                      cwd=folder, title=f"{name} chat {n}")
    return folder, world.session(cwd=folder)


def _indexed(world, asker: str) -> None:
    """The plugin on, ``asker``'s project indexed by a search from it, then a search's budget cut to
    1 s, so that the searches beside a held lock wait that long for it, not the tests' minute. The
    first search keeps the tests' budget: on a busy machine the model has taken more than 1 s to load,
    and a test of what a lock is said to be must not hang on how fast the machine is."""
    world.close()
    enable_plugin(world.home)
    call(SEARCH, {"query": "websocket reconnect"}, session_id=asker)
    wait_idle(300)
    plugin_settings(world.home, index_budget_ms=1000)


def _one_more(home, folder) -> None:
    """A session Hermes writes to ``folder``'s project after its index was built."""
    from hermes_state import SessionDB

    db = SessionDB(db_path=home / "state.db")
    try:
        db.create_session("20260903_000001_zebra1", "cli", model="test/model", cwd=str(folder))
        db.append_message("20260903_000001_zebra1", "user", "a zebra crossing near the websocket", timestamp=1.79e9)
    finally:
        db.close()


def test_a_locked_vector_index_is_said_to_be_locked_and_what_is_indexed_answers(world, work, monkeypatch, capsys):
    """The project indexed, then a new session, with another process holding ``embeddings.db``'s write
    lock: the search said ``partial``, "still being indexed in the background", though nothing could
    be written (and the command line told the person to index the rest). Now ``unavailable``, the
    index locked by another process, with the sessions indexed before searched all the same; ``ready``
    once the lock is gone. The holder lets go by itself only after the searches answered (``holds``)."""
    from hermes_cli.plugins import get_plugin_command_handler

    from project_history_recall.ui import cli as ui_cli

    app, asker = _app(world, work)
    _indexed(world, asker)
    assert call(SEARCH, {"query": "websocket reconnect"}, session_id=asker)["semantic_status"] == "ready"
    _one_more(world.home, app)
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    monkeypatch.setattr(ui_cli, "CLI_INDEX_BUDGET_MS", 1000)  # the command line's minute, cut to the test's budget
    monkeypatch.chdir(app)
    shown = Outputs()
    with WriteLock(world.home / PLUGIN_KEY / "embeddings.db", at_most=8) as writer:
        meaning = call(SEARCH, {"query": "the client's backoff after a proxy restart", "mode": "semantic"},
                       session_id=asker)
        hybrid = call(SEARCH, {"query": "zebra crossing"}, session_id=asker)
        recalled = get_plugin_command_handler("recall")("zebra crossing")
        run_cli(shown, capsys, "search", "zebra crossing", home=world.home)
        assert writer.holds()
    said = FROM_INDEXED.format(1, 6)  # the asker's own session, empty, is in the project too
    for res in (meaning, hybrid):
        assert res["semantic_status"] == "unavailable" and res["semantic_reason"] == said, res
        assert res["semantic_index"] == {"sessions": 6, "sessions_indexed": 4, "sessions_pending": 1}, res
    assert meaning["searched_with"] == "semantic" and meaning["results"], meaning
    assert {r["score_source"] for r in meaning["results"]} == {"semantic"}, meaning
    assert hybrid["searched_with"] == "keyword+semantic", hybrid
    assert hybrid["results"][0]["session_id"] == "20260903_000001_zebra1", hybrid  # the keyword side finds it
    [cli_text] = shown.texts
    for text in (recalled, cli_text):
        assert re.search(r"^mode hybrid \(searched with keyword\+semantic.*\); semantic: unavailable — "
                         + re.escape(said) + "$", text, re.MULTILINE), text
        assert "index the rest" not in text and "background" not in text, text
    wait_idle(60)
    again = call(SEARCH, {"query": "zebra crossing", "mode": "semantic"}, session_id=asker)
    assert again["semantic_status"] == "ready" and again["results"][0]["session_id"] == "20260903_000001_zebra1", again


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_project_not_indexed_before_the_lock_is_searched_by_keyword(world, work, mode):
    """Another project's vectors in ``embeddings.db``, none of this one's, and another process holding
    its write lock: nothing of this project can be searched by meaning, so the search is a keyword
    search, and says the index is locked, not being built."""
    _other, elsewhere = _app(world, work, "Other")
    _app_folder, asker = _app(world, work)
    _indexed(world, elsewhere)
    with WriteLock(world.home / PLUGIN_KEY / "embeddings.db", at_most=8) as writer:
        res = call(SEARCH, {"query": "websocket reconnect", "mode": mode}, session_id=asker)
        assert writer.holds()
    assert res["semantic_status"] == "unavailable", res
    assert res["semantic_reason"] == LOCKED.format(4, 5) + "no semantic results meanwhile", res
    assert res["searched_with"] == "keyword" and res["results"], res
    assert all(r["title"].startswith("App chat") for r in res["results"]), res
    wait_idle(60)


def test_status_says_a_vector_index_another_process_holds_is_locked(world, work, monkeypatch, capsys):
    """``status`` beside a held ``embeddings.db`` with a new session to embed: it said ``partial``, "the
    next search indexes them in the background, or run the 'index' command", where a search then says
    the index is locked by another process, and neither would index anything. Now ``/recall status``
    and the command line say what the search says; ``ready`` once the lock is gone."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, asker = _app(world, work)
    _indexed(world, asker)
    _one_more(world.home, app)
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    monkeypatch.chdir(app)
    shown = Outputs()
    with WriteLock(world.home / PLUGIN_KEY / "embeddings.db", at_most=8) as writer:
        recalled = get_plugin_command_handler("recall")("status")
        run_cli(shown, capsys, "status", "--json", home=world.home)
        res = call(SEARCH, {"query": "zebra crossing"}, session_id=asker)
        assert writer.holds()
    said = FROM_INDEXED.format(1, 6)
    assert res["semantic_status"] == "unavailable" and res["semantic_reason"] == said, res
    [status] = [json.loads(text) for text in shown.texts]
    assert status["semantic_status"] == "unavailable" and status["semantic_reason"] == said, status
    assert status["semantic_index"]["sessions_pending"] == 1, status
    assert re.search(r"^ +semantic: unavailable — .*" + re.escape(said) + "$", recalled, re.MULTILINE), recalled
    assert "'index' command" not in recalled, recalled
    wait_idle(60)
    assert get_plugin_command_handler("recall")("status").count("semantic: ready") == 1
