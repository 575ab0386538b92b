"""Simultaneous moves of one session, through Hermes's real dispatch, in fresh homes.

Two callers move the same session to two different projects at the same
moment, on the profile's very first move (no ``recall.db`` yet), as threads
of one Hermes process and as two Hermes processes. Afterwards the plugin's
record and the cwd Hermes saved must name the same project, and the moves
must have happened one after the other: the later one starts from where the
earlier one left the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import SRC, sizes
from hermes_world import PLUGIN_KEY, World, call, enable_plugin, session_rows, store_state

MOVE = "project_session_move"


def fresh_home(root: Path) -> dict:
    """Alpha, Beta and Gamma, a session working in Alpha, and the plugin loaded; nothing moved yet."""
    home, work = root / "hermes", root / "work"
    folders = {name: work / name.lower() for name in ("Alpha", "Beta", "Gamma")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    home.mkdir()
    os.environ["HERMES_HOME"] = str(home)
    world = World(home)
    try:
        ids = {world.project(name, folder): folder for name, folder in folders.items()}
        sid = world.session(("user", "which project is this?"), cwd=folders["Alpha"], title="contested")
    finally:
        world.close()
    enable_plugin(home)
    assert not (home / PLUGIN_KEY / "recall.db").exists()
    return {"home": home, "sid": sid, "folder_of": {pid: str(folder) for pid, folder in ids.items()},
            "id_of": {name: pid for pid, name in zip(ids, folders, strict=True)}}


def assert_serialised(case: dict, results: list[dict]) -> None:
    """Both stores agree, and the two moves ran one after the other."""
    home, sid = case["home"], case["sid"]
    store = store_state(home)
    recorded = {row[0]: row[1] for row in store["records"]}
    cwd = session_rows(home)[sid]["cwd"]
    assert case["folder_of"][recorded[sid]] == cwd, (recorded, cwd, results)
    assert all(r["success"] and r["moved"] for r in results), results
    first, last = sorted(results, key=lambda r: r["previous_project"]["id"] != case["id_of"]["Alpha"])
    # The later move saw the earlier one's outcome (not a plan made before it)…
    assert first["previous_project"]["id"] == case["id_of"]["Alpha"], results
    assert last["previous_project"]["id"] == first["project"]["id"], results
    assert last["previous_cwd"] == first["cwd"], results
    # …and what both stores say is the later move.
    assert recorded[sid] == last["project"]["id"] and cwd == last["cwd"]
    log = [(row[1], row[3]) for row in store["moves"]]  # (session_id, project_id) in commit order
    assert log == [(sid, first["project"]["id"]), (sid, last["project"]["id"])], log


@pytest.mark.parametrize("homes", sizes("PHR_RACE_HOMES", full=24, quick=6))
def test_two_threads_moving_one_session_on_the_first_move(tmp_path, monkeypatch, homes):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))  # restored after the test; each home sets its own
    for n in range(homes):
        case = fresh_home(tmp_path / f"h{n}")
        gate = threading.Barrier(2)
        results: list[dict] = []

        # This home's gate and results, bound now: a thread that outlived its
        # join must not reach the next home's.
        def move(target: str, gate: threading.Barrier = gate, results: list[dict] = results,
                 sid: str = case["sid"]) -> None:
            gate.wait(30)
            results.append(call(MOVE, {"project": target, "session": sid}))

        threads = [threading.Thread(target=move, args=(t,)) for t in ("Beta", "Gamma")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(results) == 2, f"home {n}: a move did not return"
        assert_serialised(case, results)


# Each child loads the plugin once, then for every home waits until the other
# child is ready too (files as a two-party barrier), and moves.
CHILD = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    import model_tools
    from hermes_cli import plugins
    me, other, target, sync = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    plan = json.loads(sys.argv[5])
    plugins.discover_plugins(force=True)
    for n, (home, sid) in enumerate(plan):
        os.environ["HERMES_HOME"] = home
        (sync / f"{n}.{me}").touch()
        deadline = time.monotonic() + 120
        while not (sync / f"{n}.{other}").exists() and time.monotonic() < deadline:
            time.sleep(0.0005)
        raw = model_tools.handle_function_call("project_session_move", {"project": target, "session": sid})
        print(json.dumps(json.loads(raw)), flush=True)
""")


@pytest.mark.parametrize("homes", sizes("PHR_RACE_PROCESS_HOMES", full=12, quick=4))
def test_two_processes_moving_one_session_on_the_first_move(tmp_path, monkeypatch, homes):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    cases = [fresh_home(tmp_path / f"h{n}") for n in range(homes)]
    sync = tmp_path / "sync"
    sync.mkdir()
    plan = json.dumps([[str(c["home"]), c["sid"]] for c in cases])
    env = dict(os.environ, HERMES_HOME=str(cases[0]["home"]), PYTHONPATH=str(SRC))
    children = [subprocess.Popen([sys.executable, "-c", CHILD, me, other, target, str(sync), plan], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for me, other, target in (("b", "g", "Beta"), ("g", "b", "Gamma"))]
    outputs = [child.communicate(timeout=600) for child in children]
    for child, (_out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err[-3000:]
    answers = [[json.loads(line) for line in out.splitlines() if line.startswith("{")] for out, _err in outputs]
    assert [len(a) for a in answers] == [homes, homes]
    for case, beta, gamma in zip(cases, *answers, strict=True):
        assert_serialised(case, [beta, gamma])


HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from project_history_recall.files.locks import FileLock
    lock = FileLock(Path(sys.argv[1]))
    lock.acquire()
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
    lock.release()
""")


def test_a_move_waits_for_the_lock_and_gives_up_without_changing_anything(world, work, monkeypatch):
    from hermes_world import plugin_module

    for name in ("app", "other"):
        (work / name).mkdir()
    world.project("App", work / "app")
    other = world.project("Other", work / "other")
    sid = world.session(("user", "hello"), cwd=work / "app")
    world.close()
    enable_plugin(world.home)
    records = plugin_module("scope.records")
    lock_file = world.home / PLUGIN_KEY / records.LOCK_NAME
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock_file)], env=dict(os.environ, PYTHONPATH=str(SRC)),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(records, "MOVE_WAIT_SECONDS", 0.5)
        res = call(MOVE, {"project": "Other", "session": sid})
        assert res["success"] is False and res["error_code"] == "locked", res
        assert "nothing was changed" in res["error"]
        assert session_rows(world.home)[sid]["cwd"] == str(work / "app")
        assert not (world.home / PLUGIN_KEY / "recall.db").exists()
    finally:
        holder.stdin.close()
        holder.wait(60)
    assert holder.returncode == 0
    res = call(MOVE, {"project": "Other", "session": sid})
    assert res["moved"] and res["project"]["id"] == other, res
