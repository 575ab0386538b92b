"""Whose index the keyword results came from is said. While ``keywords.db`` is first built or
rebuilt in the background (set aside as not a database, say), or cannot be used (another process
holds its write lock; a FIFO at its path), Hermes's own indexes answer the keyword side, weaker on Chinese: the search's
``warnings`` say so, in the tool's JSON, ``/recall`` and the command line alike, and its
``keyword_status`` (``ready``, ``indexing``, ``unavailable``, ``disabled``) in a field; the command
line, whose build ends with it, names the command that finishes it. With ``keyword_index: false``
(the user's choice) nothing is warned. ``status`` shows the index beside the semantic one, in text
and JSON."""

from __future__ import annotations

import json
import os
import re

from cli_runs import Outputs, cli_process, run_cli
from hermes_world import PLUGIN_KEY, call, enable_plugin, plugin_settings, wait_idle
from write_lock import WriteLock

SEARCH = "project_history_search"
MEANWHILE = "; keyword results come from Hermes's own indexes meanwhile, weaker on Chinese"
# After the count, in brackets, why the file was begun afresh when a search found it so.
BUILDING = re.compile(r"keyword index is being built \(\d+ of \d+ sessions\)(?: \(.+\))?" + re.escape(MEANWHILE))


def _app(world, work, messages_each: int) -> tuple:
    """Project App, four sessions of ``messages_each`` messages (one says 支付回调超时), and a
    session asking from it: (the folder, the asker)."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    for n in range(4):
        said = [("user", f"note {n}.{m} about the release checklist") for m in range(messages_each - 1)]
        world.session(("user", f"websocket reconnect {n} failed: 支付回调超时"), *said, cwd=app, title=f"chat {n}")
    asker = world.session(cwd=app)
    world.close()
    return app, asker


def _said(res: dict) -> list[str]:
    assert res["success"] and res["results"], res
    return [w for w in res.get("warnings", []) if w.startswith("keyword index")]


def _junk(data) -> None:
    """``keywords.db`` (and what was set aside of it) replaced by a file that is not a database."""
    for old in data.glob("keywords.db*"):
        if not old.name.endswith(".lock"):
            old.unlink()
    (data / "keywords.db").write_bytes(b"not a database " * 1000)


def _cli(home, app, *args: str) -> str:
    proc = cli_process("--home", str(home), *args, cwd=app)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_build_in_the_background_is_said_until_the_index_answers(world, work, monkeypatch):
    """More than a search indexes itself (1,000 messages): the build goes to the background and
    the search says its keyword results are Hermes's; so again once the file, found not to be a
    database, is set aside and rebuilt. Once built, nothing is said."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, asker = _app(world, work, messages_each=300)
    enable_plugin(world.home)
    plugin_settings(world.home, semantic=False)
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    shown = get_plugin_command_handler("recall")("websocket reconnect")
    assert re.search(r"^warning: " + BUILDING.pattern + "$", shown, re.MULTILINE), shown
    assert "chat " in shown  # answered all the same
    wait_idle(300)
    for mode in ("keyword", "hybrid"):
        built = call(SEARCH, {"query": "支付回调超时", "mode": mode}, session_id=asker)
        assert _said(built) == [] and "warnings" not in built, built
        assert built["keyword_status"] == "ready" and not {"keyword_reason", "keyword_index"} & set(built), built
    status = json.loads(_cli(world.home, app, "status", "--json"))
    assert status["keyword_status"] == "ready" and status["keyword_index"]["sessions"] >= 4, status
    assert re.search(r"^ +keyword: ready — (\d+)/\1 sessions indexed$", _cli(world.home, app, "status"), re.MULTILINE)

    data = world.home / PLUGIN_KEY
    _junk(data)
    rebuilt = call(SEARCH, {"query": "支付回调超时", "mode": "keyword"}, session_id=asker)
    assert [w for w in _said(rebuilt) if BUILDING.fullmatch(w)] == _said(rebuilt) != [], rebuilt
    assert "keywords.db was not a database" in rebuilt["keyword_reason"], rebuilt
    assert list(data.glob("keywords.db.broken-*"))


