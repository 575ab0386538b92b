"""A move killed midway (SIGKILL of the Hermes process), through Hermes's real plugin manager,
dispatch and SessionDB: the session is in one project for Hermes and the plugin alike, and the
move's record (where the session was before) is not lost, so the user can see and undo it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import hermes_state
import pytest

from conftest import SRC
from hermes_world import PLUGIN_KEY, call, found, plugin_module, session_rows, store_state

MOVE = "project_session_move"
# A Hermes process that moves a session and is killed at ``sys.argv[3]``: just after Hermes saved
# the session's new folder, before the plugin's record committed; just before Hermes's write; or
# once all was recorded, before the move's own file was removed.
CHILD = textwrap.dedent("""
    import importlib, json, os, signal, sys
    import model_tools
    from hermes_cli import plugins
    from tools.registry import registry
    plugins.discover_plugins(force=True)
    package = registry.get_entry("project_history_search").handler.__module__.removesuffix(".ui.tools")
    host = importlib.import_module(package + ".hermes.host")
    records = importlib.import_module(package + ".scope.records")
    real = host.write_session_cwd

    def killed(*args, **kw):
        if sys.argv[3] == "after":
            real(*args, **kw)
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[3] == "recorded":
        records.done_moving = lambda data_dir: os.kill(os.getpid(), signal.SIGKILL)
    else:
        host.write_session_cwd = killed
    print(model_tools.handle_function_call(MOVE, {"project": sys.argv[2], "session": sys.argv[1]}), flush=True)
""").replace("MOVE", repr(MOVE))


def _killed_move(home, session: str, project: str, when: str) -> None:
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", CHILD, session, project, when], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr[-3000:])


def _alone_killed_after_hermes_wrote(world, work) -> str:
    """A session alone in its folder, whose move to P was killed after Hermes wrote its folder."""
    solo = work / "solo"
    solo.mkdir()
    s = world.session(("user", "alone in here"), cwd=solo)
    world.close()
    _killed_move(world.home, s, "P", "after")
    return s


def _session_info(home, session: str) -> dict:
    return plugin_module("overview").session_info(home, session)


@pytest.mark.parametrize("when", ["after", "before", "recorded"])
def test_a_move_killed_midway_loses_nothing(autos, world, work, when):
    solo = work / "solo"
    solo.mkdir()
    s = world.session(("user", "alone in here"), cwd=solo)  # the only session of automatic project solo
    world.close()
    _killed_move(world.home, s, "P", when)
    cwd = session_rows(world.home)[s]["cwd"]
    assert cwd == str(solo if when == "before" else autos["p"])
    # Searched from P at once (a search finishes nothing): where Hermes's saved folder puts it.
    from_p = call("project_history_search", {"query": "alone", "mode": "keyword"}, session_id=autos["ask_p"])
    assert found(from_p) == (set() if when == "before" else {s}), from_p
    info = _session_info(world.home, s)
    assert info["success"] and info["cwd"] == cwd, info
    # One project for Hermes (its saved folder) and for the plugin.
    assert info["project"]["id"] == (str(solo) if when == "before" else autos["P"]), info
    if when == "before":  # Hermes's write never happened: nothing to show, nothing to undo
        assert info["moves"] == [] and not list((world.home / PLUGIN_KEY).glob("recall.moving*")), info
        assert not list((world.home / PLUGIN_KEY).glob(".recall.db.*"))
        return
    # Before, the move's log row, the only copy of the folder the session worked in, died with the
    # process: nothing showed where it had been, and it could not be moved back into solo.
    assert [(m["from"]["id"], m["from_cwd"], m["to"]["id"]) for m in info["moves"]] == [
        (str(solo), str(solo), autos["P"])], info
    back = call(MOVE, {"project": "solo (auto)", "session": s}, session_id=autos["ask_p"])
    assert back["success"] and back["moved"] and back["cwd"] == str(solo), back
    assert session_rows(world.home)[s]["cwd"] == str(solo)
    assert len(_session_info(world.home, s)["moves"]) == 2
    assert not list((world.home / PLUGIN_KEY).glob("recall.moving*"))
    assert not list((world.home / PLUGIN_KEY).glob(".recall.db.*"))  # the killed first move's private store


# What a move's own file may hold when something other than a move wrote it: a NaN time (JSON
# allows it), a kind no move writes, no folder (as a session without one has: TUI, gateway), and
# a FIFO in its place, which a read waits on for ever.
HOSTILE_JOURNALS = {
    "nan-time": '{"moved_at": NaN, "session_id": "SID", "project_id": "PID", "to_cwd": "CWD"}',
    "unknown-kind": '{"moved_at": 1.0, "session_id": "SID", "project_id": "PID", "to_cwd": "CWD", "to_kind": 7}',
    "no-folder": '{"moved_at": 1.0, "session_id": "NOCWD", "project_id": "PID"}',
    "fifo": None,
}
MOVE_CHILD = textwrap.dedent("""
    import json, sys
    import model_tools
    from hermes_cli import plugins
    plugins.discover_plugins(force=True)
    for _ in range(2):
        print(model_tools.handle_function_call(MOVE, {"project": sys.argv[2], "session": sys.argv[1]}), flush=True)
