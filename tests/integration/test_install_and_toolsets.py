"""Both install paths, which toolsets end up offering the tools, and the CLI, with the real Hermes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing

import pytest

from cli_runs import HERMES_BIN, cli_process
from hermes_world import PLUGIN_KEY, World, call, enable_plugin, only_on, plugin_module, plugin_settings

OUR_TOOLS = {"project_history_search", "project_session_move"}
PLATFORMS = ("cli", "telegram", "discord", "slack", "cron")


def _tools_per_surface() -> dict[str, set[str]]:
    """Tool names each surface would offer the model, resolved by Hermes itself."""
    from hermes_cli.config import load_config
    from hermes_cli.tools_config import _get_platform_tools
    from tui_gateway.server import _load_enabled_toolsets

    cfg = load_config()
    out = {p: _resolved(_get_platform_tools(cfg, p)) for p in PLATFORMS}
    out["tui/desktop"] = _resolved(_load_enabled_toolsets() or [])
    return out


def _resolved(toolsets) -> set[str]:
    from toolsets import resolve_toolset

    return set().union(*(resolve_toolset(name) for name in toolsets))


@only_on((0, 19), "the TUI/desktop toolsets come from tui_gateway.server, which on the 0.22 line needs "
                  "Python 3.14 to import")
def test_toolsets_without_and_with_the_plugin(home):
    from hermes_cli import plugins

    (home / "config.yaml").write_text("plugins:\n  enabled: []\n", encoding="utf-8")
    plugins._plugin_manager = None
    plugins.discover_plugins(force=True)
    import tools.registry as reg

    # The registry is process-wide; drop our tools if an earlier test registered them.
    for name in OUR_TOOLS:
        reg.registry._tools.pop(name, None)
    without = _tools_per_surface()
    assert not (OUR_TOOLS & set().union(*without.values()))

    (home / "config.yaml").unlink()
    enable_plugin(home)
    with_plugin = _tools_per_surface()
    # (a) the GUI surfaces get our tools with no extra configuration…
    assert OUR_TOOLS <= with_plugin["tui/desktop"]
    # (b) …and no other tool changes anywhere (core project_* tools stay GUI-only).
    for surface in without:
        assert with_plugin[surface] - OUR_TOOLS == without[surface], surface
    assert "project_list" not in with_plugin["cli"] and "project_list" in with_plugin["tui/desktop"]


def test_cli_users_switch_the_toolset_with_one_command(home):
    enable_plugin(home)
    env = dict(os.environ, HERMES_HOME=str(home))
    assert OUR_TOOLS <= _fresh_cli_tools(env)
    done = subprocess.run([str(HERMES_BIN), "tools", "disable", "project_history", "--platform", "cli"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    from hermes_cli import config as hconfig

    hconfig._config_cache = None if hasattr(hconfig, "_config_cache") else None
    assert not OUR_TOOLS & _fresh_cli_tools(env)
    done = subprocess.run([str(HERMES_BIN), "tools", "enable", "project_history", "--platform", "cli"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert OUR_TOOLS <= _fresh_cli_tools(env)


def _fresh_cli_tools(env) -> set[str]:
    """The CLI's tools as a new Hermes process resolves them."""
    code = textwrap.dedent("""
        import json
        from hermes_cli.plugins import discover_plugins
        from hermes_cli.config import load_config
        from hermes_cli.tools_config import _get_platform_tools
        from toolsets import resolve_toolset
        discover_plugins()
        print(json.dumps(sorted({t for ts in _get_platform_tools(load_config(), "cli") for t in resolve_toolset(ts)})))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_directory_install_loads_and_dispatches(home, work):
    entry = enable_plugin(home, directory_install=True)
    assert entry["source"] == "user"
    from tools.registry import registry

    # Hermes's copy of the folder, not the checkout (0.22 adds a suffix naming the home).
    module = registry.get_entry("project_history_search").handler.__module__
    assert module.startswith("hermes_plugins.project_history_recall") and module.endswith(".ui.tools"), module
    assert registry.get_toolset_for_tool("project_history_search") == "project_history"
    w = World(home)
    (work / "d").mkdir()
    w.project("D", work / "d")
    w.session(("user", "directory install websocket"), cwd=work / "d")
    asker = w.session(cwd=work / "d")
    w.close()
    res = call("project_history_search", {"query": "websocket"}, session_id=asker)
    assert res["success"] and res["results"]


@only_on((0, 22), "0.22 imports a directory install anew at each forced rediscovery and unloads the copy it replaces")
def test_a_copy_hermes_replaces_lets_go_of_its_model_and_homes(world, home, work):
    """A gateway that installs or enables any plugin while it runs rediscovers them all; the copy of
    ours it replaced kept its model, vectors and indexes in memory for good (about 50 MB each time)."""
    import sys

    from hermes_cli import plugins

    (work / "d").mkdir()
    world.project("D", work / "d")
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=work / "d")
    asker = world.session(cwd=work / "d")
    enable_plugin(home)
    for round in range(3):
        res = call("project_history_search", {"query": "websocket", "mode": "hybrid"}, session_id=asker)
        assert res["success"] and res["semantic_status"] == "ready" and res["results"], res
        package = sys.modules[plugin_module("home").__name__.removesuffix(".home")]
        held = (package.home.Home, sys.modules[f"{package.__name__}.semantic.embedders"])
        assert held[0].every() and held[1]._cache
        plugins.discover_plugins(force=True)
        assert plugin_module("home").Home is not held[0], "Hermes did not import the plugin anew"
        assert not held[0].every() and not held[1]._cache, f"round {round}: the replaced copy keeps what it held"



@only_on((0, 22), "0.22 imports a directory install anew at each forced rediscovery and unloads the copy it replaces")
def test_a_model_that_finishes_loading_after_its_copy_was_replaced_is_not_kept(world, home, work, monkeypatch):
    """The first search starts the model loading in a thread; a plugin installed meanwhile makes Hermes
    replace our copy, which lets go of its models. The load finished after that, and the replaced copy
    kept the model in memory for good. Now a load that ends after its copy let go keeps nothing. The
    load is held until the copy is replaced, and the test waits for its thread to end, not for a time."""
    import threading

    from hermes_cli import plugins

    (work / "d").mkdir()
    world.project("D", work / "d")
    world.session(("user", "the websocket reconnect loop is flaky"), cwd=work / "d")
    asker = world.session(cwd=work / "d")
    plugin_settings(home, index_budget_ms=0)  # the search waits for nothing: the model is still loading
    enable_plugin(home)
    old = plugin_module("semantic.embedders")
    build, released, loaders = old._build, threading.Event(), []

    def held(settings):
        loaders.append(threading.current_thread())
        released.wait()
        return build(settings)

    monkeypatch.setattr(old, "_build", held)
    try:
        res = call("project_history_search", {"query": "websocket", "mode": "hybrid"}, session_id=asker)
        assert res["success"] and res["semantic_status"] == "indexing" and res["results"], res
        assert len(loaders) == 1 and loaders[0].is_alive()
        plugins.discover_plugins(force=True)
        assert plugin_module("semantic.embedders") is not old, "Hermes did not import the plugin anew"
    finally:
        released.set()
    loaders[0].join()
    assert not old._cache and not old._failures and not old._loading, "the replaced copy keeps the model"


def test_pip_install_loads_through_the_entry_point(installed, tmp_path):
    hermes_home = tmp_path / "pip-home"
    hermes_home.mkdir()
    work = tmp_path / "w"
    work.mkdir()
    script = textwrap.dedent(f"""
        import json, sys
        from hermes_state import SessionDB
        from hermes_cli import plugins
        import model_tools
        db = SessionDB()
        db.create_session("20260901_000001_aaaaaa", "cli", cwd={str(work)!r})
        db.append_message("20260901_000001_aaaaaa", "user", "pip installed websocket")
        db.create_session("20260901_000002_bbbbbb", "cli", cwd={str(work)!r})
        db.close()
        plugins.discover_plugins(force=True)
        entry = [p for p in plugins.get_plugin_manager().list_plugins() if p["key"] == {PLUGIN_KEY!r}][0]
        import project_history_recall
        res = json.loads(model_tools.handle_function_call("project_history_search", {{"query": "websocket"}},
                                                          session_id="20260901_000002_bbbbbb"))
        print(json.dumps({{"entry": entry, "module": project_history_recall.__file__, "res": res}}))
    """)
    (hermes_home / "config.yaml").write_text(f"plugins:\n  enabled: [{PLUGIN_KEY}]\n", encoding="utf-8")
    env = dict(os.environ, HERMES_HOME=str(hermes_home), PYTHONPATH=str(installed))
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout.strip().splitlines()[-1])
    assert payload["entry"]["source"] == "entrypoint" and payload["entry"]["enabled"] and not payload["entry"]["error"]
    assert payload["module"].startswith(str(installed))
    assert payload["res"]["success"] and payload["res"]["results"][0]["snippet"].count("websocket") == 1
    script_path = installed / "bin" / "project-history-recall"
    assert script_path.exists()
    help_out = subprocess.run([sys.executable, str(script_path), "--help"], env=env, capture_output=True,
                              text=True, timeout=60)
    assert help_out.returncode == 0 and "search" in help_out.stdout


@pytest.fixture
def cli_world(home, work):
    w = World(home)
    app = work / "app"
    (app / "src").mkdir(parents=True)
    pid = w.project("App", app)
    w.session(("user", "the websocket reconnect loop is flaky"), ("assistant", "added backoff"), cwd=app,
              title="Fix websocket")
    w.session(("user", "支付超时"), cwd=app / "src", title="中文")
    w.close()
    return {"home": home, "app": app, "pid": pid}


def test_standalone_cli_search_status_projects(cli_world):
    home, app = cli_world["home"], cli_world["app"]
    out = cli_process("search", "websocket", "--dir", str(app), home=home)
    assert out.returncode == 0, out.stderr
    assert "Fix websocket" in out.stdout and "«websocket»" in out.stdout and "@session:" in out.stdout
    out = cli_process("search", "超时", home=home, cwd=app / "src")
    assert out.returncode == 0 and "中文" in out.stdout
    js = cli_process("search", "websocket", "--dir", str(app), "--json", home=home)
    payload = json.loads(js.stdout)
    assert payload["success"] and payload["project"]["id"] == cli_world["pid"]
    nothing = cli_process("search", "zzzznotthere", "--dir", str(app), "--mode", "keyword", home=home)
    assert nothing.returncode == 1 and "Nothing found" in nothing.stdout
    status = cli_process("status", str(app / "src"), home=home)
    assert status.returncode == 0 and "App" in status.stdout and "2 sessions" in status.stdout
    assert "semantic: ready — 2/2 sessions indexed" in status.stdout, status.stdout  # the searches indexed them
    # Hermes 0.22 on an SQLite older than 3.51.3 keeps state.db out of WAL; SQLite itself says which.
    with closing(sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)) as conn:
        wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ("state.db: WAL journal" if wal else "state.db: rollback journal") in status.stdout, status.stdout
    assert json.loads(cli_process("status", str(app), "--json", home=home).stdout)["journal_mode"] == (
        "wal" if wal else "rollback")
    projects = cli_process("projects", "--json", home=home)
    listed = json.loads(projects.stdout)["projects"]
    assert {"kind": "explicit", "name": "App", "sessions": 2}.items() <= listed[0].items()


def test_cli_errors_are_one_line(home, work):
    out = cli_process("search", "x", "--dir", str(work), home=home)
    assert out.returncode == 3
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr and "state.db" in out.stderr
    bad = cli_process("search", "x", "--project", "nope", home=home)
    assert bad.returncode in (2, 3) and "Traceback" not in bad.stderr


def test_hermes_recall_subcommand(cli_world):
    home = cli_world["home"]
    enable_plugin(home)
    out = cli_process("search", "websocket", "--dir", str(cli_world["app"]), home=home, hermes=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "Fix websocket" in out.stdout