def test_the_keyword_side_s_state_is_in_the_response_and_the_command_line_says_how_to_finish(world, work, monkeypatch,
                                                                                               capsys):
    """While the index is built, a search's ``keyword_status`` is ``indexing``, its
    ``keyword_reason`` the warning's words and ``keyword_index`` how far it is; ``ready`` once
    built. A command-line search, whose build ends with it, names the command that finishes it.
    ``status`` before any search says the index is not built yet, and how to build it."""
    app, asker = _app(world, work, messages_each=300)
    enable_plugin(world.home)
    plugin_settings(world.home, semantic=False)
    before = json.loads(_cli(world.home, app, "status", "--json"))
    index = before["keyword_index"]
    assert before["keyword_status"] == "indexing" and index["sessions_indexed"] == 0 < index["sessions"], before
    assert before["keyword_reason"] == ("the keyword index is not built yet; the next search builds it, or run the "
                                        "'index' command"), before
    pending = call(SEARCH, {"query": "支付回调超时", "mode": "keyword"}, session_id=asker)
    [said] = _said(pending)
    assert BUILDING.fullmatch(said) and pending["keyword_status"] == "indexing", pending
    assert pending["keyword_reason"] == said, pending
    index = pending["keyword_index"]
    assert 0 <= index["sessions_indexed"] < index["sessions"] >= 4, pending
    wait_idle(300)
    assert call(SEARCH, {"query": "支付回调超时"}, session_id=asker)["keyword_status"] == "ready"

    # The command line waits for the build as long as for the semantic index: a build it cannot wait
    # for (here it may not wait at all) ends with it.
    from project_history_recall.ui import cli

    _junk(world.home / PLUGIN_KEY)
    monkeypatch.setattr(cli, "CLI_INDEX_BUDGET_MS", 0)
    outputs = Outputs()
    assert run_cli(outputs, capsys, "search", "支付回调超时", "--mode", "keyword", "--dir", str(app), home=world.home) == 0
    [text] = outputs.texts
    assert re.search(r"^warning: keyword index: \d+ of \d+ sessions indexed when this command searched; keyword "
                     r"results come from Hermes's own indexes, weaker on Chinese; to index the rest, run: .+ index "
                     r"--project \S+$", text, re.MULTILINE), text
    assert "meanwhile" not in text and "chat " in text


def test_an_index_that_cannot_be_used_is_said_and_status_names_it(world, work):
    """A FIFO at ``keywords.db``: searches answer from Hermes's indexes and say why; ``status``
    shows the keyword index unavailable, with the reason."""
    app, asker = _app(world, work, messages_each=3)
    enable_plugin(world.home)
    plugin_settings(world.home, semantic=False, index_budget_ms=2000)
    data = world.home / PLUGIN_KEY
    data.mkdir(exist_ok=True)
    for old in data.glob("keywords.db*"):
        old.unlink()
    os.mkfifo(data / "keywords.db")
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "websocket reconnect", "mode": mode}, session_id=asker)
        [said] = _said(res)
        assert said.startswith("keyword index could not be used: ") and "keywords.db" in said, said
        assert said.endswith(MEANWHILE), said
        assert res["keyword_status"] == "unavailable" and res["keyword_reason"] == said, res
    text = _cli(world.home, app, "search", "websocket", "reconnect")
    assert re.search(r"^warning: keyword index could not be used: .*keywords\.db", text, re.MULTILINE), text
    status = json.loads(_cli(world.home, app, "status", "--json"))
    assert status["keyword_status"] == "unavailable" and "keywords.db" in status["keyword_reason"], status
    assert status["keyword_reason"].endswith(MEANWHILE), status  # the search's words
    assert re.search(r"^ +keyword: unavailable — keyword index could not be used: cannot use .*keywords\.db",
                     _cli(world.home, app, "status"), re.MULTILINE)
    assert (data / "keywords.db").is_fifo()



def _indexed_then_one_more(world, work) -> tuple:
    """``_app``'s project indexed by a search (semantic search off; the tests' budget, so a busy machine
    does not decide it), a search's budget then cut to 1 s, and a session Hermes writes to it: (the
    folder, the asker)."""
    from hermes_state import SessionDB

    app, asker = _app(world, work, messages_each=3)
    enable_plugin(world.home)
    plugin_settings(world.home, semantic=False)
    assert call(SEARCH, {"query": "websocket reconnect"}, session_id=asker)["keyword_status"] == "ready"
    wait_idle(300)
    plugin_settings(world.home, semantic=False, index_budget_ms=1000)
    db = SessionDB(db_path=world.home / "state.db")
    try:
        db.create_session("20260903_000001_zebra1", "cli", model="test/model", cwd=str(app))
        db.append_message("20260903_000001_zebra1", "user", "a zebra crossing near the websocket", timestamp=1.79e9)
    finally:
        db.close()
    return app, asker