""").replace("MOVE", repr(MOVE))


@pytest.mark.parametrize("kind", list(HOSTILE_JOURNALS))
def test_a_move_file_no_move_wrote_is_not_used_and_moves_go_on(autos, world, kind):
    """``recall.moving`` holding what no move writes. A NaN time failed every later move and
    ``session`` look with an internal error (SQLite stores NaN as NULL), a kind no move writes
    deleted the session's record as a move back into an automatic project would, one without a
    folder recorded a session that has none into the project, and a FIFO there made them wait for
    ever (and every other move of the profile, behind the lock). Now such a file is not used, and
    goes."""
    from cli_runs import cli_process

    s, data = autos["n1"], world.home / PLUGIN_KEY
    no_cwd = world.session(("user", "from the phone"), source="telegram")
    moved = call(MOVE, {"project": "P", "session": s}, session_id=autos["ask_p"])
    assert moved["moved"], moved
    before = store_state(world.home)
    journal = data / "recall.moving"
    if HOSTILE_JOURNALS[kind] is None:
        os.mkfifo(journal)
    else:
        journal.write_text(HOSTILE_JOURNALS[kind].replace("NOCWD", no_cwd).replace("SID", s).replace(
            "PID", autos["P"]).replace("CWD", session_rows(world.home)[s]["cwd"]), encoding="utf-8")
    world.close()
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    looked = cli_process("session", s, "--json", home=world.home, hermes=True, timeout=60)
    assert looked.returncode == 0, looked.stdout + looked.stderr[-3000:]
    info = json.loads(looked.stdout)
    assert info["project"]["id"] == autos["P"] and len(info["moves"]) == 1, info
    assert store_state(world.home) == before  # nothing recorded from it, nothing deleted
    assert not journal.exists()
    proc = subprocess.run([sys.executable, "-c", MOVE_CHILD, s, "notes (auto)"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, again = (json.loads(line) for line in proc.stdout.strip().splitlines()[-2:])
    assert first["success"] and first["moved"] and again["success"] and not again["moved"], (first, again)
    assert session_rows(world.home)[s]["cwd"] == str(autos["notes"])


def test_a_move_cut_short_in_a_read_only_data_folder_does_not_stop_a_look(autos, world, work):
    """A move killed after Hermes wrote the session's folder, then the data folder read-only (a
    read-only bind mount; the tests run as root): ``session`` failed ("Saving the move ... failed"),
    as finishing the move could not be written. A look writes nothing of its own: it answers, where
    Hermes's saved folder puts the session, and the move is finished once the folder is writable."""
    from cli_runs import HERMES_BIN, cli_env
    from test_data_folder_faults import RO_MOUNT, _read_only_mounts_work

    s = _alone_killed_after_hermes_wrote(world, work)
    data = world.home / PLUGIN_KEY
    if not _read_only_mounts_work(data):
        pytest.skip("no mount namespaces here (needs root and unshare)")
    before = store_state(world.home)
    proc = subprocess.run(["unshare", "-m", "sh", "-c", RO_MOUNT, "sh", str(data), str(HERMES_BIN), "recall",
                           "session", s, "--json"], env=cli_env(world.home), cwd=world.home, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    info = json.loads(proc.stdout)
    assert info["project"]["id"] == autos["P"] and info["cwd"] == str(autos["p"]), info
    assert store_state(world.home) == before and (data / "recall.moving").exists()
    # Writable again: the next look finishes the move.
    assert [m["from_cwd"] for m in _session_info(world.home, s)["moves"]] == [str(work / "solo")]
    assert not (data / "recall.moving").exists()


# A Hermes process whose disk fills just after Hermes saved the session's new folder: no file of
# the process may grow from then on, so the plugin's record cannot commit.
FULL_AFTER_HERMES = textwrap.dedent("""
    import importlib, resource, signal, sys
    import model_tools
    from hermes_cli import plugins
    from tools.registry import registry
    plugins.discover_plugins(force=True)
    package = registry.get_entry("project_history_search").handler.__module__.removesuffix(".ui.tools")
    host = importlib.import_module(package + ".hermes.host")
    real = host.write_session_cwd

    def then_full(*args, **kw):
        real(*args, **kw)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    host.write_session_cwd = then_full
    print(model_tools.handle_function_call(MOVE, {"project": sys.argv[2], "session": sys.argv[1]}), flush=True)
""").replace("MOVE", repr(MOVE))


@pytest.mark.parametrize("first", [True, False], ids=["first-move", "store-exists"])
def test_a_move_whose_record_fails_after_hermes_wrote_is_recorded_later(autos, world, work, first):
    """The disk full between Hermes's write of the session's folder and the record's commit: the move
    answered "run the move again to record it", but the move's own file was removed with the failed
    record, and a move again found the session in the project already and recorded nothing: where
    the session had been was lost, as with a killed move. The file now stays, and the next look or
    move records the move."""
    solo = work / "solo"
    solo.mkdir()
    s = world.session(("user", "alone in here"), cwd=solo)
    if not first:
        assert call(MOVE, {"project": "P", "session": autos["n1"]}, session_id=autos["ask_p"])["moved"]
    world.close()
    env = dict(os.environ, HERMES_HOME=str(world.home), PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", FULL_AFTER_HERMES, s, "P"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failed["success"] is False and "run the move again to record it" in failed["error"], failed
    assert session_rows(world.home)[s]["cwd"] == str(autos["p"])
    info = _session_info(world.home, s)
    assert info["project"]["id"] == autos["P"], info
    assert [(m["from_cwd"], m["to"]["id"]) for m in info["moves"]] == [(str(solo), autos["P"])], info
    assert not (world.home / PLUGIN_KEY / "recall.moving").exists()


def test_a_move_cut_short_of_a_session_deleted_since_is_not_finished_on_a_look_alike(autos, world, work):
    """A move killed after Hermes wrote the session's folder, the session then deleted in Hermes, and
    another session in the folder the move wrote, titled with the deleted session's id: the next
    move took the look-alike for the moved session (it was looked up as a move's ``session``
    argument is, by title too) and recorded the deleted session's move into the project. Finishing
    a move looks its session up by id alone: nothing is recorded, and the move's own file goes."""
    s = _alone_killed_after_hermes_wrote(world, work)
    data = world.home / PLUGIN_KEY
    assert (data / "recall.moving").exists()
    world.db = hermes_state.SessionDB(db_path=world.home / "state.db")
    world.db.delete_session(s)
    world.session(("user", "a look-alike"), cwd=autos["p"], title=s)
    before = store_state(world.home)
    moved = call(MOVE, {"project": "P", "session": autos["n2"]}, session_id=autos["ask_p"])
    assert moved["success"] and moved["moved"], moved
    assert s not in json.dumps(store_state(world.home)["moves"]), store_state(world.home)
    assert before["exists"] or len(store_state(world.home)["moves"]) == 1
    assert not (data / "recall.moving").exists()
