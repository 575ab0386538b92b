"""The three edges (the tools, the command line, ``/recall``) answer a bug the same way: one line,
the ``internal`` error, the configured key scrubbed from the answer and from the log."""

from __future__ import annotations

import json
import logging
import os

import pytest

from hermes_world import call, enable_plugin, plugin_module, plugin_settings

KEY = "sk-phr-edge-4Tq9Wm2Lx7Vd1Rk8"
# A bug whose message carries the key (a request's headers, say), over two lines.
BUG = RuntimeError(f"service said no to Authorization: Bearer {KEY}\nwhile resolving the scope")
SHOWN = "Internal error: RuntimeError: service said no to Authorization: Bearer [redacted] while resolving the scope"


@pytest.fixture
def broken(world, work, monkeypatch):
    """A project with history, a remote embedder's key in ``.env``, and scope resolution that
    raises, in the plugin Hermes loaded and in the package the standalone CLI imports."""
    app = work / "app"
    app.mkdir()
    world.project("App", app)
    world.session(("user", "websocket reconnect keeps failing"), cwd=app)
    me = world.session(cwd=app)
    (world.home / ".env").write_text(f"PHR_EDGE_KEY={KEY}\n", encoding="utf-8")
    plugin_settings(world.home, embedder="openai",
                    openai={"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "PHR_EDGE_KEY"})
    enable_plugin(world.home)

    def resolve_scope(*args, **kw):
        raise BUG

    from project_history_recall import search as standalone

    for module in (plugin_module("search"), standalone):
        monkeypatch.setattr(module, "resolve_scope", resolve_scope)
    monkeypatch.setenv("HERMES_SESSION_ID", me)
    return {"home": world.home, "app": app, "me": me}


def logged(caplog) -> str:
    return "\n".join(caplog.handler.format(r) for r in caplog.records)


def test_recall_through_hermes_prints_one_scrubbed_line(broken, monkeypatch, caplog):
    # Importing Hermes's chat exports TERMINAL_CWD (this test's folder) and the rest of its terminal
    # settings into os.environ for good: every later test in this process would search from here.
    environ = dict(os.environ)
    import cli as hermes_cli

    os.environ.clear()
    os.environ.update(environ)
    printed = []
    monkeypatch.setattr(hermes_cli, "_cprint", printed.append)
    # Hermes's chat, for its command dispatch only: no model, no terminal, no quick commands.
    chat = hermes_cli.HermesCLI.__new__(hermes_cli.HermesCLI)
    chat.config = {}
    with caplog.at_level(logging.ERROR):
        assert chat.process_command("/recall websocket") is not False

    assert printed == [f"recall: {SHOWN}"]
    assert "Traceback" in logged(caplog) and "RuntimeError" in logged(caplog)
    assert KEY not in logged(caplog) and KEY[:12] not in logged(caplog)


def test_tool_and_cli_give_the_same_answer(broken, capsys, caplog):
    from project_history_recall.ui import cli

    with caplog.at_level(logging.ERROR):
        res = call("project_history_search", {"query": "websocket"}, session_id=broken["me"])
        assert res == {"success": False, "error": SHOWN, "error_code": "internal", "outcome": "internal"}

        argv = ["--home", str(broken["home"]), "search", "websocket", "--dir", str(broken["app"])]
        assert cli.main(argv) == 3
        out, err = capsys.readouterr()
        assert (out, err) == ("", f"project-history-recall: {SHOWN}\n")
        assert cli.main([*argv, "--json"]) == 3
        assert json.loads(capsys.readouterr().out) == res

    assert len([r for r in caplog.records if "RuntimeError" in caplog.handler.format(r)]) == 3
    assert KEY not in logged(caplog)