def test_an_index_another_process_holds_is_said_to_be_locked_not_built(world, work, monkeypatch):
    """Another process holding ``keywords.db``'s write lock past the search's budget, with a new message
    to add: the search said the index was ``indexing``, "being written", though nothing was built
    (the command line then told the person to index the rest). Now it says the index is locked by
    another process and that Hermes's own indexes answered meanwhile, as ``unavailable`` (as the
    semantic side says of its locked file), in the tool's JSON and in ``/recall``; ``ready`` once
    the lock is gone. The holder lets go by itself only after the searches answered (``holds``)."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, asker = _indexed_then_one_more(world, work)
    locked = "keyword index is locked by another process" + MEANWHILE
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    with WriteLock(world.home / PLUGIN_KEY / "keywords.db", at_most=8) as writer:
        res = call(SEARCH, {"query": "zebra crossing", "mode": "keyword"}, session_id=asker)
        shown = get_plugin_command_handler("recall")("zebra crossing")
        assert writer.holds()
    assert _said(res) == [locked] and res["results"][0]["session_id"] == "20260903_000001_zebra1", res
    assert res["keyword_status"] == "unavailable" and res["keyword_reason"] == locked, res
    assert "keyword_index" not in res, res
    assert f"warning: {locked}" in shown.splitlines(), shown
    wait_idle(60)
    again = call(SEARCH, {"query": "zebra crossing", "mode": "keyword"}, session_id=asker)
    assert again["keyword_status"] == "ready" and "warnings" not in again, again


def test_status_says_an_index_another_process_holds_is_locked(world, work, monkeypatch):
    """``status`` beside a held ``keywords.db`` with a new session to add: it said ``ready``, every
    session indexed, where a search then says the index is locked and Hermes's indexes answer. Now
    it says what the search says, in ``/recall status`` and the command line's JSON; ``ready`` once
    the lock is gone."""
    from hermes_cli.plugins import get_plugin_command_handler

    app, asker = _indexed_then_one_more(world, work)
    locked = "keyword index is locked by another process" + MEANWHILE
    monkeypatch.setenv("HERMES_SESSION_ID", asker)
    with WriteLock(world.home / PLUGIN_KEY / "keywords.db", at_most=8) as writer:
        shown = get_plugin_command_handler("recall")("status")
        status = json.loads(_cli(world.home, app, "status", "--json"))
        res = call(SEARCH, {"query": "zebra crossing", "mode": "keyword"}, session_id=asker)
        assert writer.holds()
    assert res["keyword_status"] == "unavailable" and res["keyword_reason"] == locked, res
    assert status["keyword_status"] == "unavailable" and status["keyword_reason"] == locked, status
    assert re.search(r"^ +keyword: unavailable — " + re.escape(locked) + "$", shown, re.MULTILINE), shown
    wait_idle(60)
    assert json.loads(_cli(world.home, app, "status", "--json"))["keyword_status"] == "ready"


def test_the_index_turned_off_is_not_warned_about(world, work):
    """``keyword_index: false``: Hermes's indexes answer, as the user chose, with no warning;
    ``status`` says the index is off by the settings."""
    app, asker = _app(world, work, messages_each=300)
    enable_plugin(world.home)
    plugin_settings(world.home, semantic=False, keyword_index=False)
    for mode in ("keyword", "hybrid"):
        res = call(SEARCH, {"query": "websocket reconnect", "mode": mode}, session_id=asker)
        assert _said(res) == [] and "warnings" not in res, res
        assert res["keyword_status"] == "disabled" and "keyword_index: false" in res["keyword_reason"], res
    status = json.loads(_cli(world.home, app, "status", "--json"))
    assert status["keyword_status"] == "disabled" and "keyword_index: false" in status["keyword_reason"], status
    assert re.search(r"^ +keyword: disabled — .*'keyword_index: false'", _cli(world.home, app, "status"), re.MULTILINE)
    assert not (world.home / PLUGIN_KEY / "keywords.db").exists()


def test_a_purely_semantic_search_says_nothing_of_the_keyword_side(world, work):
    """Semantic mode with the semantic side answering: the keyword side did not run, so the response
    has no ``keyword_status`` (as keyword mode's text says nothing of the semantic side)."""
    app, asker = _app(world, work, messages_each=3)
    enable_plugin(world.home)
    res = call(SEARCH, {"query": "websocket reconnect", "mode": "semantic"}, session_id=asker)
    assert res["searched_with"] == "semantic" and res["results"], res
    assert not {"keyword_status", "keyword_reason", "keyword_index"} & set(res), res
    hybrid = call(SEARCH, {"query": "websocket reconnect", "mode": "hybrid"}, session_id=asker)
    assert hybrid["searched_with"] == "keyword+semantic" and hybrid["keyword_status"] == "ready", hybrid
