"""The Hermes home, its state.db or the plugin's data folder deleted or renamed while Hermes runs
(a profile removed or renamed, a user's ``rm -rf`` of the plugin's folder to reset it), with the
background indexers holding work for it: they give it up and go idle, a search says what is
missing, and nothing is made again in a home that is gone."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import shutil
import threading

import pytest

from hermes_world import PLUGIN_KEY, background_workers, call, enable_plugin, plugin_module, plugin_settings, websocket_app

SEARCH = "project_history_search"
LONG = 60  # seconds: a bound for waits that end as soon as the workers have given up their work


def _import_all() -> None:
    """Import every module of the plugin as Hermes loaded it: a directory install's code lives in
    the home, and goes with it."""
    package = plugin_module("warmup").__name__.rpartition(".")[0]
    for found in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
        importlib.import_module(found.name)


def _queued(world, work, monkeypatch) -> tuple[str, threading.Event, list]:
    """Project App indexed by both indexes, then more sessions, handed to both background workers by
    a search that waits for neither; each worker is held at its first item until the gate opens.
    (the asker, the gate, the workers)."""
    app, asker = websocket_app(world, work)
    enable_plugin(world.home)
    _import_all()
    first = call(SEARCH, {"query": "websocket"}, session_id=asker)
    assert first["semantic_status"] == "ready", first  # the model loaded, the scope indexed
    for n in range(6):
        world.session(("user", f"question {n} about the websocket backoff"), ("assistant", f"answer {n}"), cwd=app)
    world.close()
    plugin_settings(world.home, index_budget_ms=0)
    gate, workers = threading.Event(), []
    textindex, indexer = plugin_module("keyword.textindex"), plugin_module("semantic.indexer")
    monkeypatch.setattr(textindex, "INLINE_ROWS", 0)  # the keyword index's catch-up goes to its thread too
    for cls, name in ((textindex.Keeper, "_index"), (indexer.Indexer, "process")):
        real = getattr(cls, name)

        def held(self, *args, _real=real, **kw):
            assert gate.wait(LONG)
            return _real(self, *args, **kw)

        monkeypatch.setattr(cls, name, held)
    second = call(SEARCH, {"query": "websocket"}, session_id=asker)
    assert second["success"] and second["semantic_status"] in ("indexing", "partial"), second
    workers = [textindex.keeper(world.home), *plugin_module("semantic.kept").of(world.home).indexers()]
    assert len(workers) == 2 and not any(w.wait_idle(0) for w in workers)
    return asker, gate, workers


def _files(path) -> list[str] | None:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else None


def _ours_of(files: list[str] | None) -> list[str]:
    """Of a home's ``files``, the plugin's data folder and Hermes's session database."""
    return [f for f in files or [] if f.split("/")[0] == PLUGIN_KEY or f.startswith("state.db")]


def _ours(home) -> list[str]:
    return _ours_of(_files(home))


@pytest.mark.parametrize("event", ["home deleted", "home renamed", "state.db deleted", "data folder deleted"])
def test_the_workers_give_up_what_a_gone_home_held(world, work, tmp_path, monkeypatch, caplog, event):
    asker, gate, workers = _queued(world, work, monkeypatch)
    home, aside = world.home, tmp_path / "renamed"
    if event == "home deleted":
        shutil.rmtree(home)
    elif event == "home renamed":
        home.rename(aside)
    elif event == "data folder deleted":  # to reset the plugin
        shutil.rmtree(home / PLUGIN_KEY)
    else:
        for suffix in ("", "-wal", "-shm"):
            (home / f"state.db{suffix}").unlink(missing_ok=True)
    left = _files(home)
    caplog.set_level(logging.WARNING)
    gate.set()
    # Before, the semantic indexer (and, state.db alone gone, the keyword index's) tried its item
    # again every half second for as long as Hermes ran, a warning each time, never idle.
    for worker in workers:
        assert worker.wait_idle(LONG), f"{type(worker).__name__} still busy with a home that is gone"
    if event == "data folder deleted":  # built again from state.db, as on a first run
        assert call(SEARCH, {"query": "websocket backoff"}, session_id=asker)["success"]
        for worker in [*workers, *(w for where, w in background_workers() if where.absolute() == home.absolute())]:
            assert worker.wait_idle(LONG)
        res = call(SEARCH, {"query": "websocket backoff", "mode": "hybrid"}, session_id=asker)
        assert res["success"] and res["semantic_status"] == "ready" and len(res["results"]) >= 6, res
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
        return
    res = call(SEARCH, {"query": "websocket"}, session_id=asker)
    assert res["success"] is False and res["error_code"] == "missing", res
    assert "state.db" in res["error"] and "Traceback" not in res["error"]
    # A home that is gone is said to be, not asked whether Hermes has run there yet (Hermes 0.22's
    # dispatch has made the home anew by then, and there that question is the right one).
    assert ("There is no folder" in res["error"]) is (not home.exists()), res["error"]
    # Nothing of the plugin's made again where it is gone (Hermes 0.22's dispatch itself makes a
    # deleted home anew, as on a first run: SOUL.md, logs/, cron/, ...).
    assert _ours(home) == _ours_of(left), _files(home)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    if event == "home renamed":  # renamed back: searches pick up where they were
        if home.exists():
            shutil.rmtree(home)  # Hermes 0.22's first-run skeleton, made in the meantime
        aside.rename(home)
        plugin_settings(home)
        back = call(SEARCH, {"query": "websocket backoff", "mode": "hybrid"}, session_id=asker)
        assert back["success"] and back["semantic_status"] == "ready" and len(back["results"]) >= 6, back
