"""A move killed midway (SIGKILL of the Hermes process), through Hermes's real plugin manager,
dispatch and SessionDB: the session is in one project for Hermes and the plugin alike, and the
move's record (where the session was before) is not lost, so the user can see and undo it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import SRC
from hermes_world import PLUGIN_KEY, call, found, plugin_module, session_rows

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
